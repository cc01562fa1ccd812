#include "ecsnet/protocol/replication.hpp"

#include <array>

namespace ecsnet::protocol {

namespace {

using raw_offset = flatbuffers::uoffset_t;

// Offsets of the columns written so far, by wire id; 0 = absent.
struct column_offsets {
    std::array<raw_offset, replicated_count> at{};
    std::array<raw_offset, replicated_count> values{};

    [[nodiscard]] bool empty() const noexcept {
        for (std::size_t i = 0; i < replicated_count; ++i) {
            if (at[i] != 0 || values[i] != 0) {
                return false;
            }
        }
        return true;
    }

    [[nodiscard]] flatbuffers::Offset<wire::ComponentColumns> finish(
        flatbuffers::FlatBufferBuilder& fbb) const {
        if (empty()) {
            return 0;
        }
        wire::ComponentColumnsBuilder builder(fbb);
        for_each_component([&]<typename T>() {
            constexpr auto id = wire_id_v<T>;
            if (at[id] != 0) {
                column<T>::add_at(builder, flatbuffers::Offset<wire::IndexSet>(at[id]));
            }
            if (values[id] != 0) {
                column<T>::add_values(
                    builder, flatbuffers::Offset<typename column<T>::vector_type>(values[id]));
            }
        });
        return builder.Finish();
    }
};

template <typename T>
[[nodiscard]] constexpr std::uint64_t bit_of() noexcept {
    return std::uint64_t{1} << wire_id_v<T>;
}

// Bytes an entity adds to a snapshot chunk, an upper estimate: index, version, values.
std::size_t estimate_entity_bytes(const ecs::World& world, std::uint64_t mask, ecs::Entity e) {
    std::size_t bytes = 8;
    for_each_component([&]<typename T>() {
        if ((mask & bit_of<T>()) == 0) {
            return;
        }
        if constexpr (is_string_component_v<T>) {
            bytes += world.find_storage<T>()->get(e).value.size() + 12;
        } else {
            bytes += sizeof(T);
        }
    });
    return bytes;
}

constexpr std::size_t group_overhead_bytes = 128;
constexpr std::size_t message_overhead_bytes = 96;

}  // namespace

void replication_encoder::group_by_mask(const ecs::World& world,
                                        std::span<const ecs::Entity> entities,
                                        std::vector<group>& out) {
    out.clear();
    std::size_t last = 0;
    for (const ecs::Entity e : entities) {
        std::uint64_t mask = 0;
        for_each_component([&]<typename T>() {
            const auto* storage = world.find_storage<T>();
            if (storage != nullptr && storage->contains(e)) {
                mask |= bit_of<T>();
            }
        });
        if (last >= out.size() || out[last].mask != mask) {
            last = 0;
            while (last < out.size() && out[last].mask != mask) {
                ++last;
            }
            if (last == out.size()) {
                out.push_back(group{mask, {}});
            }
        }
        out[last].entities.push_back(e);
    }
}

flatbuffers::Offset<wire::EntityGroup> replication_encoder::encode_group(
    const ecs::World& world, std::uint64_t mask, std::span<const ecs::Entity> entities) {
    indices_.clear();
    for (const ecs::Entity e : entities) {
        indices_.push_back(e.index());
    }
    plan_.build(indices_);
    const auto at = plan_.encode(fbb_);

    std::uint32_t* versions = nullptr;
    const auto versions_offset = fbb_.CreateUninitializedVector(entities.size(), &versions);
    for (std::size_t i = 0; i < entities.size(); ++i) {
        versions[i] = entities[plan_.order[i]].version();
    }

    column_offsets columns;
    for_each_component([&]<typename T>() {
        if ((mask & bit_of<T>()) == 0) {
            return;
        }
        const auto& storage = *world.find_storage<T>();
        columns.values[wire_id_v<T>] =
            encode_values<T>(fbb_, plan_.order.size(), [&](std::size_t i) -> const T& {
                return storage.get(entities[plan_.order[i]]);
            }).o;
    });
    const auto columns_offset = columns.finish(fbb_);
    return wire::CreateEntityGroup(fbb_, at, versions_offset, columns_offset);
}

flatbuffers::Offset<wire::ComponentColumns> replication_encoder::encode_updates(
    const ecs::World& world, const ecs::World::change_set_type& changes) {
    column_offsets columns;
    for_each_component([&]<typename T>() {
        const auto* changed = changes.template find<T>();
        if (changed == nullptr || (changed->added.empty() && changed->updated.empty())) {
            return;
        }
        // Added to an entity the client already has, or updated: both are "set" on the wire.
        const auto& added = changed->added;
        const auto& updated = changed->updated;
        indices_.clear();
        indices_.reserve(added.size() + updated.size());
        for (const ecs::Entity e : added) {
            indices_.push_back(e.index());
        }
        for (const ecs::Entity e : updated) {
            indices_.push_back(e.index());
        }
        plan_.build(indices_);
        const auto& storage = *world.find_storage<T>();
        columns.at[wire_id_v<T>] = plan_.encode(fbb_).o;
        columns.values[wire_id_v<T>] =
            encode_values<T>(fbb_, plan_.order.size(), [&](std::size_t i) -> const T& {
                const std::size_t pos = plan_.order[i];
                return storage.get(pos < added.size() ? added[pos] : updated[pos - added.size()]);
            }).o;
    });
    return columns.finish(fbb_);
}

flatbuffers::Offset<wire::ComponentColumns> replication_encoder::encode_removals(
    const ecs::World::change_set_type& changes) {
    column_offsets columns;
    for_each_component([&]<typename T>() {
        const auto* changed = changes.template find<T>();
        if (changed == nullptr || changed->removed.empty()) {
            return;
        }
        indices_.clear();
        for (const ecs::Entity e : changed->removed) {
            indices_.push_back(e.index());
        }
        plan_.build(indices_);
        columns.at[wire_id_v<T>] = plan_.encode(fbb_).o;
    });
    return columns.finish(fbb_);
}

frame replication_encoder::encode_delta(const ecs::World& world,
                                        const ecs::World::change_set_type& changes,
                                        std::uint64_t tick) {
    fbb_.Clear();

    flatbuffers::Offset<flatbuffers::Vector<const wire::EntityRef*>> destroyed = 0;
    if (!changes.destroyed.empty()) {
        wire::EntityRef* refs = nullptr;
        destroyed = fbb_.CreateUninitializedVectorOfStructs(changes.destroyed.size(), &refs);
        for (std::size_t i = 0; i < changes.destroyed.size(); ++i) {
            refs[i] = wire::EntityRef{changes.destroyed[i].index(), changes.destroyed[i].version()};
        }
    }

    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::EntityGroup>>> spawned = 0;
    if (!changes.created.empty()) {
        group_by_mask(world, changes.created, groups_);
        std::vector<flatbuffers::Offset<wire::EntityGroup>> offsets;
        offsets.reserve(groups_.size());
        for (const auto& g : groups_) {
            offsets.push_back(encode_group(world, g.mask, g.entities));
        }
        spawned = fbb_.CreateVector(offsets);
    }

    const auto updated = encode_updates(world, changes);
    const auto removed = encode_removals(changes);
    const auto delta = wire::CreateDelta(fbb_, tick, destroyed, spawned, updated, removed);
    return finish_frame(
        fbb_, wire::CreateServerMessage(fbb_, wire::ServerBody::Delta, delta.Union()));
}

std::vector<frame> replication_encoder::encode_snapshot(const ecs::World& world,
                                                        std::uint64_t tick,
                                                        const snapshot_options& options) {
    // Masks straight from the dense arrays: one pass per replicated storage.
    masks_.assign(world.entities().slots(), 0);
    for_each_component([&]<typename T>() {
        if (const auto* storage = world.find_storage<T>()) {
            for (const ecs::Entity e : storage->entities()) {
                masks_[e.index()] |= bit_of<T>();
            }
        }
    });
    groups_.clear();
    std::size_t last = 0;
    world.each([&](ecs::Entity e) {
        const std::uint64_t mask = masks_[e.index()];
        if (last >= groups_.size() || groups_[last].mask != mask) {
            last = 0;
            while (last < groups_.size() && groups_[last].mask != mask) {
                ++last;
            }
            if (last == groups_.size()) {
                groups_.push_back(group{mask, {}});
            }
        }
        groups_[last].entities.push_back(e);
    });

    // Plan chunks as slices of groups, then encode each with the final chunk count.
    struct slice {
        std::size_t group;
        std::size_t begin;
        std::size_t end;
    };
    std::vector<std::vector<slice>> chunks(1);
    std::size_t chunk_bytes = message_overhead_bytes;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        const auto& entities = groups_[g].entities;
        std::size_t begin = 0;
        chunk_bytes += group_overhead_bytes;
        for (std::size_t i = 0; i < entities.size(); ++i) {
            const std::size_t bytes = estimate_entity_bytes(world, groups_[g].mask, entities[i]);
            if (chunk_bytes + bytes > options.max_chunk_bytes &&
                (i > begin || !chunks.back().empty())) {
                if (i > begin) {
                    chunks.back().push_back(slice{g, begin, i});
                }
                chunks.emplace_back();
                begin = i;
                chunk_bytes = message_overhead_bytes + group_overhead_bytes;
            }
            chunk_bytes += bytes;
        }
        if (entities.size() > begin) {
            chunks.back().push_back(slice{g, begin, entities.size()});
        }
    }

    std::vector<frame> frames;
    frames.reserve(chunks.size());
    const auto entity_count = static_cast<std::uint32_t>(world.alive());
    for (std::size_t c = 0; c < chunks.size(); ++c) {
        fbb_.Clear();
        std::vector<flatbuffers::Offset<wire::EntityGroup>> offsets;
        for (const slice& s : chunks[c]) {
            const auto& g = groups_[s.group];
            offsets.push_back(encode_group(
                world, g.mask,
                std::span<const ecs::Entity>{g.entities}.subspan(s.begin, s.end - s.begin)));
        }
        const auto groups = fbb_.CreateVector(offsets);
        const auto snapshot =
            wire::CreateSnapshot(fbb_, tick, static_cast<std::uint32_t>(c),
                                 static_cast<std::uint32_t>(chunks.size()), entity_count, groups);
        frames.push_back(finish_frame(
            fbb_, wire::CreateServerMessage(fbb_, wire::ServerBody::Snapshot, snapshot.Union())));
    }
    return frames;
}

}  // namespace ecsnet::protocol
