#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/hash.hpp"
#include "ecsnet/protocol/registry.hpp"

// The world checksum, the end-to-end correctness check of replication: the server and every
// mirror compute it from their own state and compare.
//
// Definition (docs/PROTOCOL.md): the sum, modulo 2^64, of one XXH3-64 term (seed 0) per live
// entity over the 8 bytes index|version, and one term per (entity, component) over
// wire_id|index|version|value (little-endian u32s, then the value's canonical bytes or a
// string's UTF-8 bytes). Types replicated to their owner only are left out. A sum is
// order-independent, so each side can walk its own storage in any order.
namespace ecsnet::protocol::checksum {

// Entity indices [first, end). A Checksum message covers one such range, so that a large
// world is checked a slice at a time and no tick pays for hashing all of it.
struct index_range {
    std::uint32_t first = 0;
    std::uint32_t end = std::numeric_limits<std::uint32_t>::max();

    [[nodiscard]] bool whole() const noexcept {
        return first == 0 && end == std::numeric_limits<std::uint32_t>::max();
    }
    [[nodiscard]] bool contains(std::uint32_t index) const noexcept {
        return index >= first && index < end;
    }
    friend bool operator==(const index_range&, const index_range&) = default;
};

struct slice_sum {
    std::uint64_t hash = 0;
    std::uint32_t entities = 0;
};

// Sum of the terms of every entity and replicated component in the world.
[[nodiscard]] std::uint64_t of_world(const ecs::World& world, const component_registry& types);

// The slice of the world's checksum, as the server sends it.
[[nodiscard]] slice_sum of_world(const ecs::World& world, const component_registry& types,
                                 index_range range);

// The terms of owner-only components in `range`, summed per owner (Owner::client): a client's
// Checksum is the world's slice plus its own entry here (its mirror holds only its own).
[[nodiscard]] std::unordered_map<std::uint32_t, std::uint64_t> owner_only_terms(
    const ecs::World& world, const component_registry& types, index_range range);

// The terms of one live entity as a client's mirror holds it: the entity, each replicated
// component, and the owner-only ones when `viewer` owns it (interest management: a client's
// checksum sums the entities it holds).
[[nodiscard]] std::uint64_t of_entity(const ecs::World& world, const component_registry& types,
                                      ecs::Entity e, std::uint32_t viewer);

}  // namespace ecsnet::protocol::checksum
