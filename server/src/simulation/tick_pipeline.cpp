#include "ecsnet/server/simulation/tick_pipeline.hpp"

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

namespace ecsnet::server {

namespace {

// The text of the exception being handled, for a failure's log line.
std::string current_exception_text() {
    try {
        throw;
    } catch (const std::exception& e) {
        return printable(e.what(), 200);
    } catch (...) {
        return "an exception that is not a std::exception";
    }
}

}  // namespace

tick_pipeline::tick_pipeline(ecs::World& world, const protocol::component_registry& types,
                             server_metrics& metrics, const settings& s)
    : world_{world},
      types_{types},
      metrics_{metrics},
      scheduler_{1.0 / s.tick_rate},
      commands_{world, types, s.limits},
      inputs_{s.input_buffer_ticks} {
    scheduler_.set_strict_access(s.strict_access);
}

void tick_pipeline::player_joined(std::uint32_t owner, bool resumed) {
    player_events_.push_back(player_event{owner, true, resumed});
}

void tick_pipeline::player_left(std::uint32_t owner) {
    player_events_.push_back(player_event{owner, false, false});
    inputs_.forget(owner);  // a reconnect starts a new input stream
}

std::optional<protocol::input_rejected> tick_pipeline::offer_input(std::uint32_t owner,
                                                                   const protocol::input& input,
                                                                   std::uint64_t tick) {
    const auto refuse = [&](wire::ErrorCode code, std::string why) {
        return protocol::input_rejected{input.first_tick, code, std::move(why), 1};
    };
    const ecs::Entity e = input.entity;
    const ecs::Entity current = world_.current(e.index());
    if (current.is_null()) {
        return refuse(wire::ErrorCode::UnknownEntity, "no entity at index " + std::to_string(e.index()));
    }
    if (current != e) {
        return refuse(wire::ErrorCode::StaleVersion,
                      "entity " + std::to_string(e.index()) + " is at version " +
                          std::to_string(current.version()) + ", not " + std::to_string(e.version()));
    }
    const protocol::Owner* o = world_.try_get<protocol::Owner>(e);
    if (o == nullptr || o->client != owner) {
        return refuse(wire::ErrorCode::NotOwner,
                      "entity " + std::to_string(e.index()) + ":" + std::to_string(e.version()) +
                          (o == nullptr ? " belongs to the server" : " belongs to another client"));
    }
    // The game's own check (valid()) on every value, as for commands.
    for (const protocol::component_set& values : input.ticks) {
        for (const protocol::component_value& v : values.values()) {
            const auto id = types_.id_of(v.name);
            std::string why;
            if (!id || !types_.ops(*id).accepts(v, &why)) {
                return refuse(wire::ErrorCode::InvalidValue, why.empty() ? v.name + " is refused" : why);
            }
        }
    }
    const input_buffer::offered got = inputs_.offer(owner, input, tick);
    if (got.too_early > 0) {
        return refuse(wire::ErrorCode::InputTooEarly,
                      std::to_string(got.too_early) + " ticks of input stamped more than " +
                          std::to_string(inputs_.ticks_ahead()) + " ticks ahead of tick " +
                          std::to_string(tick));
    }
    return std::nullopt;
}

void tick_pipeline::export_system_failures(const player_hooks& hooks) {
    // Systems are only ever added.
    const auto& systems = scheduler_.systems();
    for (; systems_exported_ < systems.size(); ++systems_exported_) {
        metrics_.system_known(systems[systems_exported_].name);
    }
    if (hooks.joined && !hooks_exported_[0]) {
        hooks_exported_[0] = true;
        metrics_.system_known("on_player_joined");
    }
    if (hooks.left && !hooks_exported_[1]) {
        hooks_exported_[1] = true;
        metrics_.system_known("on_player_left");
    }
}

protocol::command_result tick_pipeline::apply(std::uint32_t client,
                                              const protocol::client_message& message,
                                              std::uint64_t tick) {
    protocol::command_result result = commands_.apply(client, message);
    if (result.code == wire::ErrorCode::GameFailed) {
        const game_failure& f = commands_.failure();
        report_failure(metrics_.game_failed(game_failure_kind::command),
                       "tick {}: client {}'s {} failed in the game's code{}: {}; refused{}", tick,
                       client, protocol::message_name(message),
                       f.component.empty() ? std::string{} : " (component " + f.component + ")",
                       printable(f.what, 200), f.undone ? ", undone" : ", and undoing it failed too");
    }
    return result;
}

void tick_pipeline::tell_players(const player_hooks& hooks, std::uint64_t tick) {
    // Swapped out first: a hook that makes a player leave (a kick) queues for the next tick.
    std::vector<player_event> events;
    events.swap(player_events_);
    for (const player_event& e : events) {
        if (e.joined ? !hooks.joined : !hooks.left) {
            continue;
        }
        const char* name = e.joined ? "on_player_joined" : "on_player_left";
        try {
            if (e.joined) {
                hooks.joined(e.owner, e.resumed);
            } else {
                hooks.left(e.owner);
            }
        } catch (...) {
            report_failure(metrics_.system_failed(name), "tick {}: {}({}) failed: {}", tick, name,
                           e.owner, current_exception_text());
        }
        commands_.settle();  // what a listener of the hook's changes left to do
    }
}

void tick_pipeline::despawn(std::span<const std::uint32_t> owners, std::uint64_t tick) {
    for (const std::uint32_t owner : owners) {
        std::size_t failed = 0;
        std::string what;
        const std::size_t n = commands_.despawn_all_of(owner, &failed, &what);
        metrics_.grace_despawn();
        spdlog::debug("despawned {} entities of owner {} (its reconnect grace ended)", n, owner);
        if (failed > 0) {
            report_failure(metrics_.game_failed(game_failure_kind::despawn, failed),
                           "tick {}: {} entities of departed owner {} stay: an on_destroy "
                           "listener threw: {}",
                           tick, failed, owner, printable(what, 200));
        }
    }
}

void tick_pipeline::apply_inputs(std::uint64_t tick) {
    inputs_.run(tick, [this, tick](std::uint32_t owner, ecs::Entity e,
                                   const protocol::component_set& values) {
        const protocol::Owner* o = world_.valid(e) ? world_.try_get<protocol::Owner>(e) : nullptr;
        if (o == nullptr || o->client != owner) {
            return false;  // destroyed, or changed hands, since it was sent
        }
        for (const protocol::component_value& v : values.values()) {
            const auto id = types_.id_of(v.name);
            try {
                types_.ops(*id).assign(world_, e, v);
            } catch (...) {
                report_failure(metrics_.game_failed(game_failure_kind::input),
                               "tick {}: owner {}'s input {} failed in the game's code: {}", tick,
                               owner, v.name, current_exception_text());
            }
        }
        return true;
    });
    commands_.settle();  // a throwing listener may have been an on_destroy<Owner> one
    const input_counters& in = inputs_.counters();
    metrics_.inputs(in.applied - inputs_counted_.applied, in.late - inputs_counted_.late,
                    in.repeated - inputs_counted_.repeated);
    inputs_counted_ = in;
}

std::string tick_pipeline::run_systems(std::uint64_t tick) {
    // A system that throws fails alone (the scheduler catches it): count it, say which one,
    // and keep ticking. Rate-limited, since a broken system fails every tick.
    ecs::Scheduler::tick_report report;
    // The systems see the server's tick (SystemContext::tick), as a client's prediction
    // running the same systems does: a spawn key written from it is the same on both sides.
    scheduler_.set_tick(tick);
    try {
        report = scheduler_.run(world_);
    } catch (const ecs::access_violation& e) {  // strict access only
        commands_.settle();
        return fmt::format("tick {}: --strict-access: {}", tick, e.what());
    }
    commands_.settle();
    for (const auto& failure : report.command_failures) {
        spdlog::debug("tick {}: {}", tick, failure);
    }
    for (const auto& failure : report.system_failures) {
        report_failure(metrics_.system_failed(failure.system),
                       "tick {}: system '{}' failed: {} ({} recorded commands dropped)", tick,
                       printable(failure.system), printable(failure.what, 200),
                       failure.commands_dropped);
    }
    return {};
}

const ecs::World::change_set_type& tick_pipeline::take_changes() {
    world_.take_changes(changes_);
    return changes_;
}

void tick_pipeline::log_failure(std::uint64_t so_far, const std::string& text) {
    std::size_t suppressed = 0;
    if (failures_.allow(suppressed)) {
        spdlog::error("{} ({} so far of this kind; {} game failures not logged since the last)",
                      text, so_far, suppressed);
    }
}

}  // namespace ecsnet::server
