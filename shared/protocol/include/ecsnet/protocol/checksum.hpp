#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <algorithm>
#include <span>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/columns.hpp"

// The world checksum, the end-to-end correctness check of replication: the server and every
// mirror compute it from their own state and compare.
//
// Definition (docs/PROTOCOL.md): the sum, modulo 2^64, of one XXH3-64 term (seed 0) per live
// entity over the 8 bytes index|version, and one term per (entity, component) over
// wire_id|index|version|value bytes (all little-endian u32; values as value_bytes()). A sum is
// order-independent, so each side can walk its own storage in any order.
namespace ecsnet::protocol::checksum {

[[nodiscard]] std::uint64_t hash_bytes(std::span<const std::byte> bytes) noexcept;
[[nodiscard]] std::uint64_t hash_parts(std::span<const std::byte> head,
                                       std::span<const std::byte> value) noexcept;

[[nodiscard]] inline std::uint64_t entity_term(std::uint32_t index, std::uint32_t version) noexcept {
    const std::array<std::uint32_t, 2> words{index, version};
    return hash_bytes(std::as_bytes(std::span{words}));
}

template <typename T>
[[nodiscard]] std::uint64_t component_term(std::uint32_t index, std::uint32_t version,
                                           const T& value) noexcept {
    const std::array<std::uint32_t, 3> head{wire_id_v<T>, index, version};
    return hash_parts(std::as_bytes(std::span{head}), value_bytes(value));
}

// Sum of the terms of every entity and replicated component in the world.
[[nodiscard]] std::uint64_t of_world(const ecs::World& world);

// Entity indices [first, end). A Checksum message covers one such range, so that a large
// world is checked a slice at a time and no tick pays for hashing all of it.
struct index_range {
    std::uint32_t first = 0;
    std::uint32_t end = std::numeric_limits<std::uint32_t>::max();

    [[nodiscard]] bool whole() const noexcept {
        return first == 0 && end == std::numeric_limits<std::uint32_t>::max();
    }
    friend bool operator==(const index_range&, const index_range&) = default;
};

struct slice_sum {
    std::uint64_t hash = 0;
    std::uint32_t entities = 0;
};

// The terms of the entities whose index is in `range` (and below `index_limit`, past which
// the caller holds none). entity_at(index) gives the live entity or null; storage_of.template
// operator()<T>() a pointer to the basic_storage of T, or null. Shared by the server's world and
// the client's mirror, so both sides compute exactly the same thing.
template <typename EntityAt, typename StorageOf>
[[nodiscard]] slice_sum of_slice(index_range range, std::size_t index_limit, EntityAt&& entity_at,
                                 StorageOf&& storage_of) {
    slice_sum out;
    const std::size_t end = std::min<std::size_t>(range.end, index_limit);
    for (std::size_t i = range.first; i < end; ++i) {
        const auto e = entity_at(static_cast<std::uint32_t>(i));
        if (e.is_null()) {
            continue;
        }
        out.hash += entity_term(e.index(), e.version());
        ++out.entities;
        for_each_component([&]<typename T>() {
            if (const auto* storage = storage_of.template operator()<T>()) {
                if (const T* value = storage->try_get(e)) {
                    out.hash += component_term(e.index(), e.version(), *value);
                }
            }
        });
    }
    return out;
}

// The slice of the world's checksum, as the server sends it.
[[nodiscard]] slice_sum of_world(const ecs::World& world, index_range range);

}  // namespace ecsnet::protocol::checksum
