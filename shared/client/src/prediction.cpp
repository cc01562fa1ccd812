#include "ecsnet/client/prediction.hpp"

#include <algorithm>
#include <stdexcept>

// The algorithms are described for any language in docs/PREDICTION.md; this file follows it.
namespace ecsnet::client {

using clock = std::chrono::steady_clock;

// One entity's predicted types at one tick: each type's bytes at its offset, and whether the
// entity had it.
struct prediction::entity_state {
    ecs::Entity server;
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
    ecs::Entity server;
    ecs::Entity local;
    // Smoothing: per type (by index), what a correction left to decay; empty when none.
    std::vector<std::vector<double>> offsets;
    // The rendered values before a correction, until its replay catches up.
    std::vector<std::vector<double>> before;
};

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
    for (tracked_entity& t : tracked_) {
        if (t.server == server_entity) {
            return &t;
        }
    }
    return nullptr;
}

const prediction::tracked_entity* prediction::find(ecs::Entity server_entity) const noexcept {
    for (const tracked_entity& t : tracked_) {
        if (t.server == server_entity) {
            return &t;
        }
    }
    return nullptr;
}

ecs::Entity prediction::track(ecs::Entity server_entity, const protocol::mirror& mirror) {
    if (const tracked_entity* known = find(server_entity)) {
        return known->local;
    }
    if (!mirror.contains(server_entity)) {
        throw std::invalid_argument("prediction: track() of an entity the mirror does not have");
    }
    tracked_entity t;
    t.server = server_entity;
    t.local = world_->create();
    t.offsets.resize(types_.size());
    t.before.resize(types_.size());
    std::vector<std::byte> scratch;
    for (const type_ops& type : types_) {
        scratch.assign(type.size, std::byte{});
        if (type.kind == op_kind::replicated) {
            type.load(*world_, t.local, type.fetch(mirror, server_entity, scratch.data()) ? scratch.data() : nullptr);
        } else {
            type.init(*world_, t.local);  // the game may set its own values on local()
        }
    }
    tracked_.push_back(std::move(t));
    if (world_tick_ > 0) {
        save_state(world_tick_);  // rendered from now on
    }
    return tracked_.back().local;
}

void prediction::untrack(ecs::Entity server_entity) {
    const auto it = std::find_if(tracked_.begin(), tracked_.end(),
                                 [&](const tracked_entity& t) { return t.server == server_entity; });
    if (it == tracked_.end()) {
        return;
    }
    world_->destroy(it->local);
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

void prediction::save_state(std::uint64_t tick) {
    state_slot& slot = states_[tick % states_.size()];
    slot.tick = tick;
    slot.entities.resize(tracked_.size());
    std::size_t width = 0;
    for (const type_ops& type : types_) {
        width += type.size;
    }
    for (std::size_t i = 0; i < tracked_.size(); ++i) {
        entity_state& out = slot.entities[i];
        out.server = tracked_[i].server;
        out.bytes.assign(width, std::byte{});
        out.present.assign(types_.size(), false);
        std::size_t at = 0;
        for (std::size_t k = 0; k < types_.size(); ++k) {
            out.present[k] = types_[k].save(*world_, tracked_[i].local, out.bytes.data() + at);
            at += types_[k].size;
        }
    }
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
    if (correcting_) {
        correcting_ = false;
        settle_offsets();
    }
    return true;
}

void prediction::advance_to(std::uint64_t tick) {
    if (tick > tick_) {
        if (tick_ == 0) {
            world_tick_ = tick - 1;  // the first prediction starts from the state as tracked
            highest_run_ = tick - 1;
        }
        tick_ = tick;
    }
    (void)catch_up();
}

// ---- reconciliation -------------------------------------------------------------------------

void prediction::restore(const protocol::mirror& mirror, const state_slot* own, std::uint64_t tick) {
    std::vector<std::byte> scratch;
    for (const tracked_entity& t : tracked_) {
        const entity_state* saved = nullptr;
        if (own != nullptr) {
            for (const entity_state& e : own->entities) {
                if (e.server == t.server) {
                    saved = &e;
                }
            }
        }
        std::size_t at = 0;
        for (std::size_t k = 0; k < types_.size(); ++k) {
            const type_ops& type = types_[k];
            if (type.kind == op_kind::replicated) {
                scratch.assign(type.size, std::byte{});
                type.load(*world_, t.local, type.fetch(mirror, t.server, scratch.data()) ? scratch.data() : nullptr);
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

void prediction::reconcile(std::uint64_t tick, const protocol::mirror& mirror) {
    for (std::size_t i = tracked_.size(); i-- > 0;) {
        if (!mirror.contains(tracked_[i].server)) {
            untrack(tracked_[i].server);
        }
    }
    if (tracked_.empty() || tick == 0) {
        return;
    }
    if (tick > tick_) {
        // The server is at or ahead of the prediction (it starts, or fell behind): adopt.
        ++stats_.adopted;
        restore(mirror, state_at(tick), tick);
        tick_ = tick;
        highest_run_ = std::max(highest_run_, tick);
        correcting_ = false;
        return;
    }
    const state_slot* predicted = state_at(tick);
    if (predicted == nullptr) {
        ++stats_.too_old;
        remember_rendered();
        restore(mirror, nullptr, tick);
        correcting_ = true;
        (void)catch_up();
        return;
    }
    ++stats_.checks;
    bool all_agree = true;
    std::vector<std::byte> server(64);
    for (const entity_state& e : predicted->entities) {
        if (find(e.server) == nullptr) {
            continue;
        }
        std::size_t at = 0;
        for (std::size_t k = 0; k < types_.size(); ++k) {
            const type_ops& type = types_[k];
            if (type.kind == op_kind::replicated) {
                server.assign(std::max<std::size_t>(type.size, 1), std::byte{});
                const bool server_has = type.fetch(mirror, e.server, server.data());
                double error = 0;
                const bool agree = server_has == e.present[k] &&
                                   (!server_has || type.agrees(e.bytes.data() + at, server.data(),
                                                               options_.tolerance_steps, error));
                if (!agree) {
                    if (all_agree) {
                        ++stats_.mispredictions;
                    }
                    all_agree = false;
                    stats_.largest_error = std::max(stats_.largest_error, error);
                    if (on_misprediction) {
                        on_misprediction(misprediction{tick, e.server, type.name, error});
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
    restore(mirror, predicted, tick);
    correcting_ = true;
    (void)catch_up();
}

// ---- smoothing ------------------------------------------------------------------------------

const std::byte* prediction::newest(ecs::Entity server_entity, std::size_t type) const noexcept {
    if (type >= types_.size() || find(server_entity) == nullptr) {
        return nullptr;
    }
    const state_slot* slot = state_at(tick_);
    if (slot == nullptr) {
        return nullptr;
    }
    std::size_t at = 0;
    for (std::size_t k = 0; k < type; ++k) {
        at += types_[k].size;
    }
    for (const entity_state& e : slot->entities) {
        if (e.server == server_entity) {
            return e.present[type] ? e.bytes.data() + at : nullptr;
        }
    }
    return nullptr;
}

const std::vector<double>* prediction::offset_of(ecs::Entity server_entity,
                                                 std::size_t type) const noexcept {
    const tracked_entity* t = find(server_entity);
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
            if (const std::byte* bytes = newest(t.server, k)) {
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
            const std::byte* bytes = newest(t.server, k);
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

}  // namespace ecsnet::client
