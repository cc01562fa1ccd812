#include "ecsnet/server/operations/metrics.hpp"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <atomic>
#include <vector>

#ifndef ECSNET_VERSION
#define ECSNET_VERSION "dev"
#endif

namespace ecsnet::server {

namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;

// Label values, in the enums' order.
constexpr std::array<const char*, disconnect_reason_count> disconnect_names{
    "client_closed", "protocol_error", "abuse",    "timeout",       "stalled",
    "refused",       "taken_over",     "shutdown", "network_error"};
constexpr std::array<const char*, refusal_reason_count> refusal_names{
    "full", "version", "auth", "identity", "address", "pending", "observers"};
// wire::ErrorCode (schemas/server.fbs) in snake_case; None is "ok".
constexpr std::array<const char*, 14> command_results{
    "ok",          "malformed",  "invalid_value", "unknown_entity",    "stale_version",
    "not_owner",   "component_missing", "entity_quota", "world_full", "rate_limited",
    "not_joined",  "game_failed", "input_too_early", "read_only"};
constexpr std::array<const char*, 4> game_failure_names{"command", "policy", "despawn", "input"};
constexpr std::array<double, 10> budget_buckets{0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.25, 1.5, 2.0, 4.0};

std::uint64_t count(const Counter* c) noexcept {
    return static_cast<std::uint64_t>(c->Value());
}

}  // namespace

struct server_metrics::families {
    prometheus::Family<Counter>* system_failures{};
    std::unordered_map<std::string, Counter*> by_system;  // the world thread's
    std::atomic<std::uint64_t> system_failures_sum{0};    // any thread reads it (read())
    Histogram* tick_seconds{};
    Counter* ticks{};
    Counter* overruns{};
    Counter* skipped{};
    std::array<Counter*, tick_stage_count> stages{};
    Gauge* tick{};
    Gauge* entities{};
    Gauge* clients{};
    Gauge* pending{};
    Gauge* observers{};
    Gauge* draining{};
    std::array<Counter*, 2> connections{};  // tcp, websocket
    Counter* accept_errors{};
    Counter* pending_evicted{};
    std::array<Counter*, refusal_reason_count> refused{};
    std::array<Counter*, 3> inputs{};  // applied, late, repeated (refused: the sessions')
    std::array<Counter*, game_failure_names.size()> game_failures{};
    Histogram* snapshot_bytes{};
    Histogram* budget_use{};
    std::array<Counter*, 3> view{};  // entered, left, deferred
    Counter* grace_despawns{};
    Counter* seats_taken_over{};
    std::array<Histogram*, 2> checkpoint_seconds{};  // copy (between ticks), write
    std::array<Counter*, 3> checkpoints{};           // written, failed, skipped
    Gauge* checkpoint_bytes{};
    Gauge* checkpoint_tick{};
    Histogram* journal_commit_seconds{};
    Counter* journal_bytes{};
};

// ---- session_counters ----------------------------------------------------------------------

void session_counters::received(std::size_t bytes) noexcept {
    bytes_received_->Increment(static_cast<double>(bytes));
}
void session_counters::frame_received() noexcept { frames_received_->Increment(); }
void session_counters::sent(std::size_t bytes, std::size_t frames) noexcept {
    bytes_sent_->Increment(static_cast<double>(bytes));
    frames_sent_->Increment(static_cast<double>(frames));
}
void session_counters::dropped(std::size_t frames) noexcept {
    frames_dropped_->Increment(static_cast<double>(frames));
}
void session_counters::invalid_frame() noexcept { frames_invalid_->Increment(); }
void session_counters::rate_limited(limited_message what) noexcept {
    rate_limited_[static_cast<std::size_t>(what)]->Increment();
}
void session_counters::resync(resync_cause cause) noexcept {
    resyncs_[static_cast<std::size_t>(cause)]->Increment();
}
void session_counters::resync_requested(bool coalesced) noexcept {
    resync_requests_->Increment();
    if (coalesced) {
        resync_requests_coalesced_->Increment();
    }
}
void session_counters::input_refused() noexcept { inputs_refused_->Increment(); }
void session_counters::queued(std::int64_t bytes) noexcept {
    send_queue_bytes_->Increment(static_cast<double>(bytes));
}
void session_counters::disconnected(disconnect_reason reason) noexcept {
    disconnects_[static_cast<std::size_t>(reason)]->Increment();
}

// ---- server_metrics ------------------------------------------------------------------------

server_metrics::server_metrics(double tick_period_s, std::size_t max_clients)
    : registry_{std::make_shared<prometheus::Registry>()}, f_{std::make_unique<families>()} {
    auto& r = *registry_;
    const auto counter = [&r](const char* name, const char* help) -> Counter& {
        return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
    };
    const auto gauge = [&r](const char* name, const char* help) -> Gauge& {
        return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
    };

    prometheus::BuildGauge()
        .Name("ecsnet_build_info")
        .Help("Always 1; the server's version as a label")
        .Register(r)
        .Add({{"version", ECSNET_VERSION}})
        .Set(1);
    // Buckets from 1/32 of the tick's budget to 8 budgets: the budget itself is a bound.
    const double p = tick_period_s;
    f_->tick_seconds =
        &prometheus::BuildHistogram()
             .Name("ecsnet_tick_duration_seconds")
             .Help("A tick's work time: commands, inputs, systems, replication")
             .Register(r)
             .Add({}, Histogram::BucketBoundaries{p / 32, p / 16, p / 8, p / 4, p / 2, p * 0.75,
                                                  p, p * 1.5, p * 2, p * 4, p * 8});
    f_->ticks = &counter("ecsnet_ticks_total", "Ticks run");
    f_->overruns = &counter("ecsnet_tick_overruns_total", "Ticks whose work took longer than the tick period");
    f_->skipped = &counter("ecsnet_ticks_skipped_total", "Ticks skipped after a stall (not replayed)");
    auto& stages = prometheus::BuildCounter()
                       .Name("ecsnet_tick_stage_seconds_total")
                       .Help("The ticks' work time by stage (the stages of ecsnet_tick_duration_seconds)")
                       .Register(r);
    for (std::size_t i = 0; i < tick_stage_count; ++i) {
        f_->stages[i] = &stages.Add({{"stage", std::string{to_string(static_cast<tick_stage>(i))}}});
    }
    f_->tick = &gauge("ecsnet_tick", "The current tick number");
    f_->entities = &gauge("ecsnet_entities", "Live entities after the last tick");
    f_->clients = &gauge("ecsnet_clients", "Joined players (observers not included)");
    gauge("ecsnet_clients_max", "Player slots (--max-clients)").Set(static_cast<double>(max_clients));
    f_->pending = &gauge("ecsnet_connections_pending", "Connections that have not completed Hello");
    f_->observers = &gauge("ecsnet_observers", "Joined observers (the web inspector)");
    f_->draining = &gauge("ecsnet_draining", "1 while the server drains (no new players)");

    auto& connections = prometheus::BuildCounter()
                            .Name("ecsnet_connections_total")
                            .Help("Connections accepted, by transport")
                            .Register(r);
    f_->connections = {&connections.Add({{"transport", "tcp"}}),
                       &connections.Add({{"transport", "websocket"}})};
    f_->accept_errors = &counter("ecsnet_accept_errors_total", "Failed accepts (retried)");
    f_->pending_evicted = &counter("ecsnet_pending_evicted_total",
                                   "Connections waiting for Hello closed to make room for newer ones");
    auto& refused = prometheus::BuildCounter()
                        .Name("ecsnet_connections_refused_total")
                        .Help("Connections refused before they joined, by reason")
                        .Register(r);
    for (std::size_t i = 0; i < refusal_reason_count; ++i) {
        f_->refused[i] = &refused.Add({{"reason", refusal_names[i]}});
    }

    auto& bytes = prometheus::BuildCounter().Name("ecsnet_bytes_sent_total")
                      .Help("Bytes written to clients' sockets (WebSocket headers included)")
                      .Register(r);
    bytes_sent_ = &bytes.Add({});
    bytes_received_ = &counter("ecsnet_bytes_received_total", "Bytes read from clients' sockets");
    frames_sent_ = &counter("ecsnet_frames_sent_total", "Frames written to clients");
    frames_received_ = &counter("ecsnet_frames_received_total", "Frames read from clients");
    frames_dropped_ = &counter("ecsnet_frames_dropped_total",
                               "Deltas and checksums dropped for clients that fell behind");
    frames_invalid_ = &counter("ecsnet_frames_invalid_total",
                               "Malformed, oversize or out-of-order frames from clients");

    auto& commands = prometheus::BuildCounter()
                         .Name("ecsnet_commands_total")
                         .Help("Client commands answered, by result (ErrorCode)")
                         .Register(r);
    for (std::size_t i = 0; i < command_results.size(); ++i) {
        commands_[i] = &commands.Add({{"result", command_results[i]}});
    }
    commands_.back() = &commands.Add({{"result", "unknown"}});

    auto& inputs = prometheus::BuildCounter()
                       .Name("ecsnet_inputs_total")
                       .Help("Ticks of player input, by outcome: applied, late (after its tick), "
                             "repeated (a tick run on the previous input), refused (Input frames)")
                       .Register(r);
    f_->inputs = {&inputs.Add({{"outcome", "applied"}}), &inputs.Add({{"outcome", "late"}}),
                  &inputs.Add({{"outcome", "repeated"}})};
    inputs_refused_ = &inputs.Add({{"outcome", "refused"}});

    auto& resyncs = prometheus::BuildCounter()
                        .Name("ecsnet_resyncs_total")
                        .Help("Snapshots sent again, by cause")
                        .Register(r);
    resyncs_ = {&resyncs.Add({{"cause", "queue_overflow"}}),
                &resyncs.Add({{"cause", "client_request"}})};
    resync_requests_ = &counter("ecsnet_resync_requests_total", "ResyncRequests read from clients");
    resync_requests_coalesced_ =
        &counter("ecsnet_resync_requests_coalesced_total",
                 "ResyncRequests that cost nothing: a resync was already due");
    auto& limited = prometheus::BuildCounter()
                        .Name("ecsnet_rate_limited_total")
                        .Help("Messages refused by a rate limit, by kind")
                        .Register(r);
    rate_limited_ = {&limited.Add({{"what", "command"}}), &limited.Add({{"what", "input"}})};
    auto& disconnects = prometheus::BuildCounter()
                            .Name("ecsnet_disconnects_total")
                            .Help("Connections ended, by reason")
                            .Register(r);
    for (std::size_t i = 0; i < disconnect_reason_count; ++i) {
        disconnects_[i] = &disconnects.Add({{"reason", disconnect_names[i]}});
    }
    send_queue_bytes_ = &gauge("ecsnet_send_queue_bytes", "Bytes waiting in every session's send queue");

    f_->snapshot_bytes =
        &prometheus::BuildHistogram()
             .Name("ecsnet_snapshot_size_bytes")
             .Help("Snapshots sent (joins and resyncs), all chunks")
             .Register(r)
             .Add({}, Histogram::BucketBoundaries{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18,
                                                  1 << 20, 1 << 22, 1 << 24, 1 << 26});
    f_->budget_use = &prometheus::BuildHistogram()
                          .Name("ecsnet_client_budget_use_ratio")
                          .Help("Per client and tick under interest management: bytes sent over "
                                "the client's byte budget for the tick")
                          .Register(r)
                          .Add({}, Histogram::BucketBoundaries{budget_buckets.begin(),
                                                               budget_buckets.end()});
    f_->system_failures = &prometheus::BuildCounter()
                               .Name("ecsnet_system_failures_total")
                               .Help("System runs (and player hooks) that threw, by system")
                               .Register(r);
    auto& game = prometheus::BuildCounter()
                     .Name("ecsnet_game_failures_total")
                     .Help("The game's code threw outside a system, by kind")
                     .Register(r);
    for (std::size_t i = 0; i < game_failure_names.size(); ++i) {
        f_->game_failures[i] = &game.Add({{"kind", game_failure_names[i]}});
    }
    auto& view = prometheus::BuildCounter()
                     .Name("ecsnet_view_changes_total")
                     .Help("Interest management, over all clients: entities that entered a view, "
                           "left one, sends put off for a byte budget")
                     .Register(r);
    f_->view = {&view.Add({{"change", "entered"}}), &view.Add({{"change", "left"}}),
                &view.Add({{"change", "deferred"}})};
    f_->grace_despawns = &counter("ecsnet_grace_despawns_total",
                                  "Owners whose entities went when their reconnect grace ended");
    f_->seats_taken_over = &counter("ecsnet_seats_taken_over_total",
                                    "Connections that gave their seat to the same player signing in elsewhere");

    const Histogram::BucketBoundaries seconds_buckets{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                      0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
    auto& checkpoint_seconds = prometheus::BuildHistogram()
                                   .Name("ecsnet_checkpoint_seconds")
                                   .Help("Checkpoints: the copy of the world between two ticks "
                                         "(phase=copy), the encode, write and fsyncs (phase=write)")
                                   .Register(r);
    f_->checkpoint_seconds = {&checkpoint_seconds.Add({{"phase", "copy"}}, seconds_buckets),
                              &checkpoint_seconds.Add({{"phase", "write"}}, seconds_buckets)};
    auto& checkpoints = prometheus::BuildCounter()
                            .Name("ecsnet_checkpoints_total")
                            .Help("Checkpoints by result (skipped: the previous one was still "
                                  "being written)")
                            .Register(r);
    f_->checkpoints = {&checkpoints.Add({{"result", "written"}}),
                       &checkpoints.Add({{"result", "failed"}}),
                       &checkpoints.Add({{"result", "skipped"}})};
    f_->checkpoint_bytes = &gauge("ecsnet_checkpoint_size_bytes", "Size of the last checkpoint written");
    f_->checkpoint_tick = &gauge("ecsnet_checkpoint_last_tick", "Tick of the last checkpoint written");
    f_->journal_commit_seconds =
        &prometheus::BuildHistogram()
             .Name("ecsnet_journal_commit_seconds")
             .Help("Journal batches (one per tick with acknowledged commands): write and fdatasync")
             .Register(r)
             .Add({}, seconds_buckets);
    f_->journal_bytes = &counter("ecsnet_journal_bytes_total", "Bytes appended to the journal");
}

server_metrics::~server_metrics() = default;

void server_metrics::tick_run() noexcept { f_->ticks->Increment(); }

void server_metrics::tick_timed(double seconds, bool overrun) noexcept {
    f_->tick_seconds->Observe(seconds);
    if (overrun) {
        f_->overruns->Increment();
    }
}

void server_metrics::tick_stages(const tick_profile& tick) noexcept {
    for (std::size_t i = 0; i < tick_stage_count; ++i) {
        if (const std::uint64_t ns = tick.nanoseconds(static_cast<tick_stage>(i)); ns > 0) {
            f_->stages[i]->Increment(static_cast<double>(ns) / 1e9);
        }
    }
}

void server_metrics::ticks_skipped(std::uint64_t ticks) noexcept {
    f_->skipped->Increment(static_cast<double>(ticks));
}

void server_metrics::set_world(const world_state& s) noexcept {
    f_->tick->Set(static_cast<double>(s.tick));
    f_->entities->Set(static_cast<double>(s.entities));
    f_->clients->Set(static_cast<double>(s.clients));
    f_->pending->Set(static_cast<double>(s.pending));
    f_->observers->Set(static_cast<double>(s.observers));
    f_->draining->Set(s.draining ? 1.0 : 0.0);
}

void server_metrics::accepted(bool websocket) noexcept { f_->connections[websocket ? 1 : 0]->Increment(); }
void server_metrics::accept_error() noexcept { f_->accept_errors->Increment(); }
void server_metrics::pending_evicted() noexcept { f_->pending_evicted->Increment(); }
void server_metrics::refused(refusal_reason reason) noexcept {
    f_->refused[static_cast<std::size_t>(reason)]->Increment();
}

void session_counters::command(std::uint16_t error_code) noexcept {
    const std::size_t i = error_code < command_results.size() ? error_code : command_results.size();
    commands_[i]->Increment();
}

void server_metrics::inputs(std::uint64_t applied, std::uint64_t late, std::uint64_t repeated) noexcept {
    f_->inputs[0]->Increment(static_cast<double>(applied));
    f_->inputs[1]->Increment(static_cast<double>(late));
    f_->inputs[2]->Increment(static_cast<double>(repeated));
}

void server_metrics::system_known(std::string_view system) { (void)system_counter(system); }

prometheus::Counter& server_metrics::system_counter(std::string_view system) {
    auto it = f_->by_system.find(std::string{system});
    if (it == f_->by_system.end()) {
        it = f_->by_system
                 .emplace(std::string{system},
                          &f_->system_failures->Add({{"system", std::string{system}}}))
                 .first;
    }
    return *it->second;
}

std::uint64_t server_metrics::system_failed(std::string_view system) {
    Counter& c = system_counter(system);
    c.Increment();
    f_->system_failures_sum.fetch_add(1, std::memory_order_relaxed);
    return count(&c);
}

std::uint64_t server_metrics::game_failed(game_failure_kind kind, std::uint64_t n) noexcept {
    Counter* c = f_->game_failures[static_cast<std::size_t>(kind)];
    c->Increment(static_cast<double>(n));
    return count(c);
}

void server_metrics::snapshot_sent(std::size_t bytes) noexcept {
    f_->snapshot_bytes->Observe(static_cast<double>(bytes));
}

void server_metrics::budget_used(std::span<const double> ratios) {
    if (ratios.empty()) {
        return;
    }
    // One lock of the histogram a tick, not one a client.
    std::vector<double> increments(budget_buckets.size() + 1, 0.0);
    double sum = 0.0;
    for (const double r : ratios) {
        const auto bucket = std::lower_bound(budget_buckets.begin(), budget_buckets.end(), r);
        increments[static_cast<std::size_t>(bucket - budget_buckets.begin())] += 1.0;
        sum += r;
    }
    f_->budget_use->ObserveMultiple(increments, sum);
}

void server_metrics::view_changes(std::uint64_t entered, std::uint64_t left,
                                  std::uint64_t deferred) noexcept {
    f_->view[0]->Increment(static_cast<double>(entered));
    f_->view[1]->Increment(static_cast<double>(left));
    f_->view[2]->Increment(static_cast<double>(deferred));
}

void server_metrics::checkpoint_copied(double seconds) noexcept {
    f_->checkpoint_seconds[0]->Observe(seconds);
}
void server_metrics::checkpoint_written(double seconds, std::size_t bytes, std::uint64_t tick) noexcept {
    f_->checkpoint_seconds[1]->Observe(seconds);
    f_->checkpoints[0]->Increment();
    f_->checkpoint_bytes->Set(static_cast<double>(bytes));
    f_->checkpoint_tick->Set(static_cast<double>(tick));
}
void server_metrics::checkpoint_failed() noexcept { f_->checkpoints[1]->Increment(); }
void server_metrics::checkpoint_skipped() noexcept { f_->checkpoints[2]->Increment(); }
void server_metrics::journal_committed(double seconds, std::size_t bytes) noexcept {
    f_->journal_commit_seconds->Observe(seconds);
    f_->journal_bytes->Increment(static_cast<double>(bytes));
}

void server_metrics::grace_despawn() noexcept { f_->grace_despawns->Increment(); }
void server_metrics::seat_taken_over() noexcept { f_->seats_taken_over->Increment(); }

std::string server_metrics::text() const {
    return prometheus::TextSerializer{}.Serialize(registry_->Collect());
}

server_stats server_metrics::read() const {
    server_stats s;
    const families& f = *f_;
    s.ticks = count(f.ticks);
    s.overruns = count(f.overruns);
    s.skipped_ticks = count(f.skipped);
    s.connections = count(f.connections[0]) + count(f.connections[1]);
    for (const Counter* c : f.refused) {
        s.refused += count(c);
    }
    s.identity_refused = count(f.refused[static_cast<std::size_t>(refusal_reason::identity)]);
    s.address_refused = count(f.refused[static_cast<std::size_t>(refusal_reason::address)]);
    s.pending_refused = count(f.refused[static_cast<std::size_t>(refusal_reason::pending)]);
    s.pending_evicted = count(f.pending_evicted);
    s.accept_errors = count(f.accept_errors);
    s.resyncs = count(resyncs_[0]) + count(resyncs_[1]);
    s.resyncs_requested = count(resync_requests_);
    s.resyncs_coalesced = count(resync_requests_coalesced_);
    s.dropped_frames = count(frames_dropped_);
    s.rate_limited = count(rate_limited_[static_cast<std::size_t>(limited_message::command)]);
    s.invalid_frames = count(frames_invalid_);
    s.bytes_out = count(bytes_sent_);
    s.bytes_in = count(bytes_received_);
    s.seats_taken_over = count(f.seats_taken_over);
    s.grace_despawns = count(f.grace_despawns);
    s.system_failures = f.system_failures_sum.load(std::memory_order_relaxed);
    s.command_failures = count(f.game_failures[0]);
    s.policy_failures = count(f.game_failures[1]);
    s.despawn_failures = count(f.game_failures[2]);
    s.input_failures = count(f.game_failures[3]);
    s.inputs_applied = count(f.inputs[0]);
    s.inputs_late = count(f.inputs[1]);
    s.inputs_repeated = count(f.inputs[2]);
    s.inputs_refused = count(inputs_refused_);
    s.view_entered = count(f.view[0]);
    s.view_left = count(f.view[1]);
    s.view_deferred = count(f.view[2]);
    return s;
}

}  // namespace ecsnet::server
