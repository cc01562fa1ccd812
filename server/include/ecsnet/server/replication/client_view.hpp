#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ecsnet/ecs/index_order.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/server/replication/interest.hpp"

// One connection's replication under interest management: what its mirror holds, what waits
// for bandwidth, and its byte budget (docs/INTEREST.md). World thread only.
namespace ecsnet::server {

// What changed in one tick, by entity index, built once and read by every client_view.
class tick_changes {
public:
    void build(const ecs::World& world, const ecs::World::change_set_type& changes,
               const protocol::component_registry& types);
    // The wire ids (bit i = id i) set or removed on the entity at `index` this tick.
    [[nodiscard]] std::uint64_t mask(std::uint32_t index) const noexcept {
        return index < slots_.size() && slots_[index].stamp == epoch_ ? slots_[index].mask : 0;
    }
    // Of `mask`, the wire ids whose presence on e this tick's lists tell (`known`), and
    // which of those e has now: what a view would otherwise ask the world, type by type.
    [[nodiscard]] std::uint64_t present(ecs::Entity e, std::uint64_t mask,
                                        std::uint64_t& known) const noexcept {
        known = 0;
        if (e.index() >= slots_.size()) {
            return 0;
        }
        const slot_type& s = slots_[e.index()];
        if (s.stamp != epoch_ || (s.flags & (listed_flag | mixed_flag)) != listed_flag ||
            s.version != e.version()) {
            return 0;
        }
        known = mask & s.mask;
        return (s.flags & removals_flag) != 0 ? known & ~removed_[e.index()] : known;
    }
    // Asks the CPU to load the record of `index` (plan() reads them a few entities ahead).
    void prefetch(std::uint32_t index) const noexcept {
        if (index < slots_.size()) {
            __builtin_prefetch(&slots_[index]);
        }
    }
    [[nodiscard]] bool created(ecs::Entity e) const noexcept {
        if (e.index() >= slots_.size()) {
            return false;
        }
        const slot_type& s = slots_[e.index()];
        return s.stamp == epoch_ && (s.flags & created_flag) != 0 && s.version == e.version();
    }
    // The bytes an update of type `id` adds to a frame, for a type of fixed size (a value's
    // size and its index), as of build(); 0 for a string or a type registered since.
    [[nodiscard]] std::uint32_t update_bytes(std::uint32_t id) const noexcept {
        return id < update_bytes_.size() ? update_bytes_[id] : 0;
    }
    [[nodiscard]] const std::vector<ecs::Entity>& destroyed() const noexcept { return destroyed_; }
    // Whether e itself (this version) was destroyed this tick. The record is read anyway
    // (plan() asks for the mask next): the list is searched only when it says so.
    [[nodiscard]] bool was_destroyed(ecs::Entity e) const noexcept {
        return e.index() < slots_.size() && slots_[e.index()].stamp == epoch_ &&
               (slots_[e.index()].flags & destroyed_flag) != 0 && listed_destroyed(e);
    }

private:
    // One record per index, read at random for every entity of every view: 16 bytes, four to
    // a cache line, 1.6 MB for 100,000 entities, where 32 bytes spread the same reads over
    // twice the memory. Aligned to its size, so that none straddles two lines (present()
    // missed on the second). What this tick's lists removed, rare, is kept apart (removed_).
    static constexpr std::uint8_t listed_flag = 1;     // the lists name `version`
    static constexpr std::uint8_t mixed_flag = 2;      // and another version: presence not used
    static constexpr std::uint8_t created_flag = 4;    // `version` was created this tick
    static constexpr std::uint8_t destroyed_flag = 8;  // a version was destroyed: look it up
    static constexpr std::uint8_t removals_flag = 16;  // removed_ at the index is this tick's
    struct alignas(16) slot_type {
        std::uint64_t mask{0};
        std::uint32_t version{0};
        std::uint16_t stamp{0};
        std::uint8_t flags{0};
    };
    static_assert(sizeof(slot_type) == 16);
    [[nodiscard]] slot_type& slot(std::uint32_t index);
    [[nodiscard]] bool listed_destroyed(ecs::Entity e) const noexcept;

    std::uint16_t epoch_{0};
    std::vector<slot_type> slots_;
    std::vector<std::uint64_t> removed_;  // by index: the wire ids removed, when flagged
    std::vector<ecs::Entity> destroyed_;
    std::vector<ecs::Entity> destroyed_by_index_;  // sorted, for was_destroyed()
    std::vector<std::uint32_t> update_bytes_;      // by wire id
};

struct view_stats {
    std::uint64_t entered{0};
    std::uint64_t left{0};
    std::uint64_t deferred{0};  // entity sends put off for the budget, summed over ticks
    std::uint64_t bytes{0};     // tick frames sent
};

class client_view {
public:
    class scratch;
    // What the player sees, each tick.
    struct context {
        const ecs::World& world;
        const protocol::component_registry& types;
        const tick_changes& changes;
        interest_manager& interest;
        std::uint64_t tick;
        double tick_rate;
        scratch& work;
    };

    explicit client_view(std::uint32_t owner) : owner_{owner} {}

    // Decides this tick's frame for a player that should see `desired` now (each entity once):
    // destroys and leaves of what the mirror holds, entries, and the updates due, as many as
    // the byte budget allows, most urgent first. The rest waits, and is sent later with the
    // values of then. The lists returned are ctx.work's: valid until its next plan().
    [[nodiscard]] const protocol::replication_encoder::view_changes& plan(
        const context& ctx, const std::vector<ecs::Entity>& desired);
    // The frame built from plan() took `bytes`, of which `fixed_bytes` an empty frame of the
    // tick takes (encode_view_delta of nothing): only the rest is charged to the budget. The
    // empty frame goes every tick whatever the budget, and charging it let a budget below it
    // (2000 B/s at 50 Hz) send nothing ever.
    void sent(std::size_t bytes, std::size_t fixed_bytes = 0) noexcept;

    // The checksum of what the client's mirror holds: every entity held with all its values
    // sent; those whose latest values still wait are listed in `excluded` (both sides skip
    // them).
    [[nodiscard]] protocol::checksum_report checksum(const ecs::World& world,
                                                     const protocol::component_registry& types,
                                                     std::uint64_t tick, scratch& work) const;

    // The client starts over from an empty mirror (a resync).
    void reset();

    // Whole-world mode: the client holds every entity and receives the single stream that
    // every client of an interest-less server receives (nothing is tracked per entity).
    [[nodiscard]] bool whole_world() const noexcept { return whole_world_; }
    // Holds everything it should and nothing waits: it may switch to whole-world mode.
    [[nodiscard]] bool in_sync() const noexcept;
    void set_whole_world() noexcept;
    // Charges a shared frame of `bytes` to the budget, if the allowance holds what it takes
    // beyond `fixed_bytes` (an empty frame of the tick, free as in sent()).
    [[nodiscard]] bool afford(const context& ctx, std::size_t bytes, std::size_t fixed_bytes = 0);
    // Leaves whole-world mode: the client holds the world as of the last tick.
    void hold_everything(const context& ctx);

    [[nodiscard]] std::uint32_t owner() const noexcept { return owner_; }
    [[nodiscard]] std::size_t held() const noexcept { return held_count_; }
    // Appends every entity the view lists (held, or waiting to enter), in view order.
    void listed(std::vector<ecs::Entity>& out) const;
    [[nodiscard]] std::size_t waiting() const noexcept;
    [[nodiscard]] const view_stats& stats() const noexcept { return stats_; }
    // Bytes the budget allows now (negative after a frame larger than the allowance).
    [[nodiscard]] double allowance() const noexcept { return allowance_; }

private:
    // One entity the player sees: held by the mirror, or waiting to enter it. One record per
    // entity index, in index order: plan() walks them beside the `desired` list sorted the
    // same way, with no lookup per entity (a hash map's probes were a quarter of plan() with
    // 1,000 clients, each view's map cold on every tick).
    struct entry {
        std::uint64_t due{0};    // held: wire ids changed since last sent
        std::uint64_t types{0};  // held: the wire ids the mirror holds a value of
        std::uint32_t index{};
        std::uint32_t version{};
        float accumulated{0.0F};
        std::uint32_t cost : 30 {0};  // waiting: its entry's size, once estimated (0: not yet)
        std::uint32_t held : 1 {0};
    };
    static_assert(sizeof(entry) == 32);
    struct candidate {
        std::uint32_t at;  // in entries_
        std::uint32_t cost;
        float accumulated;  // a copy, so that ordering candidates reads them alone
        bool spawn;
    };

    // Whether e is the player's (its Owner is this view's owner).
    [[nodiscard]] bool owns(const ecs::World& world, ecs::Entity e) const;
    [[nodiscard]] std::size_t entry_cost(const context& ctx, ecs::Entity e) const;
    [[nodiscard]] std::size_t update_cost(const context& ctx, ecs::Entity e,
                                          std::uint64_t due) const;
    // The wire ids among `mask` that e has now.
    [[nodiscard]] static std::uint64_t present_types(const context& ctx, ecs::Entity e,
                                                     std::uint64_t mask);
    // Takes the most urgent candidates that fit in `room` bytes (of `total` for all) and defers
    // the rest.
    void select(const context& ctx, double room, std::size_t total);
    void take(const context& ctx, const candidate& c);
    // select()'s choice, taken after it in index order.
    static void pick(scratch& work, const candidate& c) noexcept;
    void defer(const candidate& c);
    // A record that no longer stands for what is in view: a held entity leaves the mirror,
    // or is destroyed in it.
    void forget(const context& ctx, const entry& old);
    // A record for e, waiting to enter, at the end of the new order.
    void add_waiting(const context& ctx, ecs::Entity e);
    void clear() noexcept;

    std::uint32_t owner_;
    std::vector<entry> entries_;
    std::size_t held_count_{0};
    std::size_t waiting_count_{0};
    double allowance_{0.0};
    bool fresh_allowance_{true};  // the next budgeted plan starts from one tick's allowance
    // The tick whose allowance was added: a client leaving whole-world mode is asked twice in
    // one tick (afford(), then plan()), and must not get that tick's allowance twice.
    std::uint64_t refilled_tick_{0};
    bool whole_world_{false};
    void refill(const context& ctx, double budget) noexcept;
    view_stats stats_;
};

// plan()'s working lists, shared by the views that one thread plans in turn: they stay in the
// cache from one client to the next. Each view had its own, and with 1,000 clients they were
// cold memory on every tick, a view's records written to a new order included.
class client_view::scratch {
    friend class client_view;
    ecs::index_order desired;          // the desired list in index order
    std::vector<entry> next;           // the records of this tick, swapped with the view's
    std::vector<std::uint8_t> picked;  // by record, under a budget: 0 waits, 1 goes, 2 spawns
    std::vector<ecs::Entity> destroyed;
    std::vector<ecs::Entity> left;
    std::vector<ecs::Entity> spawned;
    std::vector<ecs::Entity> entered;
    std::vector<std::pair<ecs::Entity, std::uint64_t>> updated;
    std::vector<std::uint64_t> updated_present;  // parallel to updated: the types it has
    std::vector<candidate> candidates;
    std::vector<ecs::Entity> urgent_entities;  // for the policy's priorities
    std::vector<float> urgency;
    std::vector<ecs::Entity> column;  // checksum(): the entities of one type
    protocol::replication_encoder::view_changes changes;
};

}  // namespace ecsnet::server
