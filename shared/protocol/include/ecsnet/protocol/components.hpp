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

template <>
struct replicated<Owner> : replicate<wire::Owner, "owner", replicate_options{.written_by = writer::server}> {};

}  // namespace ecsnet::protocol
