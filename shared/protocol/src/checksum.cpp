#include "ecsnet/protocol/checksum.hpp"

// XXH64_state_t on the stack needs the static-linking definitions.
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <vector>

namespace ecsnet::protocol::checksum {

std::uint64_t hash_bytes(std::span<const std::byte> bytes) noexcept {
    return XXH64(bytes.data(), bytes.size(), 0);
}

std::uint64_t hash_parts(std::span<const std::byte> head, std::span<const std::byte> value) noexcept {
    // Names are at most 64 bytes: the common case hashes one contiguous stack buffer.
    std::array<std::byte, 256> buffer;
    if (head.size() + value.size() <= buffer.size()) {
        std::memcpy(buffer.data(), head.data(), head.size());
        if (!value.empty()) {
            std::memcpy(buffer.data() + head.size(), value.data(), value.size());
        }
        return XXH64(buffer.data(), head.size() + value.size(), 0);
    }
    XXH64_state_t state;
    XXH64_reset(&state, 0);
    XXH64_update(&state, head.data(), head.size());
    XXH64_update(&state, value.data(), value.size());
    return XXH64_digest(&state);
}

std::uint64_t of_world(const ecs::World& world) {
    std::uint64_t sum = 0;
    world.each([&](ecs::Entity e) { sum += entity_term(e.index(), e.version()); });
    for_each_component([&]<typename T>() {
        const auto* storage = world.find_storage<T>();
        if (storage == nullptr) {
            return;
        }
        const auto entities = storage->entities();
        const auto values = storage->values();
        for (std::size_t i = 0; i < entities.size(); ++i) {
            sum += component_term(entities[i].index(), entities[i].version(), values[i]);
        }
    });
    return sum;
}

}  // namespace ecsnet::protocol::checksum
