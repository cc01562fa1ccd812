#include "ecsnet/protocol/replication.hpp"

#include <algorithm>
#include <map>
#include <utility>

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

namespace {

bool owned_by(const ecs::World& world, ecs::Entity e, std::uint32_t viewer) {
    const Owner* owner = viewer == 0 ? nullptr : world.try_get<Owner>(e);
    return owner != nullptr && owner->client == viewer;
}

}  // namespace

std::uint64_t replication_encoder::mask_of(const ecs::World& world, ecs::Entity e,
                                           std::uint32_t viewer) const {
    std::uint64_t mask = 0;
    const bool own = owned_by(world, e, viewer);
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        const component_info& info = types_->info(id);
        if (info.replicated && (own || !info.owner_only) && types_->ops(id).contains(world, e)) {
            mask |= std::uint64_t{1} << id;
        }
    }
    return mask;
}

void replication_encoder::mask_groups::add(std::uint64_t mask, ecs::Entity e) {
    if (last_ >= used_ || groups_[last_].mask != mask) {
        last_ = 0;
        while (last_ < used_ && groups_[last_].mask != mask) {
            ++last_;
        }
        if (last_ == used_) {
            if (used_ == groups_.size()) {
                groups_.emplace_back();
            }
            groups_[used_].mask = mask;
            groups_[used_].entities.clear();
            ++used_;
        }
    }
    groups_[last_].entities.push_back(e);
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
    group_columns_.clear();
    for (std::uint32_t id = 0; mask != 0; ++id, mask >>= 1U) {
        if ((mask & 1U) == 0) {
            continue;
        }
        const auto values = types_->ops(id).encode(fbb_, world, ordered_);
        const bool is_string = types_->info(id).is_string;
        group_columns_.push_back(wire::CreateColumn(
            fbb_, static_cast<std::uint16_t>(id), 0,
            is_string ? 0 : flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>(values),
            is_string ? flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>(values) : 0));
    }
    const auto columns_offset = fbb_.CreateVector(group_columns_);
    return wire::CreateEntityGroup(fbb_, at, versions_offset, columns_offset);
}

flatbuffers::Offset<wire::Column> replication_encoder::encode_set_column(
    const ecs::World& world, std::uint32_t id, std::span<const ecs::Entity> unordered) {
    const component_info& info = types_->info(id);
    // The indices, noting on the way whether they already ascend (a fresh world's do).
    indices_.resize(unordered.size());
    bool ascending = true;
    for (std::size_t i = 0; i < unordered.size(); ++i) {
        indices_[i] = unordered[i].index();
        ascending = ascending && (i == 0 || indices_[i] > indices_[i - 1]);
    }
    std::span<const ecs::Entity> entities = unordered;
    if (!ascending) {
        entities = index_order_.sort(unordered);
        for (std::size_t i = 0; i < entities.size(); ++i) {
            indices_[i] = entities[i].index();
        }
    }
    plan_.build(indices_);
    const auto at = plan_.encode(fbb_);
    std::span<const ecs::Entity> in_set_order = entities;
    if (!plan_.in_order) {
        ordered_.resize(plan_.order.size());
        for (std::size_t i = 0; i < plan_.order.size(); ++i) {
            ordered_[i] = entities[plan_.order[i]];
        }
        in_set_order = ordered_;
    }
    const auto values = types_->ops(id).encode(fbb_, world, in_set_order);
    using bytes_offset = flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>;
    using strings_offset =
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>;
    return wire::CreateColumn(fbb_, static_cast<std::uint16_t>(id), at,
                              info.is_string ? bytes_offset{0} : bytes_offset{values},
                              info.is_string ? strings_offset{values} : strings_offset{0});
}

flatbuffers::Offset<wire::Column> replication_encoder::encode_removal_column(
    std::uint32_t id, std::span<const ecs::Entity> unordered) {
    const std::span<const ecs::Entity> entities = index_order_.sort(unordered);
    indices_.clear();
    for (const ecs::Entity e : entities) {
        indices_.push_back(e.index());
    }
    plan_.build(indices_);
    return wire::CreateColumn(fbb_, static_cast<std::uint16_t>(id), plan_.encode(fbb_));
}

replication_encoder::columns_offset replication_encoder::encode_updates(
    const ecs::World& world, const ecs::World::change_set_type& changes) {
    std::vector<flatbuffers::Offset<wire::Column>> columns;
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        const auto* changed = changes.find(types_->ops(id).type_hash);
        if (types_->info(id).owner_only || !types_->info(id).replicated || changed == nullptr ||
            (changed->added.empty() && changed->updated.empty())) {
            continue;
        }
        // Added to an entity the client already has, or updated: both are "set" on the wire.
        std::span<const ecs::Entity> entities = changed->updated;
        if (!changed->added.empty()) {
            set_scratch_.assign(changed->added.begin(), changed->added.end());
            set_scratch_.insert(set_scratch_.end(), changed->updated.begin(), changed->updated.end());
            entities = set_scratch_;
        }
        columns.push_back(encode_set_column(world, id, entities));
    }
    return columns.empty() ? columns_offset{0} : fbb_.CreateVector(columns);
}

replication_encoder::columns_offset replication_encoder::encode_removals(
    const ecs::World::change_set_type& changes) {
    std::vector<flatbuffers::Offset<wire::Column>> columns;
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        const auto* changed = changes.find(types_->ops(id).type_hash);
        if (types_->info(id).owner_only || !types_->info(id).replicated || changed == nullptr ||
            changed->removed.empty()) {
            continue;
        }
        columns.push_back(encode_removal_column(id, changed->removed));
    }
    return columns.empty() ? columns_offset{0} : fbb_.CreateVector(columns);
}

bool replication_encoder::has_owner_only() const noexcept {
    for (const component_info& info : types_->types().types()) {
        if (info.owner_only && info.replicated) {
            return true;
        }
    }
    return false;
}

frame replication_encoder::finish_owner_only(const owner_changes& changes, std::uint64_t tick) {
    std::vector<flatbuffers::Offset<wire::Column>> set;
    std::vector<flatbuffers::Offset<wire::Column>> removed;
    for (const auto& [id, entities] : changes.set) {
        set.push_back(encode_set_column(*world_, id, entities));
    }
    for (const auto& [id, entities] : changes.removed) {
        removed.push_back(encode_removal_column(id, entities));
    }
    const auto set_offset = set.empty() ? columns_offset{0} : fbb_.CreateVector(set);
    const auto removed_offset = removed.empty() ? columns_offset{0} : fbb_.CreateVector(removed);
    const auto delta = wire::CreateDelta(fbb_, tick, 0, 0, set_offset, removed_offset, true);
    return finish_frame(fbb_,
                        wire::CreateServerMessage(fbb_, wire::ServerBody::Delta, delta.Union()));
}

std::vector<replication_encoder::owner_frame> replication_encoder::encode_owner_only(
    const ecs::World& world, const ecs::World::change_set_type& changes, std::uint64_t tick) {
    std::vector<owner_frame> out;
    if (!has_owner_only()) {
        return out;
    }
    // Owner -> its entities' owner-only changes, by type. An entity without Owner is the
    // server's: nobody receives its owner-only values.
    std::map<std::uint32_t, owner_changes> by_owner;
    const auto owner_of = [&](ecs::Entity e) -> const Owner* { return world.try_get<Owner>(e); };
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        if (!types_->info(id).owner_only || !types_->info(id).replicated) {
            continue;
        }
        const component_ops& ops = types_->ops(id);
        const auto add_set = [&](ecs::Entity e) {
            if (const Owner* owner = owner_of(e)) {
                by_owner[owner->client].set[id].push_back(e);
            }
        };
        // Entities created this tick come with no component changes: read them whole.
        for (const ecs::Entity e : changes.created) {
            if (ops.contains(world, e)) {
                add_set(e);
            }
        }
        if (const auto* changed = changes.find(ops.type_hash)) {
            std::for_each(changed->added.begin(), changed->added.end(), add_set);
            std::for_each(changed->updated.begin(), changed->updated.end(), add_set);
            for (const ecs::Entity e : changed->removed) {
                if (const Owner* owner = world.valid(e) ? owner_of(e) : nullptr) {
                    by_owner[owner->client].removed[id].push_back(e);
                }
            }
        }
    }
    world_ = &world;
    for (const auto& [owner, owned] : by_owner) {
        fbb_.Clear();
        out.push_back(owner_frame{owner, finish_owner_only(owned, tick)});
    }
    return out;
}

std::optional<frame> replication_encoder::encode_owner_only_snapshot(const ecs::World& world,
                                                                     std::uint32_t owner,
                                                                     std::uint64_t tick) {
    if (!has_owner_only()) {
        return std::nullopt;
    }
    owner_changes owned;
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        if (!types_->info(id).owner_only || !types_->info(id).replicated) {
            continue;
        }
        for (const ecs::Entity e : types_->ops(id).entities(world)) {
            const Owner* o = world.try_get<Owner>(e);
            if (o != nullptr && o->client == owner) {
                owned.set[id].push_back(e);
            }
        }
    }
    if (owned.set.empty()) {
        return std::nullopt;
    }
    world_ = &world;
    fbb_.Clear();
    return finish_owner_only(owned, tick);
}

frame replication_encoder::encode_delta(const ecs::World& world,
                                        const ecs::World::change_set_type& changes,
                                        std::uint64_t tick) {
    fbb_.Clear();

    const auto destroyed = encode_refs(changes.destroyed);
    const auto spawned = encode_groups(world, changes.created, 0);

    const auto updated = encode_updates(world, changes);
    const auto removed = encode_removals(changes);
    const auto delta = wire::CreateDelta(fbb_, tick, destroyed, spawned, updated, removed);
    return finish_frame(
        fbb_, wire::CreateServerMessage(fbb_, wire::ServerBody::Delta, delta.Union()));
}

flatbuffers::Offset<flatbuffers::Vector<const wire::EntityRef*>> replication_encoder::encode_refs(
    std::span<const ecs::Entity> entities) {
    if (entities.empty()) {
        return 0;
    }
    wire::EntityRef* refs = nullptr;
    const auto offset = fbb_.CreateUninitializedVectorOfStructs(entities.size(), &refs);
    for (std::size_t i = 0; i < entities.size(); ++i) {
        refs[i] = wire::EntityRef{entities[i].index(), entities[i].version()};
    }
    return offset;
}

flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::EntityGroup>>>
replication_encoder::encode_groups(const ecs::World& world, std::span<const ecs::Entity> entities,
                                   std::uint32_t viewer) {
    if (entities.empty()) {
        return 0;
    }
    groups_.clear();
    for (const ecs::Entity e : entities) {
        groups_.add(mask_of(world, e, viewer), e);
    }
    group_offsets_.clear();
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        group_offsets_.push_back(encode_group(world, groups_[g].mask, groups_[g].entities));
    }
    return fbb_.CreateVector(group_offsets_);
}

frame replication_encoder::encode_view_delta(const ecs::World& world, const view_changes& changes,
                                             std::uint64_t tick) {
    fbb_.Clear();
    const auto destroyed = encode_refs(changes.destroyed);
    const auto left = encode_refs(changes.left);
    const auto spawned = encode_groups(world, changes.spawned, changes.viewer);
    const auto entered = encode_groups(world, changes.entered, changes.viewer);

    view_set_.resize(types_->size());
    view_removed_.resize(types_->size());
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        view_set_[id].clear();
        view_removed_[id].clear();
    }
    const bool told = changes.present.size() == changes.updated.size();
    for (std::size_t i = 0; i < changes.updated.size(); ++i) {
        const auto& [e, due] = changes.updated[i];
        int own = -1;  // whether the viewer owns e, looked up for an owner-only type only
        std::uint64_t mask = due;
        for (std::uint32_t id = 0; mask != 0 && id < types_->size(); ++id, mask >>= 1U) {
            if ((mask & 1U) == 0 || !types_->info(id).replicated) {
                continue;
            }
            if (types_->info(id).owner_only) {
                own = own < 0 ? static_cast<int>(owned_by(world, e, changes.viewer)) : own;
                if (own == 0) {
                    continue;
                }
            }
            const bool has = told ? ((changes.present[i] >> id) & 1U) != 0
                                  : types_->ops(id).contains(world, e);
            (has ? view_set_ : view_removed_)[id].push_back(e);
        }
    }
    set_columns_.clear();
    removed_columns_.clear();
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        if (!view_set_[id].empty()) {
            set_columns_.push_back(encode_set_column(world, id, view_set_[id]));
        }
        if (!view_removed_[id].empty()) {
            removed_columns_.push_back(encode_removal_column(id, view_removed_[id]));
        }
    }
    const auto set_offset =
        set_columns_.empty() ? columns_offset{0} : fbb_.CreateVector(set_columns_);
    const auto removed_offset =
        removed_columns_.empty() ? columns_offset{0} : fbb_.CreateVector(removed_columns_);
    const auto delta = wire::CreateDelta(fbb_, tick, destroyed, spawned, set_offset,
                                         removed_offset, false, entered, left);
    return finish_frame(
        fbb_, wire::CreateServerMessage(fbb_, wire::ServerBody::Delta, delta.Union()));
}

frame replication_encoder::encode_empty_snapshot(std::uint64_t tick) {
    fbb_.Clear();
    const auto snapshot = wire::CreateSnapshot(fbb_, tick, 0, 1, 0, 0);
    return finish_frame(
        fbb_, wire::CreateServerMessage(fbb_, wire::ServerBody::Snapshot, snapshot.Union()));
}

std::vector<frame> replication_encoder::encode_snapshot(const ecs::World& world,
                                                        std::uint64_t tick,
                                                        const snapshot_options& options) {
    // Masks straight from the dense arrays: one pass per replicated storage.
    masks_.assign(world.entities().slots(), 0);
    for (std::uint32_t id = 0; id < types_->size(); ++id) {
        if (types_->info(id).owner_only || !types_->info(id).replicated) {
            continue;
        }
        for (const ecs::Entity e : types_->ops(id).entities(world)) {
            masks_[e.index()] |= std::uint64_t{1} << id;
        }
    }
    groups_.clear();
    world.each([&](ecs::Entity e) { groups_.add(masks_[e.index()], e); });

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
