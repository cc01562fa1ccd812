#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "ecsnet/ecs/entity.hpp"

// The terms the world checksum adds up (checksum.hpp; docs/PROTOCOL.md, "Checksum").
namespace ecsnet::protocol::checksum {

static_assert(std::endian::native == std::endian::little,
              "the checksum hashes native u32 words as their little-endian wire bytes");

[[nodiscard]] std::uint64_t hash_bytes(std::span<const std::byte> bytes) noexcept;
[[nodiscard]] std::uint64_t hash_parts(std::span<const std::byte> head,
                                       std::span<const std::byte> value) noexcept;

// XXH3-64 of index|version.
[[nodiscard]] inline std::uint64_t entity_term(std::uint32_t index, std::uint32_t version) noexcept {
    const std::array<std::uint32_t, 2> words{index, version};
    return hash_bytes(std::as_bytes(std::span{words}));
}

// XXH3-64 of wire_id|index|version|value, the value as its canonical bytes (or UTF-8 text).
[[nodiscard]] inline std::uint64_t component_term(std::uint32_t wire_id, std::uint32_t index,
                                                  std::uint32_t version,
                                                  std::span<const std::byte> value) noexcept {
    const std::array<std::uint32_t, 3> head{wire_id, index, version};
    return hash_parts(std::as_bytes(std::span{head}), value);
}

// Sum of the component terms of `entities`, whose values are the canonical bytes in `values`
// (value_bytes each, back to back): one pass, the common sizes hashed at a size known at
// compile time (XXH3's fixed-length path, about 3x faster than a general call).
[[nodiscard]] std::uint64_t sum_terms(std::uint32_t wire_id, std::span<const ecs::Entity> entities,
                                      std::span<const std::byte> values,
                                      std::size_t value_bytes) noexcept;

}  // namespace ecsnet::protocol::checksum
