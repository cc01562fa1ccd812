#include "ecsnet/server/replication/interest.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "ecsnet/protocol/components.hpp"

namespace ecsnet::server {

namespace {

// A player's own entities (its avatar, what it just spawned) before anything around them.
constexpr float own_priority = 2.0F;

// 1 at the focus, falling to 1/3 at the radius and beyond (radius > 0).
float falloff(point at, point focus, float radius) noexcept {
    // A NaN distance (a NaN coordinate) counts as far: a NaN priority would break the
    // budget's ordering of candidates.
    // Not std::hypot, a library call per candidate per tick: an overflow to infinity here
    // only means far.
    const float dx = at.x - focus.x;
    const float dy = at.y - focus.y;
    const float d = std::sqrt(dx * dx + dy * dy) / radius;
    return 1.0F / (1.0F + 2.0F * (d < 1.0F ? d : 1.0F));
}

}  // namespace

grid_interest::grid_interest(float cell_size, std::uint64_t position_type, locator locate,
                             relocator relocate)
    : grid_{cell_size},
      position_type_{position_type},
      locate_{std::move(locate)},
      relocate_{std::move(relocate)} {}

void grid_interest::place(const ecs::World& world, ecs::Entity e) {
    if (const auto p = locate_(world, e)) {
        grid_.place(e, *p);
        unplaced_.erase(e.index());
    } else {
        grid_.erase(e);
        unplaced_.insert_or_assign(e.index(), e);
    }
}

void grid_interest::set_owner(ecs::Entity e, std::uint32_t owner) {
    if (e.index() >= owner_of_.size()) {
        owner_of_.resize(std::max<std::size_t>(std::size_t{e.index()} + 1, owner_of_.size() * 2), 0);
    }
    std::uint32_t& current = owner_of_[e.index()];
    if (current == owner) {
        return;
    }
    if (current != 0) {
        const auto it = owned_.find(current);
        if (it != owned_.end()) {
            it->second.erase(e.index());
            if (it->second.empty()) {
                owned_.erase(it);
            }
        }
    }
    current = owner;
    if (owner != 0) {
        owned_[owner].insert(e.index());
    }
}

void grid_interest::update(const ecs::World& world, const ecs::World::change_set_type& changes) {
    for (const ecs::Entity e : changes.destroyed) {
        grid_.erase(e);
        unplaced_.erase(e.index());
        marked_global_.erase(e.index());
        set_owner(e, 0);
    }
    for (const ecs::Entity e : changes.created) {
        place(world, e);
        const auto* owner = world.try_get<protocol::Owner>(e);
        set_owner(e, owner == nullptr ? 0 : owner->client);
    }
    for (const auto& c : changes.components) {
        if (c.type_hash == position_type_ && !tracking_) {
            stale_ = stale_ || !c.added.empty() || !c.updated.empty() || !c.removed.empty();
        } else if (c.type_hash == position_type_) {
            for (const auto* list : {&c.added, &c.updated, &c.removed}) {
                if (!relocate_) {
                    for (const ecs::Entity e : *list) {
                        if (world.valid(e)) {
                            place(world, e);
                        }
                    }
                    continue;
                }
                // Moved ones were global only if they had no position before: rare.
                unplaced_scratch_.clear();
                relocate_(world, *list, grid_, unplaced_scratch_);
                for (const ecs::Entity e : unplaced_scratch_) {
                    grid_.erase(e);
                    unplaced_.insert_or_assign(e.index(), e);
                }
                if (!unplaced_.empty()) {
                    for (const ecs::Entity e : *list) {
                        if (grid_.placed(e)) {
                            unplaced_.erase(e.index());
                        }
                    }
                }
            }
        } else if (c.type_hash == ecs::type_hash_v<protocol::Owner>) {
            for (const auto* list : {&c.added, &c.updated, &c.removed}) {
                for (const ecs::Entity e : *list) {
                    if (world.valid(e)) {
                        const auto* owner = world.try_get<protocol::Owner>(e);
                        set_owner(e, owner == nullptr ? 0 : owner->client);
                    }
                }
            }
        }
    }
}

bool grid_interest::first_visit(ecs::Entity e) {
    if (e.index() >= visited_.size()) {
        visited_.resize(std::max<std::size_t>(std::size_t{e.index()} + 1, visited_.size() * 2), 0);
    }
    if (visited_[e.index()] == stamp_) {
        return false;
    }
    visited_[e.index()] = stamp_;
    return true;
}

void grid_interest::rebuild(const ecs::World& world) {
    grid_ = spatial_grid{grid_.cell_size()};
    unplaced_.clear();
    world.entities().each([&](ecs::Entity e) { place(world, e); });
    stale_ = false;
}

void grid_interest::collect(const ecs::World& world, std::uint32_t owner, const player_interest& p,
                            std::vector<ecs::Entity>& out) {
    if (stale_) {
        rebuild(world);
    }
    // The grid, the owned and the global sets follow every change: their entities are alive.
    // The grid lists each entity once; the few listed besides (owned, always relevant,
    // global) are skipped when the grid's query has them, and marked with a stamp per call
    // against each other, so the grid's entities cost no stamp (a random access each).
    if (++stamp_ == 0) {
        std::fill(visited_.begin(), visited_.end(), 0);
        stamp_ = 1;
    }
    const bool exceptions = !p.never.empty();
    if (p.focus) {
        grid_.query(*p.focus, p.radius, [&](ecs::Entity e) {
            if (!exceptions || !p.never.contains(e.index())) {
                out.push_back(e);
            }
        });
    }
    const auto add = [&](ecs::Entity e) {
        if ((!exceptions || !p.never.contains(e.index())) &&
            !(p.focus && grid_.in_query(e, *p.focus, p.radius)) && first_visit(e)) {
            out.push_back(e);
        }
    };
    if (const auto it = owned_.find(owner); owner != 0 && it != owned_.end()) {
        for (const auto index : it->second) {
            add(world.entities().current(index));
        }
    }
    for (const auto& [index, e] : p.always) {
        if (world.valid(e)) {  // the game's list may name an entity since destroyed
            add(e);
        }
    }
    for (const auto& [index, e] : unplaced_) {
        add(e);
    }
    for (const auto& [index, e] : marked_global_) {
        add(e);
    }
}

float grid_interest::priority(const ecs::World& world, std::uint32_t owner,
                              const player_interest& p, ecs::Entity e) const {
    if (owner != 0 && e.index() < owner_of_.size() && owner_of_[e.index()] == owner) {
        return own_priority;
    }
    return distance_priority(world, p, e);
}

float grid_interest::distance_priority(const ecs::World& world, const player_interest& p,
                                       ecs::Entity e) const {
    if (!p.focus || !(p.radius > 0.0F)) {
        return 1.0F;
    }
    // The grid holds every positioned entity where it is this tick (unless moves went
    // untracked): one read instead of a lookup of the position in the world.
    const std::optional<point> at =
        stale_ ? locate_(world, e)
               : (grid_.position(e) != nullptr ? std::optional<point>{*grid_.position(e)}
                                               : std::nullopt);
    return at ? falloff(*at, *p.focus, p.radius) : 1.0F;
}

void grid_interest::priorities(const ecs::World& world, std::uint32_t owner,
                               const player_interest& p, std::span<const ecs::Entity> entities,
                               std::span<float> out) const {
    // The owner and grid slot of an entity are each a cache miss (the entities of a view are
    // spread over the whole index range): asking for them a few entities ahead overlaps them.
    constexpr std::size_t ahead = 8;
    // A player owns a few entities (its avatar, what it just spawned), usually none: those are
    // compared with each entity's index instead of reading the owner table by entity, one
    // cache miss fewer per entity.
    constexpr std::size_t few = 8;
    std::array<std::uint32_t, few> own{};
    std::size_t owned = 0;
    bool by_table = false;
    // What distance_priority() does, inline, for the usual case.
    const bool from_grid = !stale_ && p.focus && p.radius > 0.0F;
    if (owner != 0) {
        if (const auto it = owned_.find(owner); it != owned_.end()) {
            by_table = it->second.size() > few;
            if (!by_table) {
                for (const auto index : it->second) {
                    own[owned++] = index;
                }
            }
        }
    }
    for (std::size_t i = 0; i < entities.size(); ++i) {
        if (i + ahead < entities.size()) {
            const std::uint32_t next = entities[i + ahead].index();
            grid_.prefetch(next);
            if (by_table && next < owner_of_.size()) {
                __builtin_prefetch(&owner_of_[next]);
            }
        }
        const ecs::Entity e = entities[i];
        if (by_table) {
            out[i] = priority(world, owner, p, e);
            continue;
        }
        const auto own_end = own.begin() + static_cast<std::ptrdiff_t>(owned);
        if (std::find(own.begin(), own_end, e.index()) != own_end) {
            out[i] = own_priority;
        } else if (from_grid) {
            const point* at = grid_.position(e);
            out[i] = at != nullptr ? falloff(*at, *p.focus, p.radius) : 1.0F;
        } else {
            out[i] = distance_priority(world, p, e);
        }
    }
}

bool grid_interest::sees_everything(const ecs::World& /*world*/, std::uint32_t /*owner*/,
                                    const player_interest& p) const {
    return p.never.empty() && (grid_.size() == 0 || (p.focus && grid_.covers_all(*p.focus, p.radius)));
}

void grid_interest::set_global(ecs::Entity e, bool global) {
    if (global) {
        marked_global_.insert_or_assign(e.index(), e);
    } else {
        marked_global_.erase(e.index());
    }
}

player_interest& interest_manager::player(std::uint32_t owner) {
    const auto [it, added] = players_.try_emplace(owner);
    if (added) {
        it->second.radius = defaults_.radius;
    }
    return it->second;
}

void interest_manager::always_relevant(std::uint32_t owner, ecs::Entity e, bool on) {
    auto& p = player(owner);
    if (on) {
        p.always.insert_or_assign(e.index(), e);
        p.never.erase(e.index());
    } else {
        p.always.erase(e.index());
    }
}

void interest_manager::never_relevant(std::uint32_t owner, ecs::Entity e, bool on) {
    auto& p = player(owner);
    if (on) {
        p.never.insert_or_assign(e.index(), e);
        p.always.erase(e.index());
    } else {
        p.never.erase(e.index());
    }
}

void interest_manager::set_weight(std::uint32_t wire_id, float weight) {
    if (!(weight > 0.0F) || !std::isfinite(weight)) {
        throw std::invalid_argument("an interest weight must be a positive number");
    }
    if (wire_id >= weights_.size()) {
        weights_.resize(std::size_t{wire_id} + 1, 1.0F);
    }
    weights_[wire_id] = weight;
}

template <typename Fn>
bool interest_manager::guarded(std::string_view call, Fn&& fn) noexcept {
    std::string what;
    try {
        std::forward<Fn>(fn)();
        return true;
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
        what = "an exception that is not a std::exception";
    }
    ++policy_failures_;
    if (on_policy_failure) {
        try {
            on_policy_failure(call, what);
        } catch (...) {  // a failed log line must not end the tick either
        }
    }
    return false;
}

void interest_manager::update(const ecs::World& world, const ecs::World::change_set_type& changes) {
    if (policy_ == nullptr) {
        return;
    }
    (void)guarded("update", [&] { policy_->update(world, changes); });
    for (auto& entry : players_) {
        // A named reference, not a structured binding: clang 14 cannot capture bindings.
        player_interest& p = entry.second;
        if (!p.follow.is_null()) {
            (void)guarded("position", [&] {
                if (const auto at = policy_->position(world, p.follow)) {
                    p.focus = at;
                }
            });
        }
        // Relevance set for entities that are gone would only grow: drop them.
        for (auto* set : {&p.always, &p.never}) {
            if (!set->empty() && !changes.destroyed.empty()) {
                for (const ecs::Entity e : changes.destroyed) {
                    const auto it = set->find(e.index());
                    if (it != set->end() && it->second == e) {
                        set->erase(it);
                    }
                }
            }
        }
    }
}

bool interest_manager::collect(const ecs::World& world, std::uint32_t owner,
                               const player_interest& p, std::vector<ecs::Entity>& out) noexcept {
    const std::size_t before = out.size();
    if (guarded("collect", [&] { policy_->collect(world, owner, p, out); })) {
        return true;
    }
    out.resize(before);
    return false;
}

void interest_manager::priorities(const ecs::World& world, std::uint32_t owner,
                                  const player_interest& p, std::span<const ecs::Entity> entities,
                                  std::span<float> out) noexcept {
    if (!guarded("priorities", [&] { policy_->priorities(world, owner, p, entities, out); })) {
        std::fill(out.begin(), out.end(), 1.0F);
    }
}

bool interest_manager::sees_everything(const ecs::World& world, std::uint32_t owner,
                                       const player_interest& p) noexcept {
    bool everything = false;
    (void)guarded("sees_everything",
                  [&] { everything = policy_->sees_everything(world, owner, p); });
    return everything;
}

void interest_manager::views_needed(bool needed) noexcept {
    (void)guarded("views_needed", [&] { policy_->views_needed(needed); });
}

}  // namespace ecsnet::server
