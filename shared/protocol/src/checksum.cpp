#include "ecsnet/protocol/checksum.hpp"

// Inlined: a term hashes 8 to ~80 bytes, where a call and XXH3's size dispatch cost as much
// as the hashing itself.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace ecsnet::protocol::checksum {

std::uint64_t hash_bytes(std::span<const std::byte> bytes) noexcept {
    return XXH3_64bits(bytes.data(), bytes.size());
}

std::uint64_t hash_parts(std::span<const std::byte> head, std::span<const std::byte> value) noexcept {
    // Most values are small: the common case hashes one contiguous stack buffer.
    std::array<std::byte, 256> buffer;
    if (head.size() + value.size() <= buffer.size()) {
        std::memcpy(buffer.data(), head.data(), head.size());
        if (!value.empty()) {
            std::memcpy(buffer.data() + head.size(), value.data(), value.size());
        }
        return XXH3_64bits(buffer.data(), head.size() + value.size());
    }
    XXH3_state_t state;
    XXH3_64bits_reset(&state);
    XXH3_64bits_update(&state, head.data(), head.size());
    XXH3_64bits_update(&state, value.data(), value.size());
    return XXH3_64bits_digest(&state);
}

namespace {

template <std::size_t N>
std::uint64_t sum_fixed(std::uint32_t wire_id, std::span<const ecs::Entity> entities,
                        const std::byte* values) noexcept {
    std::uint64_t sum = 0;
    std::array<std::byte, 12 + N> buffer;
    for (std::size_t i = 0; i < entities.size(); ++i) {
        const std::array<std::uint32_t, 3> head{wire_id, entities[i].index(), entities[i].version()};
        std::memcpy(buffer.data(), head.data(), 12);
        std::memcpy(buffer.data() + 12, values + i * N, N);
        sum += XXH3_64bits(buffer.data(), buffer.size());
    }
    return sum;
}

}  // namespace

std::uint64_t sum_terms(std::uint32_t wire_id, std::span<const ecs::Entity> entities,
                        std::span<const std::byte> values, std::size_t value_bytes) noexcept {
    switch (value_bytes) {
        case 1: return sum_fixed<1>(wire_id, entities, values.data());
        case 2: return sum_fixed<2>(wire_id, entities, values.data());
        case 4: return sum_fixed<4>(wire_id, entities, values.data());
        case 5: return sum_fixed<5>(wire_id, entities, values.data());
        case 8: return sum_fixed<8>(wire_id, entities, values.data());
        case 12: return sum_fixed<12>(wire_id, entities, values.data());
        case 16: return sum_fixed<16>(wire_id, entities, values.data());
        default: break;
    }
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < entities.size(); ++i) {
        sum += component_term(wire_id, entities[i].index(), entities[i].version(),
                              values.subspan(i * value_bytes, value_bytes));
    }
    return sum;
}

namespace {

// One component's term for entity e, which has the type.
std::uint64_t term_of(const component_registry& types, std::uint32_t id, const ecs::World& world,
                      ecs::Entity e) {
    const component_info& info = types.info(id);
    const component_ops& ops = types.ops(id);
    if (info.is_string) {
        const std::string_view text = ops.text(world, e);
        return component_term(id, e.index(), e.version(), std::as_bytes(std::span{text}));
    }
    std::array<std::byte, max_fields * 8> value{};
    ops.pack(world, e, value.data());
    return component_term(id, e.index(), e.version(),
                          std::span<const std::byte>{value.data(), info.value_bytes()});
}

}  // namespace

std::uint64_t of_world(const ecs::World& world, const component_registry& types) {
    std::uint64_t sum = 0;
    world.each([&](ecs::Entity e) { sum += entity_term(e.index(), e.version()); });
    for (std::uint32_t id = 0; id < types.size(); ++id) {
        if (types.info(id).owner_only || !types.info(id).replicated) {
            continue;
        }
        const component_ops& ops = types.ops(id);
        if (ops.checksum != nullptr) {
            sum += ops.checksum(world, id);
            continue;
        }
        for (const ecs::Entity e : ops.entities(world)) {
            sum += term_of(types, id, world, e);
        }
    }
    return sum;
}

slice_sum of_world(const ecs::World& world, const component_registry& types, index_range range) {
    if (range.whole()) {
        return {of_world(world, types), static_cast<std::uint32_t>(world.alive())};
    }
    slice_sum out;
    const std::size_t end = std::min<std::size_t>(range.end, world.entities().slots());
    for (std::size_t i = range.first; i < end; ++i) {
        const ecs::Entity e = world.current(static_cast<std::uint32_t>(i));
        if (e.is_null()) {
            continue;
        }
        out.hash += entity_term(e.index(), e.version());
        ++out.entities;
        for (std::uint32_t id = 0; id < types.size(); ++id) {
            if (!types.info(id).owner_only && types.info(id).replicated &&
                types.ops(id).contains(world, e)) {
                out.hash += term_of(types, id, world, e);
            }
        }
    }
    return out;
}

std::unordered_map<std::uint32_t, std::uint64_t> owner_only_terms(
    const ecs::World& world, const component_registry& types, index_range range) {
    std::unordered_map<std::uint32_t, std::uint64_t> out;
    for (std::uint32_t id = 0; id < types.size(); ++id) {
        if (!types.info(id).owner_only || !types.info(id).replicated) {
            continue;
        }
        for (const ecs::Entity e : types.ops(id).entities(world)) {
            if (!range.contains(e.index())) {
                continue;
            }
            if (const Owner* owner = world.try_get<Owner>(e)) {
                out[owner->client] += term_of(types, id, world, e);
            }
        }
    }
    return out;
}

}  // namespace ecsnet::protocol::checksum

namespace ecsnet::protocol::checksum {

std::uint64_t of_entity(const ecs::World& world, const component_registry& types, ecs::Entity e,
                        std::uint32_t viewer) {
    std::uint64_t sum = entity_term(e.index(), e.version());
    const Owner* owner = world.try_get<Owner>(e);
    const bool own = viewer != 0 && owner != nullptr && owner->client == viewer;
    for (std::uint32_t id = 0; id < types.size(); ++id) {
        const component_info& info = types.info(id);
        if (info.replicated && (own || !info.owner_only) && types.ops(id).contains(world, e)) {
            sum += term_of(types, id, world, e);
        }
    }
    return sum;
}

}  // namespace ecsnet::protocol::checksum
