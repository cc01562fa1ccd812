#include "ecsnet/server/replication/client_view.hpp"

#include <algorithm>
#include <limits>

#include "ecsnet/protocol/checksum.hpp"

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
    if (++epoch_ == 0) {
        std::fill(slots_.begin(), slots_.end(), slot_type{});
        epoch_ = 1;
    }
    destroyed_ = changes.destroyed;
    for (const ecs::Entity e : changes.created) {
        slot(e.index()).created = e.version();
    }
    // The lists name live entities (the change set's contract: a created entity is listed in
    // none, a destroyed one's removals are implied); should they name two versions at an
    // index, its presence bits are not trusted.
    const auto note = [this](ecs::Entity e, std::uint64_t bit, bool set) {
        slot_type& s = slot(e.index());
        if (s.mask == 0) {
            s.listed = e.version();
        } else if (s.listed != e.version()) {
            s.mixed = true;
        }
        s.mask |= bit;
        s.present = set ? s.present | bit : s.present & ~bit;
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
            updated_.emplace_back(e, send);
            updated_present_.push_back(present & send);
        }
        x.types = (x.types & ~x.due) | present;
        x.due = 0;
        x.accumulated = 0.0F;
        return;
    }
    (c.spawn ? spawned_ : entered_).push_back(e);
    x.types = present_types(ctx, e, ~std::uint64_t{0});
    x.due = 0;
    x.accumulated = 0.0F;
    x.cost = 0;
    x.held = 1;
    ++held_count_;
    --waiting_count_;
}

void client_view::forget(const entry& old) {
    if (old.held != 0) {
        left_.emplace_back(old.index, old.version);
        --held_count_;
    } else {
        --waiting_count_;
    }
}

void client_view::defer(const candidate& c) {
    (void)c;
    ++stats_.deferred;  // its accumulator keeps what it grew by
}

void client_view::put(const entry& x) {
    const auto [it, added] =
        slots_.try_emplace(x.index, static_cast<std::uint32_t>(entries_.size()) | (parity_ << 31U));
    if (added) {
        entries_.push_back(x);
    } else {
        entry& old = entries_[it->second & ~(1U << 31U)];
        held_count_ -= old.held;
        waiting_count_ -= 1U - old.held;
        old = x;
    }
    held_count_ += x.held;
    waiting_count_ += 1U - x.held;
}

const protocol::replication_encoder::view_changes& client_view::plan(
    const context& ctx, const std::vector<ecs::Entity>& desired) {
    destroyed_.clear();
    left_.clear();
    spawned_.clear();
    entered_.clear();
    updated_.clear();
    updated_present_.clear();
    candidates_.clear();
    constexpr std::uint32_t parity_bit = 1U << 31U;
    const auto slot_of = [](std::uint32_t value) { return value & ~parity_bit; };

    // Destroys of what the mirror holds go first: an index may be reused in the same tick.
    std::size_t reached = 0;
    for (const ecs::Entity e : ctx.changes.destroyed()) {
        const auto it = slots_.find(e.index());
        if (it == slots_.end()) {
            continue;
        }
        entry& x = entries_[slot_of(it->second)];
        if (x.held != 0) {
            if (x.version != e.version()) {
                continue;  // another version than the one destroyed: still held
            }
            destroyed_.push_back(e);
            --held_count_;
        } else {
            --waiting_count_;
        }
        x.reached = 1;  // dropped: neither left nor carried over
        ++reached;
        slots_.erase(it);
    }

    // Each record moves to the position of its entity in `desired`.
    parity_ ^= 1U;
    const std::uint32_t stamp = parity_ << 31U;
    next_.clear();
    next_.reserve(desired.size());
    constexpr std::size_t ahead = 8;  // the change records are cache misses: overlap them
    for (std::size_t i = 0; i < desired.size(); ++i) {
        const ecs::Entity e = desired[i];
        if (i + ahead < desired.size()) {
            ctx.changes.prefetch(desired[i + ahead].index());
        }
        const auto at = static_cast<std::uint32_t>(next_.size());
        const auto [it, added] = slots_.try_emplace(e.index(), at | stamp);
        if (!added) {
            if ((it->second & parity_bit) == stamp) {
                continue;  // listed twice
            }
            entry& old = entries_[slot_of(it->second)];
            old.reached = 1;
            ++reached;
            it->second = at | stamp;
            if (old.version == e.version()) {
                entry& x = next_.emplace_back(old);
                x.reached = 0;
                if (x.held == 0) {
                    candidates_.push_back(candidate{at, 0, 0.0F, ctx.changes.created(e)});
                } else if ((x.due |= ctx.changes.mask(e.index())) != 0) {
                    candidates_.push_back(candidate{at, 0, 0.0F, false});
                }
                continue;
            }
            // Another version at the index than the record's (recycled while it waited).
            forget(old);
        }
        entry& x = next_.emplace_back();
        x.index = e.index();
        x.version = e.version();
        ++waiting_count_;
        candidates_.push_back(candidate{at, 0, 0.0F, ctx.changes.created(e)});
    }

    // Out of view: forgotten by the mirror, still alive here. Usually every record was
    // reached and there is nothing to look for.
    if (reached != entries_.size()) {
        for (const entry& old : entries_) {
            if (old.reached != 0) {
                continue;
            }
            forget(old);
            slots_.erase(old.index);
        }
    }
    entries_.swap(next_);

    const player_interest& p = ctx.interest.player(owner_);
    const double budget = ctx.interest.budget_of(p);
    if (budget <= 0.0) {
        // No allowance is kept while unlimited: sent() would otherwise run it into a debt of
        // every frame sent so far, which a budget set later would have to pay off first.
        fresh_allowance_ = true;
        for (const candidate& c : candidates_) {
            take(ctx, c);
        }
    } else {
        refill(ctx, budget);
        // Sizes only matter under a budget.
        std::size_t total = (destroyed_.size() + left_.size()) * entity_bytes;
        for (candidate& c : candidates_) {
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
            for (const candidate& c : candidates_) {
                take(ctx, c);
            }
        } else {
            // Fiedler's priority accumulator: what waits grows more urgent each tick, scaled by
            // the policy (distance, own entities) and the types' weights; the most urgent go
            // first, as many as fit.
            urgent_entities_.clear();
            for (const candidate& c : candidates_) {
                urgent_entities_.emplace_back(entries_[c.at].index, entries_[c.at].version);
            }
            urgency_.resize(urgent_entities_.size());
            ctx.interest.priorities(ctx.world, owner_, p, urgent_entities_, urgency_);
            for (std::size_t i = 0; i < candidates_.size(); ++i) {
                candidate& c = candidates_[i];
                entry& x = entries_[c.at];
                float weight = 1.0F;
                for (std::uint64_t due = x.due, id = 0; due != 0; ++id, due >>= 1U) {
                    if ((due & 1U) != 0) {
                        weight = std::max(weight, ctx.interest.weight(static_cast<std::uint32_t>(id)));
                    }
                }
                x.accumulated += weight * urgency_[i];
                c.accumulated = x.accumulated;
            }
            double room = allowance_ - static_cast<double>((destroyed_.size() + left_.size()) * entity_bytes);
            select(ctx, room, total);
        }
    }
    stats_.entered += entered_.size() + spawned_.size();
    stats_.left += left_.size();

    // Entries in index order give runs of indices on the wire.
    std::sort(entered_.begin(), entered_.end(),
              [](ecs::Entity a, ecs::Entity b) { return a.index() < b.index(); });
    changes_ = protocol::replication_encoder::view_changes{
        destroyed_, left_, spawned_, entered_, updated_, owner_, updated_present_};
    return changes_;
}

void client_view::select(const context& ctx, double room, std::size_t total) {
    // Greedy in order of urgency: each candidate goes if it fits in what is left, and the most
    // urgent goes even when it alone exceeds the allowance, so that an entity larger than a
    // tick's budget is not starved (the debt is paid later). Sorting every candidate of every
    // client was the largest part of plan(); the same choices come from a selection: the
    // `fit` most urgent, found in linear time, all go when their sizes add up within the room
    // (the usual case), and only the rest is sorted, and only while something could still fit.
    const auto more_urgent = [](const candidate& a, const candidate& b) {
        return a.accumulated > b.accumulated;
    };
    if (candidates_.empty()) {
        return;  // only destroys and leaves, which always go
    }
    const auto first = candidates_.begin();
    const auto last = candidates_.end();
    const double average = static_cast<double>(total) / static_cast<double>(candidates_.size());
    const auto fit = std::min(candidates_.size(),
                              static_cast<std::size_t>(std::max(room, 0.0) / std::max(average, 1.0)));
    const auto middle = first + static_cast<std::ptrdiff_t>(fit);
    std::nth_element(first, middle, last, more_urgent);
    std::size_t head_bytes = 0;
    for (auto it = first; it != middle; ++it) {
        head_bytes += it->cost;
    }
    bool any = false;
    const auto greedy = [&](auto from, auto to) {
        for (auto it = from; it != to; ++it) {
            if (static_cast<double>(it->cost) <= room || (!any && room > 0.0)) {
                room -= static_cast<double>(it->cost);
                any = true;
                take(ctx, *it);
            } else {
                defer(*it);
            }
        }
    };
    if (static_cast<double>(head_bytes) <= room) {
        for (auto it = first; it != middle; ++it) {
            take(ctx, *it);
        }
        room -= static_cast<double>(head_bytes);
        any = middle != first;
    } else {
        std::sort(first, middle, more_urgent);
        greedy(first, middle);
    }
    // The rest is ordered only if one of them could still go.
    std::uint32_t smallest = std::numeric_limits<std::uint32_t>::max();
    for (auto it = middle; it != last; ++it) {
        smallest = std::min(smallest, it->cost);
    }
    if (middle != last && (static_cast<double>(smallest) <= room || (!any && room > 0.0))) {
        std::sort(middle, last, more_urgent);
        greedy(middle, last);
    } else {
        for (auto it = middle; it != last; ++it) {
            defer(*it);
        }
    }
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
    slots_.clear();
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
    const auto held = [&](ecs::Entity e, std::uint64_t types) {
        entry x;
        x.index = e.index();
        x.version = e.version();
        x.types = types;
        x.held = 1;
        return x;
    };
    ctx.world.entities().each([&](ecs::Entity e) {
        if (!ctx.changes.created(e)) {
            // The types it has, and those removed this tick: the mirror still has those.
            const std::uint64_t changed = ctx.changes.mask(e.index());
            put(held(e, present_types(ctx, e, ~std::uint64_t{0}) | changed));
        }
    });
    for (const ecs::Entity e : ctx.changes.destroyed()) {
        put(held(e, 0));
    }
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
                                                std::uint64_t tick) const {
    protocol::checksum_report report{tick, 0, 0};
    for (const entry& x : entries_) {
        if (x.held == 0) {
            continue;
        }
        if (x.due != 0) {
            report.excluded.push_back(x.index);
            continue;
        }
        report.hash += protocol::checksum::of_entity(world, types, ecs::Entity{x.index, x.version}, owner_);
        ++report.entity_count;
    }
    std::sort(report.excluded.begin(), report.excluded.end());
    return report;
}

void client_view::reset() {
    whole_world_ = false;
    clear();
}

}  // namespace ecsnet::server
