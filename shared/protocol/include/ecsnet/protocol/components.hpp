#pragma once

#include <cmath>
#include <cstdint>
#include <string>

namespace ecsnet::protocol {

// The components the demo game replicates. Fixed-size components are aggregates with the
// fields of their FlatBuffers struct in schemas/common.fbs, in order and type (checked at
// compile time, wire_struct.hpp) and travel as vectors of those structs, copied field by field. A component may define valid(): values for which it returns
// false are rejected when decoded, from either side of the wire.

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

// The client that spawned the entity. Only the server sets it.
struct Owner {
    std::uint32_t client{};
    friend bool operator==(const Owner&, const Owner&) = default;
};

inline constexpr std::size_t max_name_bytes = 64;

// A string component: travels as a FlatBuffers string.
struct Name {
    std::string value;
    [[nodiscard]] bool valid() const noexcept { return value.size() <= max_name_bytes; }
    friend bool operator==(const Name&, const Name&) = default;
};

// Every replicated component: X(C++ type, column name in ComponentColumns, who may write it).
// Adding a component is one schema entry, one struct above and one line here
// (docs/EXTENDING.md). The order gives each type its wire id: append only.
#define ECSNET_REPLICATED_COMPONENTS(X)            \
    X(::ecsnet::protocol::Position, position, client) \
    X(::ecsnet::protocol::Velocity, velocity, client) \
    X(::ecsnet::protocol::Health, health, client)     \
    X(::ecsnet::protocol::Lifetime, lifetime, client) \
    X(::ecsnet::protocol::Owner, owner, server)       \
    X(::ecsnet::protocol::Name, name, client)

}  // namespace ecsnet::protocol
