#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "demo_generated.h"
#include "ecsnet/protocol/replicated.hpp"

// The demo game's components: each carries the fields of its struct in demo.fbs, and its
// replicated<> entry gives its wire name and who may set it. A component may define valid():
// values for which it returns false are refused when a client sends them.
namespace ecsnet::demo {

struct Position {
    float x{};
    float y{};
    [[nodiscard]] bool valid() const noexcept { return std::isfinite(x) && std::isfinite(y); }
    friend bool operator==(const Position&, const Position&) = default;
};

struct Velocity {
    float x{};
    float y{};
    [[nodiscard]] bool valid() const noexcept { return std::isfinite(x) && std::isfinite(y); }
    friend bool operator==(const Velocity&, const Velocity&) = default;
};

struct Health {
    std::int32_t value{};
    friend bool operator==(const Health&, const Health&) = default;
};

// Ticks left before the server destroys the entity.
struct Lifetime {
    std::uint32_t ticks{};
    friend bool operator==(const Lifetime&, const Lifetime&) = default;
};

inline constexpr std::size_t max_name_bytes = 64;

// A display name: a string component.
struct Name {
    std::string value;
    friend bool operator==(const Name&, const Name&) = default;
};

}  // namespace ecsnet::demo

namespace ecsnet::protocol {
template <>
struct replicated<demo::Position> : replicate<demo::wire::Position, "position"> {};
template <>
struct replicated<demo::Velocity> : replicate<demo::wire::Velocity, "velocity"> {};
template <>
struct replicated<demo::Health> : replicate<demo::wire::Health, "health"> {};
template <>
struct replicated<demo::Lifetime> : replicate<demo::wire::Lifetime, "lifetime"> {};
template <>
struct replicated<demo::Name>
    : replicate<string_value, "name", replicate_options{.max_bytes = demo::max_name_bytes}> {};
}  // namespace ecsnet::protocol
