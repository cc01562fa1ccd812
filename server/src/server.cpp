#include "ecsnet/server/server.hpp"

#include <fmt/ranges.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>


#include <algorithm>
#include <cmath>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/session/session.hpp"
#include "transport/use_tuple.hpp"

namespace ecsnet::server {

namespace asio = boost::asio;
using detail::use_tuple;
using asio::awaitable;

namespace {

// A tick loop that is late by more than this many periods (a stall, a VM pause) skips the
// missed ticks instead of replaying them back to back, and re-anchors its deadlines.
constexpr std::int64_t max_catch_up_ticks = 5;

void log_exception(const char* what, const std::exception_ptr& e) {
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            spdlog::critical("{} failed: {}", what, ex.what());
        }
    }
}

}  // namespace

namespace {

protocol::component_registry registry_of(const game& g) {
    protocol::component_registry types;
    if (g.register_components) {
        g.register_components(types);
    }
    return types;
}

}  // namespace

server::server(asio::io_context& io, server_config config) : server(io, std::move(config), game{}) {}

server::server(asio::io_context& io, server_config config, const game& g)
    : io_{io},
      config_{std::move(config)},
      metrics_{1.0 / config_.tick_rate, config_.max_clients},
      types_{registry_of(g)},
      world_{ecs::World::make()},
      simulation_{*world_, types_, metrics_,
                  tick_pipeline::settings{config_.tick_rate,
                                          command_limits{config_.max_entities_per_client,
                                                         config_.max_entities},
                                          config_.input_buffer_ticks, config_.strict_access}},
      admission_{admission::settings{config_.world_id, config_.token_secret,
                                     config_.token_public_key, config_.max_remembered_tokens,
                                     config_.auth_token},
                 [this](std::uint32_t id) { return simulation_.commands().owned_by(id) > 0; }},
      replicator_{types_, interest_,
                  replicator_options{config_.tick_rate, config_.checksum_interval,
                                     config_.checksum_slice}},
      sessions_{session_hub::world_side{io, config_, metrics_, types_, *world_, admission_,
                                        simulation_, replicator_, interest_, tick_, ticks_done_}},
      tick_timer_{io},
      stats_timer_{io},
      health_{health_publisher::settings{config_.tick_rate, config_.max_clients,
                                         config_.inspector_writes,
                                         !config_.inspector_token.empty()}} {
    // Kept with the world: a restart must give back every owner and refuse every token used
    // (docs/PERSISTENCE.md); an owner before any command of it, whose entities the replay
    // can only give back after it.
    admission_.on_new_owner = [this](const stored_owner& owner) {
        if (journal_writer* j = journal()) {
            j->owner(owner);
        }
    };
    admission_.on_token_admitted = [this](const replay_cache::entry& token) {
        if (journal_writer* j = journal()) {
            j->token(token);
        }
    };
    // Acknowledging would be a lie: the server stops, as a database does when it cannot make
    // its log durable.
    sessions_.commands().on_journal_failed = [this](const std::string& error, std::size_t withheld) {
        if (failure_.empty()) {
            spdlog::error("{} replies withheld: their commands are not durable", withheld);
        }
        fail("the journal cannot be written: " + error);
    };
    // An owner without connections whose last entity ends (lifetime, despawn) is forgotten.
    // Its interest settings (focus, relevance, budget) go with it.
    simulation_.commands().on_last_entity_gone = [this](std::uint32_t owner) {
        // Not while a journal replays: an owner may own nothing between two of its records,
        // and nobody is connected yet. The restore sorts the idle owners out at its end.
        if (!restoring_ && admission_.owners().forget_if_idle(owner)) {
            interest_.forget(owner);
        }
    };
    replicator_.set_profile(&profile_);
    sessions_.on_change = [this] { publish_health(); };
    sessions_.on_command_after_stop = [this] {
        if (failure_.empty()) {
            apply_commands();  // stopped: no tick will come, and the session waits
        }
    };
    interest_.set_defaults(interest_manager::defaults{config_.interest_radius, config_.client_budget});
    interest_.on_policy_failure = [this](std::string_view call, std::string_view what) {
        simulation_.report_failure(metrics_.game_failed(game_failure_kind::policy),
                                   "tick {}: the interest policy's {} failed: {} (the tick went "
                                   "on without it)",
                                   tick_, call, printable(what, 200));
    };
    if (config_.journal && config_.state_dir.empty()) {
        throw std::invalid_argument("--journal needs --state-dir");
    }
    if (!config_.state_dir.empty()) {
        persistence_.emplace(config_, g.name.empty() ? std::string{"ecsnet"} : g.name, types_,
                             metrics_, admission_.admitted_tokens());
        restore();
    }
    if (g.setup) {
        g.setup(*this);
    }
    if (persistence_) {
        persistence_->start(*world_, admission_.owners(), tick_);
    }
}

void server::restore() {
    restoring_ = true;
    restored_ = persistence_->restore(*world_, admission_.owners());
    restoring_ = false;
    if (!restored_) {
        return;
    }
    tick_ = restored_->tick;
    ticks_done_.store(tick_, std::memory_order_relaxed);
    // Nobody is connected: every owner is as after a disconnect. Its reconnect grace starts
    // now (unless entities are kept for ever); an owner of nothing goes.
    const auto despawn_at = clock::now() + config_.reconnect_grace;
    for (const std::uint32_t owner : admission_.owners().ids()) {
        if (admission_.owners().forget_if_idle(owner)) {
            interest_.forget(owner);
        } else if (!config_.keep_entities_on_disconnect) {
            admission_.left(owner, despawn_at);
        }
    }
}

server::~server() {
    // Before any part goes: the I/O threads use the config, the counters, the log limiters.
    sessions_.stop_io_threads();
}

server_stats server::stats() const { return metrics_.read(); }

void server::start() {
    sessions_.listen();
    if (admission_.uses_tokens() && config_.world_id == "default") {
        spdlog::warn("connect tokens are checked against world id 'default' (no --world-id): "
                     "a token for any other server left at the default admits here too; give "
                     "each world its own --world-id (ECSNET_WORLD_ID)");
    }

    // The first snapshot carries what the game made at setup; the interest policy learns it
    // from the same changes.
    interest_.update(*world_, world_->take_changes());

    running_ = true;
    health_.tick_loop_started(sessions_.ws_port());
    publish_health();
    publish_clients(true);
    spdlog::info("ecsnet-server starting: {}", describe(config_));
    sessions_.start_accepting();
    asio::co_spawn(io_, tick_loop(), [this](const std::exception_ptr& e) {
        log_exception("tick loop", e);
        tick_loop_ended(e);
    });
    stats_log_ = stats_log{};  // its first line covers the time since the start
    asio::co_spawn(io_, stats_loop(), [](const std::exception_ptr& e) { log_exception("stats loop", e); });
}

void server::stop() {
    if (!running_) {
        return;
    }
    running_ = false;
    draining_ = true;
    sessions_.stop_accepting(true);
    tick_timer_.cancel();
    stats_timer_.cancel();
    publish_health();
    spdlog::info("shutting down: {} clients, tick {}", clients(), tick_);
    if (failure_.empty()) {
        if (persistence_) {
            // What the last commands change belongs to a tick after the last checkpoint's.
            ++tick_;
        }
        // Commands received since the last tick are applied and answered: replies are owed.
        apply_commands();
    }
    if (persistence_ && !persistence_->final_checkpoint(*world_, admission_.owners(), tick_) &&
        failure_.empty()) {
        failure_ = "the final checkpoint could not be written (see the error above)";
    }
    sessions_.disconnect_all(failure_);
    if (on_stop) {
        on_stop();
    }
}

void server::fail(std::string reason) {
    if (!failure_.empty()) {
        return;  // the first failure is the one to report (each later batch fails the same)
    }
    failure_ = std::move(reason);
    spdlog::critical("{}: shutting down", failure_);
    stop();
}

void server::drain() {
    if (!running_ || draining_) {
        return;
    }
    draining_ = true;
    sessions_.stop_accepting(false);
    publish_health();
    spdlog::info("draining: the listener is closed; {} clients stay connected, tick {}",
                 clients(), tick_);
}

void server::adopt_observer(released_socket socket, upgrade_request request) {
    sessions_.adopt_observer(std::move(socket), std::move(request));
}

void server::publish_health(bool tick_ended, double tick_ms) {
    server_health::interest_settings interest{interest_.enabled(), 0.0F,
                                              interest_.default_settings().radius, 0};
    if (const auto* grid = dynamic_cast<const grid_interest*>(interest_.policy())) {
        interest.cell_size = grid->grid().cell_size();
    }
    // Budgets apply only under interest management (without it every client shares one stream).
    if (interest_.enabled() && interest_.default_settings().budget > 0.0) {
        interest.budget_bytes_per_tick = static_cast<std::uint64_t>(
            std::llround(interest_.default_settings().budget / config_.tick_rate));
    }
    metrics_.set_world(server_metrics::world_state{tick_, world_->alive(), clients(),
                                                   admission_.pending(), observers(),
                                                   draining_});
    health_.publish(health_publisher::world_state{running_ && sessions_.accepting(), draining_, tick_,
                                                  clients(), observers(),
                                                  world_->alive(), stats(),
                                                  interest},
                    tick_ended, tick_ms);
}

void server::tick_loop_ended(const std::exception_ptr& e) {
    std::string why = "stopped (shutting down)";
    if (e) {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            why = std::string{"failed: "} + ex.what();
        } catch (...) {
            why = "failed";
        }
    }
    health_.tick_loop_ended(std::move(why));
}

awaitable<void> server::tick_loop() {
    const auto period = std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double>(1.0 / config_.tick_rate));
    auto next = clock::now();
    while (running_) {
        // Absolute deadlines: a late tick is followed at once by the next and the rate does
        // not drift. After a stall (a VM pause, a blocking system) at most max_catch_up_ticks
        // are replayed back to back; the rest are skipped: the deadline moves on by whole
        // periods, tick numbers stay consecutive (they count ticks run), clients see a pause.
        next += period;
        if (const auto late = clock::now() - next; late > max_catch_up_ticks * period) {
            const std::int64_t skipped = late / period;
            next += skipped * period;
            metrics_.ticks_skipped(static_cast<std::uint64_t>(skipped));
            std::size_t suppressed = 0;
            if (tick_warnings_.allow(suppressed)) {
                spdlog::warn(
                    "tick loop {:.0f} ms behind after tick {}: skipped {} ticks ({} so far)",
                    std::chrono::duration<double, std::milli>(late).count(), tick_, skipped,
                    stats().skipped_ticks);
            }
        }
        tick_timer_.expires_at(next);
        co_await tick_timer_.async_wait(use_tuple);
        if (!running_) {
            break;
        }
        run_tick();
    }
}

void server::apply_commands() {
    sessions_.commands().apply(
        [this](std::uint32_t client, const protocol::client_message& message) {
            return simulation_.apply(client, message, tick_);
        },
        *world_, journal());
    if (journal_writer* j = journal()) {
        sessions_.commands().commit(*j, tick_);
    }
}

void server::run_tick() {
    const auto started = clock::now();
    ++tick_;
    ticks_done_.store(tick_, std::memory_order_relaxed);

    profile_.clear();
    if (persistence_) {
        // A checkpoint's copy runs between ticks on its own thread: nothing changes the world
        // before it is done (a tick waits only for a copy longer than the time between ticks).
        const auto timer = timed(&profile_, tick_stage::checkpoint);
        persistence_->wait_for_copy();
    }
    const tick_pipeline::player_hooks hooks{on_player_joined, on_player_left};
    {
        const auto timer = timed(&profile_, tick_stage::commands);
        simulation_.export_system_failures(hooks);
        sessions_.commands().apply(
            [this](std::uint32_t client, const protocol::client_message& message) {
                return simulation_.apply(client, message, tick_);
            },
            *world_, journal());
        simulation_.tell_players(hooks, tick_);
        simulation_.despawn(admission_.take_departed(clock::now()), tick_);
    }
    {
        const auto timer = timed(&profile_, tick_stage::inputs);
        simulation_.apply_inputs(tick_);
    }
    std::optional<tick_profile::scope> systems{std::in_place, &profile_, tick_stage::systems};
    if (std::string violation = simulation_.run_systems(tick_); !violation.empty()) {
        fail(std::move(violation));
        return;
    }
    systems.reset();
    const ecs::World::change_set_type& changes = simulation_.take_changes();
    if (journal_writer* journal = this->journal()) {
        const auto timer = timed(&profile_, tick_stage::journal);
        journal->structure(*world_, changes);
        sessions_.commands().commit(*journal, tick_);
    }
    {
        // The interest policy follows every change, watched or not: a client joining later
        // sees the world as it is.
        const auto timer = timed(&profile_, tick_stage::interest);
        interest_.update(*world_, changes);
    }
    if (sessions_.sessions().anyone_joined()) {
        broadcast_tick(changes);  // view_query, view_plan, encode, checksum, hand_off
    }

    if (persistence_ && persistence_->checkpoint_due(clock::now())) {
        const auto timer = timed(&profile_, tick_stage::checkpoint);
        // The copy follows, between this tick and the next.
        persistence_->checkpoint(*world_, admission_.owners(), tick_);
    }

    std::optional<tick_profile::scope> reports{std::in_place, &profile_, tick_stage::reports};
    metrics_.tick_run();
    publish_clients();
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(clock::now() - started).count();
    publish_health(true, elapsed_ms);
    reports.reset();
    stats_log_.tick_timed(elapsed_ms);
    stats_log_.stages_timed(profile_);
    metrics_.tick_stages(profile_);
    const double budget_ms = 1000.0 / config_.tick_rate;
    metrics_.tick_timed(elapsed_ms / 1000.0, elapsed_ms > budget_ms);
    if (elapsed_ms > budget_ms) {
        std::size_t suppressed = 0;
        if (tick_warnings_.allow(suppressed)) {
            spdlog::warn("tick {} took {:.2f} ms, over its {:.2f} ms budget ({} overruns so far)",
                         tick_, elapsed_ms, budget_ms, stats().overruns);
        }
    }
}

void server::publish_clients(bool now) {
    if (auto report = client_reports_.make(report_sources(), tick_, world_->alive(), stats(), now)) {
        health_.publish_clients(std::move(report->clients), report->bytes_out_per_s,
                                report->bytes_in_per_s);
    }
}

void server::broadcast_tick(const ecs::World::change_set_type& changes) {
    const auto started = clock::now();
    const auto before = replicator_.stats();
    replicator_.tick(*world_, changes, tick_,
                     [this](std::uint64_t id, const protocol::frame& delta,
                            const protocol::frame* checksum, const protocol::frame* owner_only) {
                         session* s = sessions_.sessions().find(id);
                         if (s == nullptr) {
                             return;
                         }
                         // A client that sends input hears, with every tick, what became of it.
                         protocol::frame ack;
                         if (const protocol::input_ack* a =
                                 simulation_.inputs().ack(s->owner_id())) {
                             ack = s->protocol_version() >= protocol::compact_input_protocol_version
                                       ? protocol::encode_compact_input_ack(*a)
                                       : protocol::encode(protocol::server_control{*a});
                         }
                         hand_off_.add(*s, delta, checksum, owner_only,
                                       ack == nullptr ? nullptr : &ack);
                     });
    {
        const auto timer = timed(&profile_, tick_stage::hand_off);
        hand_off_.post();
    }
    const auto& after = replicator_.stats();
    metrics_.view_changes(after.view_entered - before.view_entered,
                          after.view_left - before.view_left,
                          after.view_deferred - before.view_deferred);
    if (interest_.enabled()) {
        client_reports_.measure_budgets(report_sources(), config_.tick_rate, metrics_);
        stats_log_.views_timed(
            std::chrono::duration<double, std::milli>(clock::now() - started).count());
    }
}

awaitable<void> server::stats_loop() {
    while (running_) {
        stats_timer_.expires_after(config_.stats_interval);
        co_await stats_timer_.async_wait(use_tuple);
        if (!running_) {
            break;
        }
        const input_buffer& inputs = simulation_.inputs();
        std::vector<double> tick_waits_ms;
        for (const auto& [id, s] : sessions_.sessions().sessions()) {
            if (const std::uint64_t us = s->take_longest_tick_wait_us(); us != 0) {
                tick_waits_ms.push_back(static_cast<double>(us) / 1000.0);
            }
        }
        stats_log_.log(stats_log::world_line{
            tick_, world_->alive(), clients(), stats(),
            sessions_.take_unlogged_connection_lines(), config_.connection_log_lines, inputs.players(),
            inputs.held(), interest_.enabled(), std::move(tick_waits_ms)});
    }
}

}  // namespace ecsnet::server
