#pragma once

#include <cstdint>

#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/wire/common_generated.h"

// The core's own replicated component. Everything else a game registers (docs/EXTENDING.md).
namespace ecsnet::protocol {

// The client that spawned the entity, set by the server only: ownership checks, quotas and
// "despawn on disconnect" follow it.
struct Owner {
    std::uint32_t client{};
    friend bool operator==(const Owner&, const Owner&) = default;
};

// Owner's wire id on every server: the registry adds it first (registry.hpp).
inline constexpr std::uint32_t owner_wire_id = 0;

template <>
struct replicated<Owner> : replicate<wire::Owner, "owner", replicate_options{.written_by = writer::server}> {};

}  // namespace ecsnet::protocol
