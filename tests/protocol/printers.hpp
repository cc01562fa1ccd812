#pragma once

// gtest printers for the replicated components, so that failures show values, not bytes.
#include <gtest/gtest.h>

#include <cstddef>
#include <ostream>

#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "test_types.hpp"

namespace ecsnet::demo {

// Readable failure output for the values the tests compare.
inline void PrintTo(const Position& v, std::ostream* out) {
    *out << "Position{" << v.x << ", " << v.y << "}";
}
inline void PrintTo(const Velocity& v, std::ostream* out) {
    *out << "Velocity{" << v.x << ", " << v.y << "}";
}
inline void PrintTo(const Health& v, std::ostream* out) {
    *out << "Health{" << v.value << "}";
}
inline void PrintTo(const Lifetime& v, std::ostream* out) {
    *out << "Lifetime{" << v.ticks << "}";
}
inline void PrintTo(const Name& v, std::ostream* out) {
    *out << "Name{\"" << v.value << "\"}";
}

}  // namespace ecsnet::demo

namespace ecsnet::testing {

inline void PrintTo(const Spot& v, std::ostream* out) {
    *out << "Spot{" << v.x << ", " << v.y << "}";
}
inline void PrintTo(const Mixed& v, std::ostream* out) {
    *out << "Mixed{" << v.flag << ", " << int{v.small} << ", " << v.medium << ", " << v.big
         << ", " << v.real << "}";
}
inline void PrintTo(const Tag& v, std::ostream* out) {
    *out << "Tag{\"" << v.text << "\"}";
}

}  // namespace ecsnet::testing

namespace ecsnet::protocol {

inline void PrintTo(const Owner& v, std::ostream* out) {
    *out << "Owner{" << v.client << "}";
}
// By name: text, or the canonical bytes in hex.
inline void PrintTo(const component_value& v, std::ostream* out) {
    *out << v.name << "=";
    if (v.bytes.empty()) {
        *out << "\"" << v.text << "\"";
        return;
    }
    static constexpr char digits[] = "0123456789abcdef";
    for (const std::byte b : v.bytes) {
        *out << digits[std::to_integer<unsigned>(b) >> 4U] << digits[std::to_integer<unsigned>(b) & 15U];
    }
}
inline void PrintTo(const component_set& set, std::ostream* out) {
    *out << "{";
    const char* sep = "";
    for (const component_value& v : set.values()) {
        *out << sep;
        PrintTo(v, out);
        sep = ", ";
    }
    *out << "}";
}

}  // namespace ecsnet::protocol
