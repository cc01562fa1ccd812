// A component the game keeps (persist<>) without replicating it, and the same type as a later
// release of the game has it (a field added): shared by the persistence suites.
#pragma once

#include <cstdint>

#include "ecsnet/protocol/registry.hpp"

namespace ecsnet::test {

struct Hunger {
    float level{};
    std::uint32_t meals{};
    friend bool operator==(const Hunger&, const Hunger&) = default;
};

struct HungerV2 {
    float level{};
    std::uint32_t meals{};
    std::int32_t mood{};
    friend bool operator==(const HungerV2&, const HungerV2&) = default;
};

}  // namespace ecsnet::test

namespace ecsnet::protocol {
template <>
struct persistent<test::Hunger> : persist<"hunger"> {};
template <>
struct persistent<test::HungerV2> : persist<"hunger"> {};
}  // namespace ecsnet::protocol
