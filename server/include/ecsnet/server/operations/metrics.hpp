#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ecsnet/server/operations/stats.hpp"
#include "ecsnet/server/operations/tick_profile.hpp"

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace ecsnet::server {

// Why a session ended, as ecsnet_disconnects_total{reason} counts it.
enum class disconnect_reason : std::uint8_t {
    client_closed,   // the client closed its connection (or sent a WebSocket close)
    protocol_error,  // a malformed, oversize or out-of-order frame
    abuse,           // past a rate or refusal limit
    timeout,         // no Hello, or nothing read, in time
    stalled,         // the client stopped reading (no write progress)
    refused,         // refused at admission (full, identity, version...)
    taken_over,      // the same player signed in elsewhere
    shutdown,        // the server stopped
    network_error,   // a socket or TLS error
};
inline constexpr std::size_t disconnect_reason_count = 9;

// Why a connection was refused before it joined (ecsnet_connections_refused_total{reason}).
enum class refusal_reason : std::uint8_t {
    full, version, auth, identity, address, pending, observers,
};
inline constexpr std::size_t refusal_reason_count = 7;

enum class resync_cause : std::uint8_t { queue_overflow, client_request };
enum class limited_message : std::uint8_t { command, input };
enum class game_failure_kind : std::uint8_t { command, policy, despawn, input };

// What a session counts, on its I/O thread: the only part of the server's metrics a session
// sees. Every call is a relaxed atomic add on a registry counter: any thread, never a lock.
class session_counters {
public:
    session_counters(const session_counters&) = delete;
    session_counters& operator=(const session_counters&) = delete;

    void received(std::size_t bytes) noexcept;
    void frame_received() noexcept;
    void sent(std::size_t bytes, std::size_t frames) noexcept;
    void dropped(std::size_t frames) noexcept;  // deltas and checksums of a slow client
    void invalid_frame() noexcept;
    void rate_limited(limited_message what) noexcept;
    // A snapshot sent again: the client fell behind, or asked (after its request's interval).
    void resync(resync_cause cause) noexcept;
    // A ResyncRequest read; `coalesced`: it costs nothing, one is already due.
    void resync_requested(bool coalesced) noexcept;
    void input_refused() noexcept;
    // A CommandResult sent: its wire::ErrorCode (0: ok).
    void command(std::uint16_t error_code) noexcept;
    // Bytes entering (+) and leaving (-) a send queue: ecsnet_send_queue_bytes.
    void queued(std::int64_t bytes) noexcept;
    void disconnected(disconnect_reason reason) noexcept;

protected:
    session_counters() = default;
    ~session_counters() = default;

    prometheus::Counter* bytes_received_{};
    prometheus::Counter* frames_received_{};
    prometheus::Counter* bytes_sent_{};
    prometheus::Counter* frames_sent_{};
    prometheus::Counter* frames_dropped_{};
    prometheus::Counter* frames_invalid_{};
    std::array<prometheus::Counter*, 2> rate_limited_{};
    std::array<prometheus::Counter*, 2> resyncs_{};
    prometheus::Counter* resync_requests_{};
    prometheus::Counter* resync_requests_coalesced_{};
    prometheus::Counter* inputs_refused_{};
    prometheus::Gauge* send_queue_bytes_{};
    std::array<prometheus::Counter*, disconnect_reason_count> disconnects_{};
    std::array<prometheus::Counter*, 15> commands_{};  // by wire::ErrorCode, then "unknown"
};

// The server's metrics in a Prometheus registry (prometheus-cpp's core): what GET /metrics
// serves (text exposition format 0.0.4) and what server::stats() reads back. The world
// thread writes the rest; no metric has a per-client label (a budget's use is a histogram).
class server_metrics : public session_counters {
public:
    // `tick_period_s` places the tick histogram's buckets around the tick's budget.
    server_metrics(double tick_period_s, std::size_t max_clients);
    server_metrics(const server_metrics&) = delete;
    server_metrics& operator=(const server_metrics&) = delete;
    ~server_metrics();

    // ---- the world thread ----------------------------------------------------------------
    void tick_run() noexcept;
    // The tick's work time; `overrun`: longer than the tick period.
    void tick_timed(double seconds, bool overrun) noexcept;
    void ticks_skipped(std::uint64_t ticks) noexcept;
    // The tick's time by stage: ecsnet_tick_stage_seconds_total{stage}.
    void tick_stages(const tick_profile& tick) noexcept;
    struct world_state {
        std::uint64_t tick;
        std::size_t entities;
        std::size_t clients;
        std::size_t pending;
        std::size_t observers;
        bool draining;
    };
    void set_world(const world_state& state) noexcept;
    void accepted(bool websocket) noexcept;
    void accept_error() noexcept;
    void pending_evicted() noexcept;
    void refused(refusal_reason reason) noexcept;
    void inputs(std::uint64_t applied, std::uint64_t late, std::uint64_t repeated) noexcept;
    // A system (or player hook) that can fail: its failure count is exported from now on, at 0
    // until it fails (a rate or an alert then sees it start, not appear).
    void system_known(std::string_view system);
    // Count one failure; returns how many of its kind so far (for the log line).
    std::uint64_t system_failed(std::string_view system);
    std::uint64_t game_failed(game_failure_kind kind, std::uint64_t n = 1) noexcept;
    void snapshot_sent(std::size_t bytes) noexcept;
    // Each budgeted client's bytes this tick over its byte budget for the tick (interest
    // management).
    void budget_used(std::span<const double> ratios);
    void view_changes(std::uint64_t entered, std::uint64_t left, std::uint64_t deferred) noexcept;
    void grace_despawn() noexcept;
    void seat_taken_over() noexcept;

    // ---- any thread ----------------------------------------------------------------------
    // Persistence (persistence.hpp): the checkpoint's copy (between ticks) and its write, each on
    // a thread of its own; the journal's commits on its thread.
    void checkpoint_copied(double seconds) noexcept;
    void checkpoint_written(double seconds, std::size_t bytes, std::uint64_t tick) noexcept;
    void checkpoint_failed() noexcept;
    void checkpoint_skipped() noexcept;
    void journal_committed(double seconds, std::size_t bytes) noexcept;

    // The exposition text (Content-Type: text/plain; version=0.0.4). Takes each metric's own
    // lock only for the copy of a histogram: a scrape never waits for a tick, nor a tick for it.
    [[nodiscard]] std::string text() const;
    // The counters as server_stats fields (what /status and the stats line show).
    [[nodiscard]] server_stats read() const;

private:
    struct families;
    prometheus::Counter& system_counter(std::string_view system);

    std::shared_ptr<prometheus::Registry> registry_;
    std::unique_ptr<families> f_;
};

}  // namespace ecsnet::server
