#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/columns.hpp"

// The world checksum, the end-to-end correctness check of replication: the server and every
// mirror compute it from their own state and compare.
//
// Definition (docs/PROTOCOL.md): the sum, modulo 2^64, of one xxHash64 term (seed 0) per live
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

}  // namespace ecsnet::protocol::checksum
