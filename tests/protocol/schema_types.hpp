#pragma once

// Components defined only in the tests, registered the way a game registers its own.
#include <cmath>
#include <cstdint>
#include <string>

#include "ecsnet/protocol/registry.hpp"
#include "schema_types_generated.h"

namespace ecsnet::test {

struct Spot {
    float x{};
    float y{};
    friend bool operator==(const Spot&, const Spot&) = default;
};

struct Mixed {
    bool flag{};
    std::int8_t small{};
    std::uint16_t medium{};
    std::int64_t big{};
    double precise{};
    friend bool operator==(const Mixed&, const Mixed&) = default;
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

struct Label {
    std::string text;
    friend bool operator==(const Label&, const Label&) = default;
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

}  // namespace ecsnet::test

namespace ecsnet::protocol {
template <>
struct replicated<test::Spot>
    : replicate<test_wire::Spot, "spot",
                replicate_options{.quantized = {.min = 0, .max = 4096, .step = 1.0 / 64}}> {};
template <>
struct replicated<test::SpotV2>
    : replicate<test_wire::SpotV2, "spot",
                replicate_options{.quantized = {.min = 0, .max = 4096, .step = 1.0 / 64}}> {};
template <>
struct replicated<test::SpotSwapped>
    : replicate<test_wire::SpotSwapped, "spot",
                replicate_options{.quantized = {.min = 0, .max = 4096, .step = 1.0 / 64}}> {};
template <>
struct replicated<test::Mixed>
    : replicate<test_wire::Mixed, "mixed", replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<test::Secret>
    : replicate<test_wire::Secret, "secret", replicate_options{.owner_only = true}> {};
template <>
struct replicated<test::Gauge>
    : replicate<test_wire::Gauge, "gauge", replicate_options{.written_by = writer::any}> {};
template <>
struct replicated<test::Label>
    : replicate<string_value, "label", replicate_options{.max_bytes = 16}> {};
}  // namespace ecsnet::protocol

namespace ecsnet::test {

// owner (0), spot, mixed, secret, gauge, label.
inline protocol::component_registry test_registry() {
    protocol::component_registry types;
    types.add<Spot>();
    types.add<Mixed>();
    types.add<Secret>();
    types.add<Gauge>();
    types.add<Label>();
    return types;
}

}  // namespace ecsnet::test
