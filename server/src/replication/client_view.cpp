#include "ecsnet/server/replication/client_view.hpp"

#include <algorithm>
#include <limits>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/server/replication/select_by_urgency.hpp"

namespace ecsnet::server {

namespace {

// Rough wire sizes for the budget: an index and a version per entity, a few bytes per column.
constexpr std::size_t entity_bytes = 8;
constexpr std::size_t index_bytes = 4;
constexpr std::size_t string_overhead_bytes = 8;
// Unused budget carries over for at most this many ticks: a client quiet for a while must not
// then receive a burst that its link cannot take either.
constexpr double max_saved_ticks = 2.0;
// A cost is kept in 30 bits: no frame comes near it, and the budget only compares sizes.
constexpr std::size_t max_cost = (std::size_t{1} << 30U) - 1;

std::size_t value_cost(const protocol::component_registry& types, const ecs::World& world,
                       std::uint32_t id, ecs::Entity e) {
    const protocol::component_info& info = types.info(id);
    return info.is_string ? types.ops(id).text(world, e).size() + string_overhead_bytes
                          : info.value_bytes();
}

}  // namespace

tick_changes::slot_type& tick_changes::slot(std::uint32_t index) {
    if (index >= slots_.size()) {
        slots_.resize(std::max<std::size_t>(std::size_t{index} + 1, slots_.size() * 2));
        removed_.resize(slots_.size());
    }
    slot_type& s = slots_[index];
    if (s.stamp != epoch_) {
        s = slot_type{};
        s.stamp = epoch_;
    }
    return s;
}

void tick_changes::build(const ecs::World& world, const ecs::World::change_set_type& changes,
                         const protocol::component_registry& types) {
    (void)world;
    // A value's size walks the type's fields: once a tick here, not per entity and client.
    update_bytes_.resize(types.size());
    for (std::uint32_t id = 0; id < types.size(); ++id) {
        const protocol::component_info& info = types.info(id);
        update_bytes_[id] =
            info.is_string ? 0 : static_cast<std::uint32_t>(index_bytes + info.value_bytes());
    }
    // A 16-bit stamp wraps every 65,535 ticks (36 minutes at 30 Hz): every record is cleared
    // then, or one of 65,536 ticks ago would pass for this tick's.
    if (++epoch_ == 0) {
        std::fill(slots_.begin(), slots_.end(), slot_type{});
        epoch_ = 1;
    }
    destroyed_ = changes.destroyed;
    destroyed_by_index_ = changes.destroyed;
    std::sort(destroyed_by_index_.begin(), destroyed_by_index_.end());
    for (const ecs::Entity e : changes.destroyed) {
        slot(e.index()).flags |= destroyed_flag;
    }
    for (const ecs::Entity e : changes.created) {
        slot_type& s = slot(e.index());
        s.version = e.version();
        s.flags = static_cast<std::uint8_t>((s.flags & destroyed_flag) | created_flag);
    }
    // The lists name live entities (the change set's contract: a created entity is listed in
    // none, a destroyed one's removals are implied); should they name two versions at an
    // index, or another version than the one created there, its presence bits are not
    // trusted.
    const auto note = [this](ecs::Entity e, std::uint64_t bit, bool set) {
        slot_type& s = slot(e.index());
        if ((s.flags & (listed_flag | created_flag)) == 0) {
            s.version = e.version();
        } else if (s.version != e.version()) {
            s.flags |= mixed_flag;
        }
        s.flags |= listed_flag;
        s.mask |= bit;
        if (!set) {
            std::uint64_t& removed = removed_[e.index()];
            removed = (s.flags & removals_flag) != 0 ? removed | bit : bit;
            s.flags |= removals_flag;
        }
    };
    for (std::uint32_t id = 0; id < types.size(); ++id) {
        const auto* c = types.info(id).replicated ? changes.find(types.ops(id).type_hash) : nullptr;
        if (c == nullptr) {
            continue;
        }
        const std::uint64_t bit = std::uint64_t{1} << id;
        for (const auto* list : {&c->added, &c->updated}) {
            for (const ecs::Entity e : *list) {
                note(e, bit, true);
            }
        }
        for (const ecs::Entity e : c->removed) {
            note(e, bit, false);
        }
    }
}

bool tick_changes::listed_destroyed(ecs::Entity e) const noexcept {
    return std::binary_search(destroyed_by_index_.begin(), destroyed_by_index_.end(), e);
}

std::size_t client_view::entry_cost(const context& ctx, ecs::Entity e) const {
    std::size_t bytes = entity_bytes;
    for (std::uint32_t id = 0; id < ctx.types.size(); ++id) {
        if (ctx.types.info(id).replicated && ctx.types.ops(id).contains(ctx.world, e)) {
            bytes += value_cost(ctx.types, ctx.world, id, e);
        }
    }
    return bytes;
}

std::size_t client_view::update_cost(const context& ctx, ecs::Entity e, std::uint64_t due) const {
    std::size_t bytes = 0;
    for (std::uint32_t id = 0; due != 0; ++id, due >>= 1U) {
        if ((due & 1U) == 0) {
            continue;
        }
        // A removal is counted as a value: an upper bound, without looking the entity up.
        if (const std::uint32_t fixed = ctx.changes.update_bytes(id); fixed != 0) {
            bytes += fixed;
            continue;
        }
        const protocol::component_info& info = ctx.types.info(id);
        bytes += index_bytes + (!info.is_string                         ? info.value_bytes()
                                : ctx.types.ops(id).contains(ctx.world, e) ? value_cost(ctx.types, ctx.world, id, e)
                                                                          : 0);
    }
    return bytes;
}

std::uint64_t client_view::present_types(const context& ctx, ecs::Entity e, std::uint64_t mask) {
    // What changed this tick is known without asking the world.
    std::uint64_t known = 0;
    std::uint64_t present = ctx.changes.present(e, mask, known);
    mask &= ~known;
    for (std::uint32_t id = 0; id < ctx.types.size() && (mask >> id) != 0; ++id) {
        if (((mask >> id) & 1U) != 0 && ctx.types.ops(id).contains(ctx.world, e)) {
            present |= std::uint64_t{1} << id;
        }
    }
    return present;
}

void client_view::take(const context& ctx, const candidate& c) {
    entry& x = entries_[c.at];
    const ecs::Entity e{x.index, x.version};
    if (x.held != 0) {
        // A type added and removed again while the update waited was never in the mirror:
        // its removal would be refused there as inconsistent.
        const std::uint64_t present = present_types(ctx, e, x.due);
        if (const std::uint64_t send = x.due & (present | x.types); send != 0) {
            ctx.work.updated.emplace_back(e, send);
            ctx.work.updated_present.push_back(present & send);
        }
        x.types = (x.types & ~x.due) | present;
        x.due = 0;
        x.accumulated = 0.0F;
        return;
    }
    (c.spawn ? ctx.work.spawned : ctx.work.entered).push_back(e);
    x.types = present_types(ctx, e, ~std::uint64_t{0});
    x.due = 0;
    x.accumulated = 0.0F;
    x.cost = 0;
    x.held = 1;
    ++held_count_;
    --waiting_count_;
}

void client_view::forget(const context& ctx, const entry& old) {
    if (old.held != 0) {
        const ecs::Entity e{old.index, old.version};
        (ctx.changes.was_destroyed(e) ? ctx.work.destroyed : ctx.work.left).push_back(e);
        --held_count_;
    } else {
        --waiting_count_;
    }
}

void client_view::add_waiting(const context& ctx, ecs::Entity e) {
    if (ctx.changes.was_destroyed(e)) {
        return;  // listed by a policy that failed (the view's own list): gone since
    }
    const auto at = static_cast<std::uint32_t>(ctx.work.next.size());
    entry& x = ctx.work.next.emplace_back();
    x.index = e.index();
    x.version = e.version();
    ++waiting_count_;
    ctx.work.candidates.push_back(candidate{at, 0, 0.0F, ctx.changes.created(e)});
}

void client_view::pick(scratch& work, const candidate& c) noexcept {
    work.picked[c.at] = c.spawn ? 2 : 1;
}

void client_view::defer(const candidate& c) {
    (void)c;
    ++stats_.deferred;  // its accumulator keeps what it grew by
}

const protocol::replication_encoder::view_changes& client_view::plan(
    const context& ctx, const std::vector<ecs::Entity>& desired) {
    scratch& w = ctx.work;
    w.destroyed.clear();
    w.left.clear();
    w.spawned.clear();
    w.entered.clear();
    w.updated.clear();
    w.updated_present.clear();
    w.candidates.clear();

    // What the mirror holds and what it should hold, both in index order, walked side by
    // side: a record carries over, leaves, or is added, with no lookup, and the entities come
    // out in the order the encoder writes them.
    const std::span<const ecs::Entity> wanted = w.desired.sort(desired);
    w.next.clear();
    w.next.reserve(wanted.size());
    constexpr std::size_t ahead = 8;  // the change records are cache misses: overlap them
    std::size_t i = 0;  // in entries_
    for (std::size_t j = 0; j < wanted.size(); ++j) {
        const ecs::Entity e = wanted[j];
        if (j + ahead < wanted.size()) {
            ctx.changes.prefetch(wanted[j + ahead].index());
        }
        while (i < entries_.size() && entries_[i].index < e.index()) {
            forget(ctx, entries_[i++]);
        }
        if (i < entries_.size() && entries_[i].index == e.index()) {
            const entry& old = entries_[i++];
            // Another version at the index than the record's (recycled while it waited), or
            // the same one destroyed (listed by a failed policy): the record goes.
            if (old.version != e.version() || ctx.changes.was_destroyed(e)) {
                forget(ctx, old);
                add_waiting(ctx, e);
                continue;
            }
            const auto at = static_cast<std::uint32_t>(w.next.size());
            entry& x = w.next.emplace_back(old);
            if (x.held == 0) {
                w.candidates.push_back(candidate{at, 0, 0.0F, ctx.changes.created(e)});
            } else if ((x.due |= ctx.changes.mask(e.index())) != 0) {
                w.candidates.push_back(candidate{at, 0, 0.0F, false});
            }
            continue;
        }
        add_waiting(ctx, e);
    }
    while (i < entries_.size()) {
        forget(ctx, entries_[i++]);  // out of view, or destroyed
    }
    entries_.swap(w.next);

    const player_interest& p = ctx.interest.player(owner_);
    const double budget = ctx.interest.budget_of(p);
    if (budget <= 0.0) {
        // No allowance is kept while unlimited: sent() would otherwise run it into a debt of
        // every frame sent so far, which a budget set later would have to pay off first.
        fresh_allowance_ = true;
        for (const candidate& c : w.candidates) {
            take(ctx, c);
        }
    } else {
        refill(ctx, budget);
        // Sizes only matter under a budget.
        std::size_t total = (w.destroyed.size() + w.left.size()) * entity_bytes;
        for (candidate& c : w.candidates) {
            entry& x = entries_[c.at];
            if (x.held != 0) {
                c.cost = static_cast<std::uint32_t>(
                    std::min<std::size_t>(update_cost(ctx, {x.index, x.version}, x.due), max_cost));
            } else {
                // An entry may wait many ticks: its size is estimated once.
                if (x.cost == 0) {
                    x.cost = static_cast<std::uint32_t>(
                        std::min<std::size_t>(entry_cost(ctx, {x.index, x.version}), max_cost));
                }
                c.cost = x.cost;
            }
            total += c.cost;
        }
        if (static_cast<double>(total) <= allowance_) {
            for (const candidate& c : w.candidates) {
                take(ctx, c);
            }
        } else {
            // Fiedler's priority accumulator: what waits grows more urgent each tick, scaled by
            // the policy (distance, own entities) and the types' weights; the most urgent go
            // first, as many as fit.
            w.urgent_entities.clear();
            for (const candidate& c : w.candidates) {
                w.urgent_entities.emplace_back(entries_[c.at].index, entries_[c.at].version);
            }
            w.urgency.resize(w.urgent_entities.size());
            ctx.interest.priorities(ctx.world, owner_, p, w.urgent_entities, w.urgency);
            for (std::size_t i = 0; i < w.candidates.size(); ++i) {
                candidate& c = w.candidates[i];
                entry& x = entries_[c.at];
                float weight = 1.0F;
                for (std::uint64_t due = x.due, id = 0; due != 0; ++id, due >>= 1U) {
                    if ((due & 1U) != 0) {
                        weight = std::max(weight, ctx.interest.weight(static_cast<std::uint32_t>(id)));
                    }
                }
                x.accumulated += weight * w.urgency[i];
                c.accumulated = x.accumulated;
                if (x.held == 0 && owns(ctx.world, {x.index, x.version})) {
                    // The player's own entity entering (its spawn): the player acts on it, and
                    // from 0 its accumulator waited ticks behind updates grown for many. First
                    // in line, still within the budget (no room, no entry).
                    c.accumulated = std::numeric_limits<float>::infinity();
                }
            }
            const std::size_t gone = w.destroyed.size() + w.left.size();
            const double room = allowance_ - static_cast<double>(gone * entity_bytes);
            w.picked.assign(entries_.size(), 0);
            select(ctx, room, total);
            // Taken in index order, as the other paths take them.
            for (std::uint32_t at = 0; at < w.picked.size(); ++at) {
                if (w.picked[at] != 0) {
                    take(ctx, candidate{at, 0, 0.0F, w.picked[at] == 2});
                }
            }
        }
    }
    stats_.entered += w.entered.size() + w.spawned.size();
    stats_.left += w.left.size();

    // Every list is in index order (the records are): runs of indices on the wire, and
    // nothing for the encoder to sort.
    w.changes = protocol::replication_encoder::view_changes{
        w.destroyed, w.left, w.spawned, w.entered, w.updated, owner_, w.updated_present};
    return w.changes;
}

bool client_view::owns(const ecs::World& world, ecs::Entity e) const {
    const auto* owner = world.try_get<protocol::Owner>(e);
    return owner_ != 0 && owner != nullptr && owner->client == owner_;
}

void client_view::select(const context& ctx, double room, std::size_t total) {
    scratch& w = ctx.work;
    select_by_urgency(
        std::span<candidate>(w.candidates), room, total,
        [&](const candidate& c) { pick(w, c); }, [&](const candidate& c) { defer(c); });
}

void client_view::refill(const context& ctx, double budget) noexcept {
    if (!fresh_allowance_ && refilled_tick_ == ctx.tick) {
        return;  // once per tick
    }
    refilled_tick_ = ctx.tick;
    const double per_tick = budget / ctx.tick_rate;
    allowance_ = fresh_allowance_ ? per_tick
                                  : std::min(allowance_ + per_tick, per_tick * max_saved_ticks);
    fresh_allowance_ = false;
}

bool client_view::in_sync() const noexcept {
    if (waiting_count_ != 0) {
        return false;
    }
    return std::all_of(entries_.begin(), entries_.end(), [](const entry& x) { return x.due == 0; });
}

void client_view::set_whole_world() noexcept {
    whole_world_ = true;
    clear();
}

void client_view::clear() noexcept {
    entries_.clear();
    held_count_ = 0;
    waiting_count_ = 0;
}

bool client_view::afford(const context& ctx, std::size_t bytes, std::size_t fixed_bytes) {
    const double budget = ctx.interest.budget_of(ctx.interest.player(owner_));
    if (budget <= 0.0) {
        fresh_allowance_ = true;
        stats_.bytes += bytes;
        return true;
    }
    refill(ctx, budget);
    if (static_cast<double>(bytes - std::min(bytes, fixed_bytes)) > allowance_) {
        return false;
    }
    sent(bytes, fixed_bytes);
    return true;
}

void client_view::hold_everything(const context& ctx) {
    // What the single stream delivered: the world as of the last tick, so not this tick's
    // creations, and still this tick's destructions (plan() sends those).
    whole_world_ = false;
    clear();
    const auto hold = [&](ecs::Entity e, std::uint64_t types) {
        entry& x = entries_.emplace_back();
        x.index = e.index();
        x.version = e.version();
        x.types = types;
        x.held = 1;
    };
    ctx.world.entities().each([&](ecs::Entity e) {
        if (!ctx.changes.created(e)) {
            // The types it has, and those removed this tick: the mirror still has those.
            const std::uint64_t changed = ctx.changes.mask(e.index());
            hold(e, present_types(ctx, e, ~std::uint64_t{0}) | changed);
        }
    });
    for (const ecs::Entity e : ctx.changes.destroyed()) {
        if (!ctx.changes.created(e)) {  // created and destroyed this tick: never streamed
            hold(e, 0);
        }
    }
    // Each index once: those alive all tick, and those alive when it began.
    std::sort(entries_.begin(), entries_.end(),
              [](const entry& a, const entry& b) { return a.index < b.index; });
    held_count_ = entries_.size();
}

void client_view::sent(std::size_t bytes, std::size_t fixed_bytes) noexcept {
    allowance_ -= static_cast<double>(bytes - std::min(bytes, fixed_bytes));
    stats_.bytes += bytes;
}

void client_view::listed(std::vector<ecs::Entity>& out) const {
    out.reserve(out.size() + entries_.size());
    for (const entry& x : entries_) {
        out.emplace_back(x.index, x.version);
    }
}

std::size_t client_view::waiting() const noexcept {
    std::size_t n = waiting_count_;
    for (const entry& x : entries_) {
        n += x.held != 0 && x.due != 0 ? 1 : 0;
    }
    return n;
}

protocol::checksum_report client_view::checksum(const ecs::World& world,
                                                const protocol::component_registry& types,
                                                std::uint64_t tick, scratch& work) const {
    // What checksum::of_entity() sums, entity by entity, summed type by type: the records
    // know which types each entity has (all its values were sent), so the world is asked
    // for the values alone, in one typed loop per type.
    protocol::checksum_report report{tick, 0, 0};
    std::uint64_t types_held = 0;
    for (const entry& x : entries_) {
        if (x.held == 0) {
            continue;
        }
        if (x.due != 0) {
            report.excluded.push_back(x.index);  // ascending, as the records are
            continue;
        }
        report.hash += protocol::checksum::entity_term(x.index, x.version);
        ++report.entity_count;
        types_held |= x.types;
    }
    for (std::uint32_t id = 0; id < types.size() && (types_held >> id) != 0; ++id) {
        const protocol::component_info& info = types.info(id);
        if (((types_held >> id) & 1U) == 0 || !info.replicated) {
            continue;
        }
        work.column.clear();
        for (const entry& x : entries_) {
            if (x.held == 0 || x.due != 0 || ((x.types >> id) & 1U) == 0) {
                continue;
            }
            const ecs::Entity e{x.index, x.version};
            if (info.owner_only && !owns(world, e)) {
                continue;
            }
            work.column.push_back(e);
        }
        report.hash += types.ops(id).checksum_of(world, id, work.column);
    }
    return report;
}

void client_view::reset() {
    whole_world_ = false;
    clear();
}

}  // namespace ecsnet::server
