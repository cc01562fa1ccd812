#include "ecsnet/protocol/replication.hpp"

#include <array>

namespace ecsnet::protocol {

namespace {

// Bytes an entity adds to a snapshot chunk, an upper estimate: index, version, values.
std::size_t estimate_entity_bytes(const component_registry& types, const ecs::World& world,
                                  std::uint64_t mask, ecs::Entity e) {
    std::size_t bytes = 8;
    for (std::uint32_t id = 0; mask != 0; ++id, mask >>= 1U) {
        if ((mask & 1U) == 0) {
            continue;
        }
        const component_info& info = types.info(id);
        bytes += info.is_string ? types.ops(id).text(world, e).size() + 12 : info.value_bytes();
    }
    return bytes;
}

constexpr std::size_t group_overhead_bytes = 128;
constexpr std::size_t message_overhead_bytes = 96;

}  // namespace

std::uint64_t replication_encoder::mask_of(const ecs::World& world, ecs::Entity e) const {
    std::uint64_t mask = 0;
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        if (!types_->info(id).owner_only && types_->ops(id).contains(world, e)) {
            mask |= std::uint64_t{1} << id;
        }
    }
    return mask;
}

void replication_encoder::group_by_mask(const ecs::World& world,
                                        std::span<const ecs::Entity> entities,
                                        std::vector<group>& out) {
    out.clear();
    std::size_t last = 0;
    for (const ecs::Entity e : entities) {
        const std::uint64_t mask = mask_of(world, e);
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

    ordered_.clear();
    for (const std::uint32_t position : plan_.order) {
        ordered_.push_back(entities[position]);
    }
    std::vector<flatbuffers::Offset<wire::Column>> columns;
    for (std::uint32_t id = 0; mask != 0; ++id, mask >>= 1U) {
        if ((mask & 1U) == 0) {
            continue;
        }
        const auto values = types_->ops(id).encode(fbb_, world, ordered_);
        const bool is_string = types_->info(id).is_string;
        columns.push_back(wire::CreateColumn(
            fbb_, static_cast<std::uint16_t>(id), 0,
            is_string ? 0 : flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>(values),
            is_string ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>(values) : 0));
    }
    const auto columns_offset = fbb_.CreateVector(columns);
    return wire::CreateEntityGroup(fbb_, at, versions_offset, columns_offset);
}

replication_encoder::columns_offset replication_encoder::encode_updates(
    const ecs::World& world, const ecs::World::change_set_type& changes) {
    columns_.clear();
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        const component_info& info = types_->info(id);
        const auto* changed = changes.find(types_->ops(id).type_hash);
        if (info.owner_only || changed == nullptr ||
            (changed->added.empty() && changed->updated.empty())) {
            continue;
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
        const auto at = plan_.encode(fbb_);
        ordered_.clear();
        ordered_.reserve(plan_.order.size());
        for (const std::uint32_t position : plan_.order) {
            ordered_.push_back(position < added.size() ? added[position]
                                                       : updated[position - added.size()]);
        }
        const auto values = types_->ops(id).encode(fbb_, world, ordered_);
        columns_.push_back(wire::CreateColumn(
            fbb_, static_cast<std::uint16_t>(id), at,
            info.is_string ? 0 : flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>(values),
            info.is_string
                ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>(values)
                : 0));
    }
    return columns_.empty() ? columns_offset{0} : fbb_.CreateVector(columns_);
}

replication_encoder::columns_offset replication_encoder::encode_removals(
    const ecs::World::change_set_type& changes) {
    columns_.clear();
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        const auto* changed = changes.find(types_->ops(id).type_hash);
        if (types_->info(id).owner_only || changed == nullptr || changed->removed.empty()) {
            continue;
        }
        indices_.clear();
        for (const ecs::Entity e : changed->removed) {
            indices_.push_back(e.index());
        }
        plan_.build(indices_);
        columns_.push_back(wire::CreateColumn(fbb_, static_cast<std::uint16_t>(id), plan_.encode(fbb_)));
    }
    return columns_.empty() ? columns_offset{0} : fbb_.CreateVector(columns_);
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
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        if (types_->info(id).owner_only) {
            continue;
        }
        for (const ecs::Entity e : types_->ops(id).entities(world)) {
            masks_[e.index()] |= std::uint64_t{1} << id;
        }
    }
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
            const std::size_t bytes = estimate_entity_bytes(*types_, world, groups_[g].mask, entities[i]);
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
