#include "ecsnet/client/prediction.hpp"

#include <algorithm>
#include <utility>
#include <stdexcept>

// The algorithms are described for any language in docs/PREDICTION.md; this file follows it.
namespace ecsnet::client {

using clock = std::chrono::steady_clock;

// One entity's predicted types at one tick: each type's bytes at its offset, and whether the
// entity had it.
struct prediction::entity_state {
    std::uint64_t id{0};  // the tracked entity's
    std::vector<std::byte> bytes;
    std::vector<bool> present;
};

struct prediction::state_slot {
    std::uint64_t tick{0};  // 0: empty (server ticks start at 1)
    std::vector<entity_state> entities;
};

struct prediction::input_slot {
    std::uint64_t tick{0};
    std::vector<std::pair<ecs::Entity, protocol::component_set>> values;  // by server entity
};

struct prediction::tracked_entity {
    std::uint64_t id{0};
    ecs::Entity server;  // null for a pending spawn
    // Null while a replay has taken a pending spawn back to before its tick, until the replay
    // makes it again.
    ecs::Entity local;
    // A predicted spawn: its tick and key; pending until the server's entity is matched.
    std::uint64_t spawn_tick{0};
    bool pending{false};
    std::vector<std::byte> key;
    // Smoothing: per type (by index), what a correction left to decay; empty when none.
    std::vector<std::vector<double>> offsets;
    // The rendered values before a correction, until its replay catches up.
    std::vector<std::vector<double>> before;
};

const char* to_string(spawn_refusal reason) noexcept {
    switch (reason) {
        case spawn_refusal::unconfirmed:
            return "unconfirmed";
        case spawn_refusal::undone:
            return "undone";
    }
    return "unknown";
}

prediction::prediction(double dt, prediction_options options)
    : options_{options},
      world_{ecs::World::make(ecs::world_options{.track_changes = false})},
      systems_{std::make_unique<ecs::Scheduler>(dt)} {
    if (options_.history_ticks < 2) {
        throw std::invalid_argument("prediction: history_ticks must be at least 2");
    }
    if (options_.replay_budget_ticks < 1) {
        throw std::invalid_argument("prediction: replay_budget_ticks must be at least 1");
    }
    if (!(options_.snap_distance >= 0.0) || options_.half_life.count() < 0) {
        throw std::invalid_argument("prediction: snap_distance and half_life cannot be negative");
    }
    states_.resize(options_.history_ticks);
    inputs_.resize(options_.history_ticks);
}

prediction::~prediction() = default;

prediction& prediction::add(type_ops ops) {
    if (!tracked_.empty()) {
        throw std::logic_error("prediction: declare the predicted types before the first track()");
    }
    for (type_ops& known : types_) {
        if (known.key == ops.key) {
            known.smoothed = known.smoothed || ops.smoothed;
            return *this;
        }
    }
    types_.push_back(std::move(ops));
    return *this;
}

// ---- entities -------------------------------------------------------------------------------

prediction::tracked_entity* prediction::find(ecs::Entity server_entity) noexcept {
    return const_cast<tracked_entity*>(std::as_const(*this).find(server_entity));
}

const prediction::tracked_entity* prediction::find(ecs::Entity server_entity) const noexcept {
    if (server_entity.is_null()) {
        return nullptr;  // not a pending spawn's
    }
    for (const tracked_entity& t : tracked_) {
        if (t.server == server_entity) {
            return &t;
        }
    }
    return nullptr;
}

// tracked_ is in the order of ids (each new one gets the next id and goes last; erase keeps the
// order), and so is every saved state (save_state walks tracked_): both are searched by id.
const prediction::tracked_entity* prediction::find_id(std::uint64_t id) const noexcept {
    const auto it = std::lower_bound(tracked_.begin(), tracked_.end(), id,
                                     [](const tracked_entity& t, std::uint64_t v) { return t.id < v; });
    return it != tracked_.end() && it->id == id ? &*it : nullptr;
}

prediction::tracked_entity& prediction::add_tracked(ecs::Entity server_entity, ecs::Entity local) {
    tracked_entity t;
    t.id = next_id_++;
    t.server = server_entity;
    t.local = local;
    t.offsets.resize(types_.size());
    t.before.resize(types_.size());
    tracked_.push_back(std::move(t));
    return tracked_.back();
}

ecs::Entity prediction::track(ecs::Entity server_entity, const protocol::mirror& mirror) {
    if (const tracked_entity* known = find(server_entity)) {
        return known->local;
    }
    if (!mirror.contains(server_entity)) {
        throw std::invalid_argument("prediction: track() of an entity the mirror does not have");
    }
    match_spawns(mirror.tick(), mirror);  // the server's entity of a pending spawn: matched
    if (const tracked_entity* known = find(server_entity)) {
        return known->local;
    }
    tracked_entity& t = add_tracked(server_entity, world_->create());
    std::vector<std::byte> scratch;
    for (const type_ops& type : types_) {
        scratch.assign(type.size, std::byte{});
        if (type.kind == op_kind::replicated) {
            type.load(*world_, t.local, type.fetch(mirror, server_entity, scratch.data()) ? scratch.data() : nullptr);
        } else {
            type.init(*world_, t.local);  // the game may set its own values on local()
        }
    }
    const ecs::Entity local = t.local;
    if (world_tick_ > 0) {
        save_state(world_tick_);  // rendered from now on
    }
    if (tick_ == 0) {
        tracked_tick_ = std::max(tracked_tick_, mirror.tick());
    }
    return local;
}

void prediction::untrack(ecs::Entity server_entity) {
    if (server_entity.is_null()) {
        return;  // a pending spawn goes by refuse()
    }
    const auto it = std::find_if(tracked_.begin(), tracked_.end(),
                                 [&](const tracked_entity& t) { return t.server == server_entity; });
    if (it == tracked_.end()) {
        return;
    }
    if (world_->valid(it->local)) {
        world_->destroy(it->local);
    }
    tracked_.erase(it);
}

std::size_t prediction::size() const noexcept { return tracked_.size(); }

bool prediction::tracks(ecs::Entity server_entity) const noexcept {
    return find(server_entity) != nullptr;
}

ecs::Entity prediction::local(ecs::Entity server_entity) const noexcept {
    const tracked_entity* t = find(server_entity);
    return t == nullptr ? ecs::Entity{} : t->local;
}

// ---- the rings ------------------------------------------------------------------------------

prediction::state_slot* prediction::state_at(std::uint64_t tick) noexcept {
    state_slot& slot = states_[tick % states_.size()];
    return tick != 0 && slot.tick == tick ? &slot : nullptr;
}

const prediction::state_slot* prediction::state_at(std::uint64_t tick) const noexcept {
    const state_slot& slot = states_[tick % states_.size()];
    return tick != 0 && slot.tick == tick ? &slot : nullptr;
}

const prediction::input_slot* prediction::input_at(std::uint64_t tick) const noexcept {
    const input_slot& slot = inputs_[tick % inputs_.size()];
    return tick != 0 && slot.tick == tick ? &slot : nullptr;
}

std::size_t prediction::offset_in_state(std::size_t type) const noexcept {
    std::size_t at = 0;
    for (std::size_t k = 0; k < type && k < types_.size(); ++k) {
        at += types_[k].size;
    }
    return at;
}

void prediction::save_state(std::uint64_t tick) {
    state_slot& slot = states_[tick % states_.size()];
    slot.tick = tick;
    const std::size_t width = offset_in_state(types_.size());
    std::size_t n = 0;
    for (const tracked_entity& t : tracked_) {
        if (t.local.is_null()) {
            continue;  // a pending spawn a replay has not made again yet
        }
        if (slot.entities.size() <= n) {
            slot.entities.emplace_back();
        }
        entity_state& out = slot.entities[n++];
        out.id = t.id;
        out.bytes.assign(width, std::byte{});
        out.present.assign(types_.size(), false);
        std::size_t at = 0;
        for (std::size_t k = 0; k < types_.size(); ++k) {
            out.present[k] = types_[k].save(*world_, t.local, out.bytes.data() + at);
            at += types_[k].size;
        }
    }
    slot.entities.resize(n);
}

void prediction::set_input(std::uint64_t tick, ecs::Entity server_entity,
                           const protocol::component_set& values) {
    if (tick <= tick_) {
        throw std::invalid_argument("prediction: set_input for tick " + std::to_string(tick) +
                                    ", not newer than the predicted tick " + std::to_string(tick_));
    }
    input_slot& slot = inputs_[tick % inputs_.size()];
    if (slot.tick != tick) {
        slot.tick = tick;
        slot.values.clear();
    }
    for (auto& entry : slot.values) {
        if (entry.first == server_entity) {
            entry.second = values;
            return;
        }
    }
    slot.values.emplace_back(server_entity, values);
}

// ---- running ticks --------------------------------------------------------------------------

void prediction::run_tick(std::uint64_t tick) {
    if (const input_slot* in = input_at(tick)) {
        for (const auto& [server, values] : in->values) {
            if (const tracked_entity* t = find(server)) {
                for (const type_ops& type : types_) {
                    if (type.kind == op_kind::input) {
                        (void)type.apply_input(*world_, t->local, values);
                    }
                }
            }
        }
    }
    // Without input for the tick, the input components keep their last value: the server
    // repeats the last input it applied too.
    systems_->set_tick(tick);
    const auto report = systems_->run(*world_);
    stats_.system_failures += report.system_failures.size();
    collect_spawns(tick);
    if (tick <= highest_run_) {
        ++stats_.ticks_replayed;
    } else {
        ++stats_.ticks_predicted;
        highest_run_ = tick;
    }
    world_tick_ = tick;
    save_state(tick);
}

bool prediction::catch_up() {
    const auto started = clock::now();
    std::size_t ran = 0;
    while (world_tick_ < tick_) {
        // New ticks are not a replay: only a replay's ticks count against the budget.
        if (world_tick_ < highest_run_) {
            if (ran >= options_.replay_budget_ticks ||
                (ran > 0 && clock::now() - started >= options_.replay_budget_time)) {
                ++stats_.replays_deferred;
                return false;
            }
            ++ran;
        }
        run_tick(world_tick_ + 1);
    }
    // A pending spawn that the replay did not make again: the corrected state could not.
    for (std::size_t i = tracked_.size(); i-- > 0;) {
        if (tracked_[i].pending && tracked_[i].local.is_null()) {
            refuse(i, spawn_refusal::undone);
        }
    }
    if (correcting_) {
        correcting_ = false;
        settle_offsets();
    }
    return true;
}

void prediction::advance_to(std::uint64_t tick) {
    if (tick > tick_) {
        if (tick_ == 0) {
            // The first prediction starts from the state as tracked, at the mirror's tick then,
            // and runs the ticks from there too: the server's next ticks have records to compare
            // with, and a kept type (a cooldown) counts them as the server did. (Started at the
            // input tick, a server tick before it was adopted, and the kept types stayed where
            // the prediction had taken them: out of step for good.)
            const bool held =
                tracked_tick_ > 0 && tracked_tick_ < tick && tick - tracked_tick_ < states_.size();
            world_tick_ = held ? tracked_tick_ : tick - 1;
            highest_run_ = world_tick_;
            if (world_tick_ > 0) {
                save_state(world_tick_);
            }
        }
        tick_ = tick;
    }
    (void)catch_up();
}

// ---- reconciliation -------------------------------------------------------------------------

// The tracked entities as at `tick`: the replicated types from the server's state in `mirror`,
// the others from the prediction's own record `own`; without a mirror, everything from `own`.
void prediction::restore(const protocol::mirror* mirror, const state_slot* own,
                         std::uint64_t tick) {
    std::vector<std::byte> scratch;
    for (tracked_entity& t : tracked_) {
        const entity_state* saved = nullptr;
        if (own != nullptr) {
            const auto it = std::lower_bound(own->entities.begin(), own->entities.end(), t.id,
                                             [](const entity_state& e, std::uint64_t v) { return e.id < v; });
            saved = it != own->entities.end() && it->id == t.id ? &*it : nullptr;
        }
        if (t.pending && (t.spawn_tick > tick || saved == nullptr)) {
            // Made after `tick`: the replay makes it again (collect_spawns), or it is undone.
            // (Made before a tick the history no longer holds: it cannot be taken back there,
            // and is undone.)
            if (!t.local.is_null() && world_->valid(t.local)) {
                world_->destroy(t.local);
            }
            t.local = ecs::Entity{};
            continue;
        }
        if (t.local.is_null()) {
            continue;
        }
        std::size_t at = 0;
        for (std::size_t k = 0; k < types_.size(); ++k) {
            const type_ops& type = types_[k];
            if (t.pending || mirror == nullptr) {
                // The server has no such entity yet: the spawn goes on from its own state.
                if (saved != nullptr) {
                    type.load(*world_, t.local, saved->present[k] ? saved->bytes.data() + at : nullptr);
                }
            } else if (type.kind == op_kind::replicated) {
                scratch.assign(type.size, std::byte{});
                type.load(*world_, t.local,
                          type.fetch(*mirror, t.server, scratch.data()) ? scratch.data() : nullptr);
            } else if (saved != nullptr && saved->present[k]) {
                type.load(*world_, t.local, saved->bytes.data() + at);
            }
            // Else (tracked after that tick, or a server state beyond the history): the kept
            // and input types stay as they are.
            at += type.size;
        }
    }
    world_tick_ = tick;
    save_state(tick);
}

// What an ack says of the ticks before it, beyond that it ran on applied_tick's input:
// - when applied_tick is older, nothing newer was applied in between, so every tick after it
//   ran on its input too (this covers the acks a resync dropped);
// - the server acks every tick from the first Input it got on: the first ack heard names the
//   first tick that Input reached, and every input set for a tick before it arrived late (the
//   ack's count of late inputs says so), those ticks ran without any of ours.
void prediction::acknowledge(const protocol::input_ack& ack) {
    const bool first = acked_tick_ == 0;
    acked_tick_ = std::max(acked_tick_, ack.tick);
    if (first && ack.late > 0 && ack.tick > 1) {
        correct_inputs(1, ack.tick - 1, nullptr);
    }
    if (ack.applied_tick >= ack.tick) {
        return;  // the tick ran on its own input
    }
    const input_slot* applied = input_at(ack.applied_tick);
    if (ack.applied_tick != 0 && applied == nullptr) {
        return;  // the history has forgotten what the server used: reconcile corrects what it can
    }
    correct_inputs(ack.applied_tick + 1, ack.tick, applied);
}

// The inputs of the ticks `from .. to` still in the history become `used`'s (none when null).
void prediction::correct_inputs(std::uint64_t from, std::uint64_t to, const input_slot* used) {
    const auto values = used != nullptr ? used->values : decltype(used->values){};
    const std::uint64_t oldest = to >= inputs_.size() ? to - inputs_.size() + 1 : 1;
    for (std::uint64_t t = std::max(from, oldest); t <= to; ++t) {
        input_slot& slot = inputs_[t % inputs_.size()];
        if (slot.tick != t || slot.values.empty() || slot.values == values) {
            continue;  // no input set for it (the last one went on on both sides), or the same
        }
        slot.values = values;
        ++stats_.inputs_corrected;
        if (t <= world_tick_) {
            corrected_from_ = corrected_from_ == 0 ? t : std::min(corrected_from_, t);
        }
    }
}

// Runs the prediction again from before the oldest corrected input, on its own state (what the
// server never sends, a kept cooldown, went on from the wrong input: only a rerun mends it).
// False when that rerun waits for the next call's budget: `tick`'s record is not fresh yet.
bool prediction::rerun_corrected_inputs(std::uint64_t tick) {
    const std::uint64_t from = std::exchange(corrected_from_, 0);
    const state_slot* before = from > 1 ? state_at(from - 1) : nullptr;
    if (before == nullptr) {
        return true;  // older than the history: the comparison corrects what it can
    }
    if (!correcting_) {
        remember_rendered();
    }
    restore(nullptr, before, from - 1);
    correcting_ = true;
    return catch_up() || world_tick_ >= tick;
}

void prediction::reconcile(std::uint64_t tick, const protocol::mirror& mirror) {
    for (std::size_t i = tracked_.size(); i-- > 0;) {
        if (!tracked_[i].pending && !mirror.contains(tracked_[i].server)) {
            untrack(tracked_[i].server);
        }
    }
    if (tick == 0) {
        return;
    }
    match_spawns(tick, mirror);
    for (std::size_t i = tracked_.size(); i-- > 0;) {
        const tracked_entity& t = tracked_[i];
        if (t.pending && t.spawn_tick + options_.spawn_confirm_ticks <= tick) {
            refuse(i, spawn_refusal::unconfirmed);
        }
    }
    if (tracked_.empty()) {
        return;
    }
    if (corrected_from_ != 0 && !rerun_corrected_inputs(tick)) {
        return;  // the next whole tick is compared
    }
    if (tick > tick_ && tick_ > 0 && tick - tick_ < states_.size()) {
        // The server is ahead of a running prediction (the client stalled): predict up to its
        // tick, on the last input as the server did, and compare there. Adopting instead would
        // leave the kept types where the prediction was, behind the server's for good.
        tick_ = tick;
        if (!catch_up()) {
            return;  // a replay waits for the budget: the next whole tick is compared
        }
    }
    if (tick > tick_) {
        // The server is ahead of the prediction as it starts, or further ahead than the history:
        // adopt.
        ++stats_.adopted;
        restore(&mirror, state_at(tick), tick);
        tick_ = tick;
        highest_run_ = std::max(highest_run_, tick);
        correcting_ = false;
        return;
    }
    const state_slot* predicted = state_at(tick);
    if (predicted == nullptr) {
        ++stats_.too_old;
        remember_rendered();
        restore(&mirror, nullptr, tick);
        correcting_ = true;
        (void)catch_up();
        return;
    }
    ++stats_.checks;
    bool all_agree = true;
    std::vector<std::byte> server(64);
    for (const entity_state& e : predicted->entities) {
        const tracked_entity* t = find_id(e.id);
        if (t == nullptr || t->pending) {
            continue;  // nothing of the server's to compare a pending spawn with
        }
        std::size_t at = 0;
        for (std::size_t k = 0; k < types_.size(); ++k) {
            const type_ops& type = types_[k];
            if (type.kind == op_kind::replicated) {
                server.assign(std::max<std::size_t>(type.size, 1), std::byte{});
                const bool server_has = type.fetch(mirror, t->server, server.data());
                double error = 0;
                const bool agree =
                    server_has == e.present[k] &&
                    (!server_has ||
                     (type.agrees_by_rule != nullptr
                          ? type.agrees_by_rule(type.rule, e.bytes.data() + at, server.data())
                          : type.agrees(e.bytes.data() + at, server.data(), options_.tolerance_steps,
                                        error)));
                if (!agree) {
                    if (all_agree) {
                        ++stats_.mispredictions;
                    }
                    all_agree = false;
                    stats_.largest_error = std::max(stats_.largest_error, error);
                    if (on_misprediction) {
                        on_misprediction(misprediction{tick, t->server, type.name, error});
                    }
                    break;  // one per entity: the first type that disagrees
                }
            }
            at += type.size;
        }
    }
    if (all_agree) {
        return;  // the prediction stands: no replay
    }
    if (!correcting_) {
        remember_rendered();  // a replay already waiting keeps what was shown before it
    }
    restore(&mirror, predicted, tick);
    correcting_ = true;
    (void)catch_up();
}

// ---- smoothing ------------------------------------------------------------------------------

const std::byte* prediction::newest(ecs::Entity server_entity, std::size_t type) const noexcept {
    const tracked_entity* t = find(server_entity);
    return t == nullptr ? nullptr : newest_of(t->id, type);
}

const std::byte* prediction::newest_of(std::uint64_t id, std::size_t type) const noexcept {
    const state_slot* slot = state_at(tick_);
    if (type >= types_.size() || slot == nullptr) {
        return nullptr;
    }
    const auto it = std::lower_bound(slot->entities.begin(), slot->entities.end(), id,
                                     [](const entity_state& e, std::uint64_t v) { return e.id < v; });
    if (it == slot->entities.end() || it->id != id) {
        return nullptr;
    }
    return it->present[type] ? it->bytes.data() + offset_in_state(type) : nullptr;
}

const std::vector<double>* prediction::offset_of(ecs::Entity server_entity,
                                                 std::size_t type) const noexcept {
    const tracked_entity* t = find(server_entity);
    return t == nullptr ? nullptr : offset_of_id(t->id, type);
}

const std::vector<double>* prediction::offset_of_id(std::uint64_t id, std::size_t type) const noexcept {
    const tracked_entity* t = find_id(id);
    if (t == nullptr || type >= t->offsets.size() || t->offsets[type].empty()) {
        return nullptr;
    }
    return &t->offsets[type];
}

double prediction::length(const std::vector<double>& v) noexcept {
    double squares = 0;
    for (const double x : v) {
        squares += x * x;
    }
    return std::sqrt(squares);
}

void prediction::remember_rendered() {
    for (tracked_entity& t : tracked_) {
        for (std::size_t k = 0; k < types_.size(); ++k) {
            t.before[k].clear();
            const type_ops& type = types_[k];
            if (!type.smoothed || type.floats == 0) {
                continue;
            }
            if (const std::byte* bytes = newest_of(t.id, k)) {
                t.before[k].resize(type.floats);
                type.to_floats(bytes, t.before[k].data());
                // What is on screen: the prediction plus the offset still decaying.
                if (!t.offsets[k].empty()) {
                    for (std::size_t i = 0; i < type.floats; ++i) {
                        t.before[k][i] += t.offsets[k][i];
                    }
                }
            }
        }
    }
}

void prediction::settle_offsets() {
    std::vector<double> now;
    for (tracked_entity& t : tracked_) {
        for (std::size_t k = 0; k < types_.size(); ++k) {
            const type_ops& type = types_[k];
            if (t.before[k].empty()) {
                continue;
            }
            const std::byte* bytes = newest_of(t.id, k);
            if (bytes == nullptr) {
                t.before[k].clear();
                continue;
            }
            now.assign(type.floats, 0.0);
            type.to_floats(bytes, now.data());
            std::vector<double> offset(type.floats);
            for (std::size_t i = 0; i < type.floats; ++i) {
                offset[i] = t.before[k][i] - now[i];
            }
            t.before[k].clear();
            if (length(offset) > options_.snap_distance) {
                ++stats_.snaps;
                t.offsets[k].clear();
            } else {
                t.offsets[k] = std::move(offset);
            }
        }
    }
}

void prediction::decay(std::chrono::duration<double> elapsed) noexcept {
    const double half_life = std::chrono::duration<double>(options_.half_life).count();
    const double keep = half_life > 0.0 ? std::exp2(-elapsed.count() / half_life) : 0.0;
    for (tracked_entity& t : tracked_) {
        for (std::vector<double>& offset : t.offsets) {
            for (double& x : offset) {
                x *= keep;
            }
            if (!offset.empty() && length(offset) < 1e-6) {
                offset.clear();
            }
        }
    }
}

// ---- predicted spawns -----------------------------------------------------------------------

void prediction::collect_spawns(std::uint64_t tick) {
    if (spawn_key_ >= types_.size()) {
        return;
    }
    const type_ops& key_type = types_[spawn_key_];
    std::vector<ecs::Entity> made;
    key_type.each_with(*world_, made);
    std::vector<std::byte> key(key_type.size);
    for (const ecs::Entity e : made) {
        const bool known = std::any_of(tracked_.begin(), tracked_.end(),
                                       [&](const tracked_entity& t) { return t.local == e; });
        if (known) {
            continue;
        }
        (void)key_type.save(*world_, e, key.data());
        const auto same = std::find_if(tracked_.begin(), tracked_.end(), [&](const tracked_entity& t) {
            return !t.key.empty() && key_type.same(t.key.data(), key.data());
        });
        if (same != tracked_.end()) {
            if (same->pending && same->local.is_null()) {
                same->local = e;  // a replay made it again: the same spawn goes on
            } else {
                world_->destroy(e);  // made already: never twice
            }
            continue;
        }
        tracked_entity& t = add_tracked(ecs::Entity{}, e);
        t.pending = true;
        t.spawn_tick = tick;
        t.key = key;
        ++stats_.spawns_predicted;
    }
}

void prediction::match_spawns(std::uint64_t tick, const protocol::mirror& mirror) {
    if (spawn_key_ >= types_.size()) {
        return;
    }
    const bool waiting = std::any_of(tracked_.begin(), tracked_.end(), [&](const tracked_entity& t) {
        return t.pending && t.spawn_tick <= tick;
    });
    if (!waiting) {
        return;
    }
    const type_ops& key_type = types_[spawn_key_];
    std::vector<std::byte> key(key_type.size);
    mirror.each([&](ecs::Entity server_entity) {
        if (!key_type.fetch(mirror, server_entity, key.data()) || find(server_entity) != nullptr) {
            return;
        }
        for (tracked_entity& t : tracked_) {
            if (t.pending && key_type.same(t.key.data(), key.data())) {
                t.pending = false;
                t.server = server_entity;
                ++stats_.spawns_matched;
                if (on_spawn_matched) {
                    on_spawn_matched(predicted_spawn{t.id, t.spawn_tick, server_entity});
                }
                return;
            }
        }
    });
}

void prediction::refuse(std::size_t index, spawn_refusal reason) {
    const tracked_entity t = tracked_[index];
    if (!t.local.is_null() && world_->valid(t.local)) {
        world_->destroy(t.local);
    }
    tracked_.erase(tracked_.begin() + static_cast<std::ptrdiff_t>(index));
    ++stats_.spawns_refused;
    if (on_spawn_refused) {
        on_spawn_refused(predicted_spawn{t.id, t.spawn_tick, ecs::Entity{}}, reason);
    }
}

std::vector<prediction::declared_type> prediction::declared_types() const {
    std::vector<declared_type> out;
    out.reserve(types_.size());
    for (const type_ops& t : types_) {
        out.push_back(declared_type{t.name, t.kind != op_kind::local, t.kind == op_kind::input, t.fields});
    }
    return out;
}

std::vector<ecs::Entity> prediction::tracked() const {
    std::vector<ecs::Entity> out;
    for (const tracked_entity& t : tracked_) {
        if (!t.pending) {
            out.push_back(t.server);
        }
    }
    return out;
}

bool prediction::rendered_fields(ecs::Entity server_entity, std::size_t type, double* out) const {
    const tracked_entity* t = find(server_entity);
    return t != nullptr && rendered_fields(predicted_spawn{t->id, t->spawn_tick, t->server}, type, out);
}

bool prediction::rendered_fields(const predicted_spawn& spawn, std::size_t type, double* out) const {
    const std::byte* bytes = newest_of(spawn.id, type);
    if (bytes == nullptr) {
        return false;
    }
    const std::vector<double>* offset = offset_of_id(spawn.id, type);
    types_[type].to_fields(bytes, offset == nullptr ? nullptr : offset->data(), out);
    return true;
}

std::vector<predicted_spawn> prediction::spawns_pending() const {
    std::vector<predicted_spawn> out;
    for (const tracked_entity& t : tracked_) {
        if (t.pending) {
            out.push_back(predicted_spawn{t.id, t.spawn_tick, ecs::Entity{}});
        }
    }
    return out;
}

}  // namespace ecsnet::client
