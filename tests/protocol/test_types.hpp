#pragma once

// The component types of the protocol tests: the demo game's (games/demo), registered in the
// demo's order without linking its server-side library, and three test-only types defined
// here and in test_types.fbs only, which no other part of ecsnet knows.
#include <cstdint>
#include <string>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "test_types_generated.h"

namespace ecsnet::testing {

inline constexpr double spot_step = 1.0 / 64.0;
inline constexpr double spot_max = 4096.0;

// Quantized: 1/64 over [0, 4096], 19 bits a field, 38 bits a value (5 canonical bytes).
struct Spot {
    float x{};
    float y{};
    friend bool operator==(const Spot&, const Spot&) = default;
};

// Every other kind of field, with padding in the component and in its FlatBuffers struct.
struct Mixed {
    bool flag{};
    std::int8_t small{};
    std::uint16_t medium{};
    std::int64_t big{};
    double real{};
    friend bool operator==(const Mixed&, const Mixed&) = default;
};

inline constexpr std::uint32_t max_tag_bytes = 16;

// A short string, written by any client.
struct Tag {
    std::string text;
    friend bool operator==(const Tag&, const Tag&) = default;
};

// A marker: its presence is all it says (marker_value on the wire).
struct Frozen {
    friend bool operator==(const Frozen&, const Frozen&) = default;
};

// Replicated to its owner only.
struct Secret {
    std::uint32_t code{};
    friend bool operator==(const Secret&, const Secret&) = default;
};

// Any client may set it, on any entity; never negative.
struct Gauge {
    float level{};
    [[nodiscard]] bool valid() const noexcept { return level >= 0.0F; }
    friend bool operator==(const Gauge&, const Gauge&) = default;
};

// Spot in a later release (a field added at the end) and reordered: both named "spot".
struct SpotV2 {
    float x{};
    float y{};
    std::int32_t floor{};
};
struct SpotSwapped {
    float y{};
    float x{};
};

// A player input: an analog stick and buttons; valid() refuses buttons past the fourth.
inline constexpr double stick_step = 1.0 / 128.0;
struct Stick {
    float x{};
    float y{};
    std::uint8_t buttons{};
    [[nodiscard]] bool valid() const noexcept { return buttons < 16; }
    friend bool operator==(const Stick&, const Stick&) = default;
};

// Interpolated by clients: plain floats, an integer, a bool; and quantized floats.
struct Glide {
    float x{};
    float y{};
    std::int32_t frame{};
    bool lit{};
    friend bool operator==(const Glide&, const Glide&) = default;
};
inline constexpr double drift_step = 1.0 / 64.0;
struct Drift {
    float x{};
    float y{};
    friend bool operator==(const Drift&, const Drift&) = default;
};

}  // namespace ecsnet::testing

namespace ecsnet::protocol {
template <>
struct replicated<testing::Glide>
    : replicate<testing::wire::Glide, "glide", replicate_options{.interpolate = true}> {};
template <>
struct replicated<testing::Drift>
    : replicate<testing::wire::Drift, "drift",
                replicate_options{.quantized = {.min = 0.0, .max = 4096.0, .step = testing::drift_step},
                                  .interpolate = true}> {};
template <>
struct replicated<testing::Stick>
    : replicate<testing::wire::Stick, "stick",
                replicate_options{.quantized = {.min = -1.0, .max = 1.0, .step = testing::stick_step},
                                  .input = true}> {};
template <>
struct replicated<testing::Spot>
    : replicate<testing::wire::Spot, "spot",
                replicate_options{.quantized = {.min = 0.0,
                                                .max = testing::spot_max,
                                                .step = testing::spot_step}}> {};
template <>
struct replicated<testing::Mixed>
    : replicate<testing::wire::Mixed, "mixed", replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<testing::Secret>
    : replicate<testing::wire::Secret, "secret", replicate_options{.owner_only = true}> {};
template <>
struct replicated<testing::Gauge>
    : replicate<testing::wire::Gauge, "gauge", replicate_options{.written_by = writer::any}> {};
template <>
struct replicated<testing::SpotV2>
    : replicate<testing::wire::SpotV2, "spot",
                replicate_options{.quantized = {.min = 0.0,
                                                .max = testing::spot_max,
                                                .step = testing::spot_step}}> {};
template <>
struct replicated<testing::SpotSwapped>
    : replicate<testing::wire::SpotSwapped, "spot",
                replicate_options{.quantized = {.min = 0.0,
                                                .max = testing::spot_max,
                                                .step = testing::spot_step}}> {};
template <>
struct replicated<testing::Frozen>
    : replicate<marker_value, "frozen", replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<testing::Tag>
    : replicate<string_value, "tag",
                replicate_options{.written_by = writer::any, .max_bytes = testing::max_tag_bytes}> {};
}  // namespace ecsnet::protocol

namespace ecsnet::testing {

// Wire ids of the registries below.
namespace ids {
inline constexpr std::uint16_t owner = 0;
inline constexpr std::uint16_t position = 1;
inline constexpr std::uint16_t velocity = 2;
inline constexpr std::uint16_t health = 3;
inline constexpr std::uint16_t lifetime = 4;
inline constexpr std::uint16_t name = 5;
inline constexpr std::uint16_t spot = 6;
inline constexpr std::uint16_t mixed = 7;
inline constexpr std::uint16_t tag = 8;
}  // namespace ids

// The demo game's types as ecsnet-server registers them (demo::register_components), so that
// wire ids match the server's.
inline void add_demo_types(protocol::component_registry& types) {
    types.add<demo::Position>();
    types.add<demo::Velocity>();
    types.add<demo::Health>();
    types.add<demo::Lifetime>();
    types.add<demo::Name>();
}

[[nodiscard]] inline protocol::component_registry demo_types() {
    protocol::component_registry types;
    add_demo_types(types);
    return types;
}

// The demo's types, then the test-only ones.
[[nodiscard]] inline protocol::component_registry test_types() {
    protocol::component_registry types;
    add_demo_types(types);
    types.add<Spot>();
    types.add<Mixed>();
    types.add<Tag>();
    return types;
}

// test_types() and the input type Stick (wire id 9), for the input tests.
[[nodiscard]] inline protocol::component_registry input_types() {
    protocol::component_registry types = test_types();
    types.add<Stick>();
    return types;
}

// Interpolated types: owner (0), glide (1), drift (2), spot (3, not interpolated).
[[nodiscard]] inline protocol::component_registry motion_types() {
    protocol::component_registry types;
    types.add<Glide>();
    types.add<Drift>();
    types.add<Spot>();
    return types;
}

// Test-only types alone, for the component-model tests: owner (0), spot (1), mixed (2),
// secret (3, owner-only), gauge (4, any writer, valid() refuses negatives), tag (5).
[[nodiscard]] inline protocol::component_registry model_types() {
    protocol::component_registry types;
    types.add<Spot>();
    types.add<Mixed>();
    types.add<Secret>();
    types.add<Gauge>();
    types.add<Tag>();
    return types;
}

}  // namespace ecsnet::testing

namespace ecsnet::testing {

// fn.template operator()<T>() for every type test_types() registers, in wire id order.
template <typename Fn>
void for_each_test_type(Fn&& fn) {
    fn.template operator()<protocol::Owner>();
    fn.template operator()<demo::Position>();
    fn.template operator()<demo::Velocity>();
    fn.template operator()<demo::Health>();
    fn.template operator()<demo::Lifetime>();
    fn.template operator()<demo::Name>();
    fn.template operator()<Spot>();
    fn.template operator()<Mixed>();
    fn.template operator()<Tag>();
}

}  // namespace ecsnet::testing
