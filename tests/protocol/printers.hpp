#pragma once

// gtest printers for the replicated components, so that failures show values, not bytes.
#include <gtest/gtest.h>

#include <ostream>

#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::protocol {

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
inline void PrintTo(const Owner& v, std::ostream* out) {
    *out << "Owner{" << v.client << "}";
}
inline void PrintTo(const Name& v, std::ostream* out) {
    *out << "Name{\"" << v.value << "\"}";
}
inline void PrintTo(const component_set& set, std::ostream* out) {
    *out << "{";
    const char* sep = "";
    for_each_component([&]<typename T>() {
        if (const auto& v = set.get<T>()) {
            *out << sep << ::testing::PrintToString(*v);
            sep = ", ";
        }
    });
    *out << "}";
}

}  // namespace ecsnet::protocol
