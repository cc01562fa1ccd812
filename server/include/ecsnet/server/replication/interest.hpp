#pragma once

#include <boost/unordered/unordered_flat_map.hpp>
#include <boost/unordered/unordered_flat_set.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ecsnet/ecs/type_info.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/server/replication/spatial_grid.hpp"

// Interest management (docs/INTEREST.md): which entities each player's clients receive. A
// policy decides what a player should see; client_view (client_view.hpp) gets it there within
// the client's byte budget. The game talks to interest_manager.
namespace ecsnet::server {

// What one player (an owner id, so every connection of the player) is interested in.
struct player_interest {
    std::optional<point> focus;  // the centre of its area of interest: Focus messages, set_focus()
    ecs::Entity follow;          // when alive with a position, the focus follows it each tick
    float radius{0.0F};
    boost::unordered_flat_map<std::uint32_t, ecs::Entity> always;  // by entity index
    boost::unordered_flat_map<std::uint32_t, ecs::Entity> never;
    double budget{0.0};  // bytes per second per connection; 0: the server's default
};

// Decides which entities a player sees. The default is grid_interest; a game replaces it with
// interest_manager::set_policy().
class interest_policy {
public:
    interest_policy() = default;
    interest_policy(const interest_policy&) = delete;
    interest_policy& operator=(const interest_policy&) = delete;
    virtual ~interest_policy() = default;

    // Once per tick, before any client is served: catch up with the tick's changes.
    virtual void update(const ecs::World& world, const ecs::World::change_set_type& changes) = 0;
    // Appends every live entity `owner` should see now, each once.
    virtual void collect(const ecs::World& world, std::uint32_t owner, const player_interest& p,
                         std::vector<ecs::Entity>& out) = 0;
    // How urgent e's updates are for this player relative to others (> 0; 1 is normal): the
    // byte budget serves the most urgent first.
    [[nodiscard]] virtual float priority(const ecs::World& /*world*/, std::uint32_t /*owner*/,
                                         const player_interest& /*p*/, ecs::Entity /*e*/) const {
        return 1.0F;
    }
    // priority() of each of `entities` into `out` (same size): one call per client and tick,
    // which lets a policy overlap the memory reads of many entities.
    virtual void priorities(const ecs::World& world, std::uint32_t owner, const player_interest& p,
                            std::span<const ecs::Entity> entities, std::span<float> out) const {
        for (std::size_t i = 0; i < entities.size(); ++i) {
            out[i] = priority(world, owner, p, entities[i]);
        }
    }
    // Whether collect() will be called from the next tick on (false while every client shares
    // the whole world's single stream, or none is connected): a policy may then stop tracking
    // what only collect() reads, and catch up when it is called again.
    virtual void views_needed(bool /*needed*/) {}
    // True only when collect() would list every live entity (then the player's clients may
    // share the single stream of the whole world); false when unsure.
    [[nodiscard]] virtual bool sees_everything(const ecs::World& /*world*/, std::uint32_t /*owner*/,
                                               const player_interest& /*p*/) const {
        return false;
    }
    // Where e is, for a focus that follows an entity; nullopt when the policy has no idea.
    [[nodiscard]] virtual std::optional<point> position(const ecs::World& /*world*/,
                                                        ecs::Entity /*e*/) const {
        return std::nullopt;
    }
};

// The default policy: entities in the grid cells within `radius` of the player's focus, plus
// the player's own entities, plus those the game made always relevant to it, plus global ones
// (marked global, or without a position), minus those the game made never relevant to it.
class grid_interest final : public interest_policy {
public:
    // Where an entity is; nullopt when it has no position (it is then global).
    using locator = std::function<std::optional<point>(const ecs::World&, ecs::Entity)>;
    // Places every live one of `entities` in the grid at its position, and appends those
    // without one to `unplaced`: one call per tick for all that moved (use_grid<T> reads T's
    // storage directly, without a call per entity).
    using relocator = std::function<void(const ecs::World&, std::span<const ecs::Entity>,
                                         spatial_grid&, std::vector<ecs::Entity>& unplaced)>;

    // `position_type`: the component whose changes move entities (ecs::type_hash_v<T>).
    grid_interest(float cell_size, std::uint64_t position_type, locator locate,
                  relocator relocate = {});

    void update(const ecs::World& world, const ecs::World::change_set_type& changes) override;
    void collect(const ecs::World& world, std::uint32_t owner, const player_interest& p,
                 std::vector<ecs::Entity>& out) override;
    // While no view is needed, entities that move are not re-placed in the grid (what made
    // a room where everyone sees everything pay per moving entity); the next collect()
    // rebuilds the grid from the world, once.
    void views_needed(bool needed) override { tracking_ = needed; }
    // From the grid's bounds, possibly as of before tracking stopped: it may then say yes to a
    // view that no longer covers an entity that moved out of them, which only sends more.
    [[nodiscard]] bool sees_everything(const ecs::World& world, std::uint32_t owner,
                                       const player_interest& p) const override;
    // 1 at the focus, falling to 1/3 at the radius and beyond; the player's own entities 2.
    [[nodiscard]] float priority(const ecs::World& world, std::uint32_t owner,
                                 const player_interest& p, ecs::Entity e) const override;
    void priorities(const ecs::World& world, std::uint32_t owner, const player_interest& p,
                    std::span<const ecs::Entity> entities, std::span<float> out) const override;

    // Global entities are visible to every player whatever its focus.
    void set_global(ecs::Entity e, bool global);
    [[nodiscard]] std::optional<point> position(const ecs::World& world,
                                                ecs::Entity e) const override {
        return world.valid(e) ? locate_(world, e) : std::nullopt;
    }
    [[nodiscard]] const spatial_grid& grid() const noexcept { return grid_; }

private:
    void place(const ecs::World& world, ecs::Entity e);
    // priority() of an entity the player does not own.
    [[nodiscard]] float distance_priority(const ecs::World& world, const player_interest& p,
                                          ecs::Entity e) const;
    void set_owner(ecs::Entity e, std::uint32_t owner);
    [[nodiscard]] bool first_visit(ecs::Entity e);

    spatial_grid grid_;
    std::uint64_t position_type_;
    locator locate_;
    relocator relocate_;
    std::vector<ecs::Entity> unplaced_scratch_;
    bool tracking_{true};
    bool stale_{false};  // moves were not tracked: rebuild before the next collect()
    void rebuild(const ecs::World& world);
    boost::unordered_flat_map<std::uint32_t, ecs::Entity> unplaced_;  // no position: global
    boost::unordered_flat_map<std::uint32_t, ecs::Entity> marked_global_;
    boost::unordered_flat_map<std::uint32_t, boost::unordered_flat_set<ecs::Entity::index_type>>
        owned_;                                  // owner -> entity indices
    std::vector<std::uint32_t> owner_of_;        // by entity index, 0: none
    std::vector<std::uint32_t> visited_;         // by entity index: collect()'s stamp
    std::uint32_t stamp_{0};
};

// The game's handle on interest management (server::interest()). World thread only.
class interest_manager {
public:
    struct defaults {
        float radius{256.0F};
        double budget{64.0 * 1024};  // bytes per second per connection; 0: unlimited
    };

    // Interest management is on once a policy is set (use_grid() or set_policy()).
    [[nodiscard]] bool enabled() const noexcept { return policy_ != nullptr; }
    void set_policy(std::unique_ptr<interest_policy> policy) { policy_ = std::move(policy); }
    [[nodiscard]] interest_policy* policy() noexcept { return policy_.get(); }

    // The default policy: positions read from component T through `to_point(const T&)`.
    template <typename T, typename ToPoint>
    grid_interest& use_grid(float cell_size, ToPoint to_point) {
        auto grid = std::make_unique<grid_interest>(
            cell_size, ecs::type_hash_v<T>,
            [to_point](const ecs::World& w, ecs::Entity e) -> std::optional<point> {
                const T* value = w.try_get<T>(e);
                return value == nullptr ? std::nullopt : std::optional<point>{to_point(*value)};
            },
            [to_point](const ecs::World& w, std::span<const ecs::Entity> entities,
                       spatial_grid& grid, std::vector<ecs::Entity>& unplaced) {
                const auto* storage = w.find_storage<T>();
                for (const ecs::Entity e : entities) {
                    if (const T* value = storage == nullptr ? nullptr : storage->try_get(e)) {
                        grid.place(e, to_point(*value));
                    } else if (w.valid(e)) {
                        unplaced.push_back(e);
                    }
                }
            });
        grid_interest& out = *grid;
        policy_ = std::move(grid);
        return out;
    }

    void set_defaults(defaults d) noexcept { defaults_ = d; }
    [[nodiscard]] const defaults& default_settings() const noexcept { return defaults_; }

    // Whether a client's Focus message moves its player's focus (true by default). A game that
    // must not let clients look anywhere turns it off and sets foci itself (follow()).
    void accept_client_focus(bool on) noexcept { client_focus_ = on; }
    [[nodiscard]] bool accepts_client_focus() const noexcept { return client_focus_; }

    // Per player (owner id). A Focus message from one of its clients calls set_focus().
    void set_focus(std::uint32_t owner, point focus) { player(owner).focus = focus; }
    void follow(std::uint32_t owner, ecs::Entity e) { player(owner).follow = e; }
    void set_radius(std::uint32_t owner, float radius) { player(owner).radius = radius; }
    void set_budget(std::uint32_t owner, double bytes_per_second) {
        player(owner).budget = bytes_per_second;
    }
    // Always (or never) sent to this player, whatever the policy decides; false undoes it.
    void always_relevant(std::uint32_t owner, ecs::Entity e, bool on = true);
    void never_relevant(std::uint32_t owner, ecs::Entity e, bool on = true);
    // How urgent a component type's updates are (wire id; 1 by default, > 0).
    void set_weight(std::uint32_t wire_id, float weight);
    [[nodiscard]] float weight(std::uint32_t wire_id) const noexcept {
        return wire_id < weights_.size() ? weights_[wire_id] : 1.0F;
    }

    [[nodiscard]] player_interest& player(std::uint32_t owner);
    [[nodiscard]] double budget_of(const player_interest& p) const noexcept {
        return p.budget > 0 ? p.budget : defaults_.budget;
    }
    // Forgets a player that has no connection left.
    void forget(std::uint32_t owner) { players_.erase(owner); }

    // Once per tick before the clients are served: the policy catches up, followed foci move.
    void update(const ecs::World& world, const ecs::World::change_set_type& changes);

    // The policy's calls as the server makes them. A policy is the game's code and may throw:
    // the call then fails alone, on_policy_failure hears of it, and a fallback stands in for
    // its answer, so the tick goes on. update(): the policy missed this tick's changes (a
    // followed focus stays where it was). collect(): false, `out` as before the call (the
    // caller keeps the view it has). priorities(): 1 for every entity. sees_everything():
    // false. views_needed(): ignored.
    [[nodiscard]] bool collect(const ecs::World& world, std::uint32_t owner,
                               const player_interest& p, std::vector<ecs::Entity>& out) noexcept;
    void priorities(const ecs::World& world, std::uint32_t owner, const player_interest& p,
                    std::span<const ecs::Entity> entities, std::span<float> out) noexcept;
    [[nodiscard]] bool sees_everything(const ecs::World& world, std::uint32_t owner,
                                       const player_interest& p) noexcept;
    void views_needed(bool needed) noexcept;
    // Told which call failed ("update", "collect", ...) and why. World thread.
    std::function<void(std::string_view call, std::string_view what)> on_policy_failure;
    [[nodiscard]] std::uint64_t policy_failures() const noexcept { return policy_failures_; }

private:
    // fn() under the guard: true when it returned, false when it threw (reported as `call`).
    template <typename Fn>
    bool guarded(std::string_view call, Fn&& fn) noexcept;

    std::unique_ptr<interest_policy> policy_;
    std::uint64_t policy_failures_{0};
    defaults defaults_;
    boost::unordered_flat_map<std::uint32_t, player_interest> players_;
    std::vector<float> weights_;
    bool client_focus_{true};
};

}  // namespace ecsnet::server
