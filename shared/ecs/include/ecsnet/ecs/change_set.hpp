#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ecsnet/ecs/config.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/ecs/entity_pool.hpp"
#include "ecsnet/ecs/signature.hpp"
#include "ecsnet/ecs/sparse_set.hpp"
#include "ecsnet/ecs/type_info.hpp"

namespace ecsnet::ecs {

// What happened to one component type since the last take_changes(), net of everything in
// between: a component added then removed within the tick is absent, one removed then added
// again is `updated`.
template <typename Entity>
struct basic_component_changes {
    component_id id{};
    std::uint64_t type_hash{};
    std::string_view name;
    std::vector<Entity> added;
    std::vector<Entity> updated;
    std::vector<Entity> removed;
};

// The world's changes over one tick, read and cleared at the tick boundary. Entities in
// `created` are listed with none of their components: a consumer reads them whole from the
// world. Entities in `destroyed` carry the version they had; their component removals are
// implied and not listed. An entity created and destroyed within the tick appears nowhere.
template <typename Entity>
struct basic_change_set {
    std::uint64_t tick{};
    std::vector<Entity> created;
    std::vector<Entity> destroyed;
    std::vector<basic_component_changes<Entity>> components;  // sorted by id, only non-empty

    [[nodiscard]] bool empty() const noexcept {
        return created.empty() && destroyed.empty() && components.empty();
    }

    [[nodiscard]] const basic_component_changes<Entity>* find(std::uint64_t type_hash) const noexcept {
        const auto it = std::find_if(components.begin(), components.end(),
                                     [&](const auto& c) { return c.type_hash == type_hash; });
        return it == components.end() ? nullptr : &*it;
    }

    template <typename T>
    [[nodiscard]] const basic_component_changes<Entity>* find() const noexcept {
        return find(type_hash_v<T>);
    }
};

namespace detail {

// The world's side of change tracking, shared with its pools. Ticks are numbered by an epoch:
// a mark stamped with an older epoch is simply stale, so nothing is cleared per tick and the
// cost stays O(changed).
template <typename Entity>
struct change_log {
    using index_type = typename Entity::index_type;

    bool enabled{true};
    std::uint32_t epoch{1};
    std::uint64_t tick{0};
    // The epoch an entity was created in is its slot's stamp (written when enabled).
    const basic_entity_pool<typename Entity::traits_type>* entities{nullptr};
    // The entities created this tick, in order, as runs of consecutive indices at one version:
    // fresh indices come in sequence, so creating n entities usually appends one run, not n.
    struct created_run {
        Entity first;
        index_type count;
    };
    std::vector<created_run> created;
    std::vector<Entity> destroyed;

    ECSNET_ECS_INLINE void note_created(Entity e) {
        if (!created.empty()) {
            created_run& last = created.back();
            if (e.version() == last.first.version() &&
                e.index() == static_cast<index_type>(last.first.index() + last.count)) {
                ++last.count;
                return;
            }
        }
        created.push_back(created_run{e, 1});
    }

    template <typename Fn>
    void each_created(Fn&& fn) const {
        for (const created_run& run : created) {
            for (index_type k = 0; k < run.count; ++k) {
                fn(Entity{static_cast<index_type>(run.first.index() + k), run.first.version()});
            }
        }
    }

    // Every entity created this tick is in `created`: in a tick that created none (the common
    // case for a system writing many entities) the slots are not read at all.
    [[nodiscard]] ECSNET_ECS_INLINE bool created_this_tick(index_type index) const noexcept {
        return !created.empty() && entities->stamp(index) == epoch;
    }
};

}  // namespace detail

}  // namespace ecsnet::ecs
