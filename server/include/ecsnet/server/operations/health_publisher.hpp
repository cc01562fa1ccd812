#pragma once

// What the world thread tells the other threads about the server: its health (the admin
// endpoint's /healthz, /readyz and /status; Agones' health pings) and the joined clients
// (/clients). The world thread publishes a copy under one mutex, once per tick and on state
// changes; readers take the copy and never touch the world.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ecsnet/server/operations/stats.hpp"

namespace ecsnet::server {

// The server's state as other threads may read it (server::health()): the admin endpoint's
// /healthz, /readyz and /status are computed from it.
struct server_health {
    bool ticking{false};    // the tick loop runs and its last tick ended within tick_limit
    bool accepting{false};  // the listener is open
    bool draining{false};   // drain() or stop() was called
    std::string problem;    // why not ticking; empty while ticking
    std::chrono::milliseconds last_tick_age{0};  // since the last tick ended (or the start)
    std::chrono::milliseconds tick_limit{0};     // max(1 s, 10 tick periods)
    std::uint64_t tick{0};
    std::size_t clients{0};  // joined; current (published on each join and disconnect)
    std::size_t max_clients{0};
    server_stats stats;  // as of the last tick, join, refusal, disconnect or accept
    // For the web inspector (/status): observers joined, live entities after the last tick,
    // the tick's work time over the last tick_window ticks, the bytes per second of the last
    // full second, and settings.
    std::size_t observers{0};
    std::size_t entities{0};
    double tick_rate{0.0};
    struct tick_time {
        double p50{0.0};
        double p99{0.0};
        double max{0.0};
        std::size_t window_ticks{0};
    } tick_ms;
    double bytes_out_per_s{0.0};
    double bytes_in_per_s{0.0};
    bool inspector_writes{false};
    bool inspector_token{false};
    struct interest_settings {
        bool enabled{false};
        float cell_size{0.0F};  // 0: not a grid policy
        float radius{0.0F};     // the default radius
        std::uint64_t budget_bytes_per_tick{0};  // the default budget; 0: none
    } interest;
    std::uint16_t ws_port{0};  // 0: off

    // Every player slot taken: a newcomer would get "server full".
    [[nodiscard]] bool full() const noexcept { return clients >= max_clients; }
    // Liveness is `ticking`; readiness (take new players here) also needs an open listener, no
    // drain and a free slot. A full server is healthy but not ready.
    [[nodiscard]] bool ready() const noexcept {
        return ticking && accepting && !draining && !full();
    }
};

// One joined connection as /clients reports it (published by the world thread once a second).
struct client_report {
    std::uint64_t session{0};
    std::uint32_t owner{0};  // 0: an observer without an owner (read-only)
    std::string player;      // a connect token's player id; empty for development owners
    std::string name;        // its Hello's name, display only
    std::string transport;   // "TCP", "TLS", "WebSocket", "WebSocket+TLS"
    std::string address;     // "ip:port"
    bool observer{false};
    std::uint64_t joined_tick{0};
    std::uint64_t bytes_out{0};
    std::uint64_t bytes_in{0};
    double bytes_out_per_s{0.0};     // since the previous report
    double budget_bytes_per_s{0.0};  // its interest budget; 0: none
    std::uint64_t dropped_frames{0};
    std::uint64_t resyncs{0};
    struct area {
        float x{0.0F};
        float y{0.0F};
        float radius{0.0F};
    };
    std::optional<area> interest;  // under interest management, once it has a focus
    std::size_t view_entities{0};  // what its mirror holds (the whole world without a view)
};
struct clients_report {
    std::uint64_t tick{0};
    std::vector<client_report> clients;  // by session id
};

// The value below which a fraction `p` (0 to 1) of `values` lie (nearest rank; 0 when empty).
// Reorders `values`.
[[nodiscard]] double percentile(std::vector<double>& values, double p);

class health_publisher {
public:
    using clock = std::chrono::steady_clock;
    // Ticks whose work time /status's percentiles cover.
    static constexpr std::size_t tick_window = 300;

    // What health() reports from the configuration, fixed for the server's life.
    struct settings {
        double tick_rate{30.0};
        std::size_t max_clients{0};
        bool inspector_writes{false};
        bool inspector_token{false};
    };
    // What the world thread publishes each time.
    struct world_state {
        bool accepting{false};
        bool draining{false};
        std::uint64_t tick{0};
        std::size_t clients{0};
        std::size_t observers{0};
        std::size_t entities{0};
        server_stats stats;
        server_health::interest_settings interest;
    };

    explicit health_publisher(settings s) : settings_{s} {}

    // ---- the world thread ----
    // The tick loop runs; its first tick is due one period from now.
    void tick_loop_started(std::uint16_t ws_port);
    // `why` it stopped: "stopped (shutting down)", "failed: ...".
    void tick_loop_ended(std::string why);
    // `tick_ms`, with `tick_ended`: the work time of the tick that just ended.
    void publish(const world_state& state, bool tick_ended = false, double tick_ms = 0.0);
    void publish_clients(clients_report report, double bytes_out_per_s, double bytes_in_per_s);

    // ---- any thread ----
    [[nodiscard]] server_health health() const;
    [[nodiscard]] clients_report client_list() const;

private:
    const settings settings_;
    mutable std::mutex mutex_;
    clock::time_point last_tick_end_{};
    bool tick_loop_running_{false};
    std::string tick_loop_ended_;  // why it is not running ("" before the start)
    std::uint16_t ws_port_{0};
    world_state state_;
    double bytes_out_per_s_{0.0};
    double bytes_in_per_s_{0.0};
    // The work time of the last ticks (a ring), for the percentiles health() computes.
    std::array<double, tick_window> tick_ms_{};
    std::size_t tick_ms_count_{0};
    std::size_t tick_ms_next_{0};
    clients_report clients_;
};

}  // namespace ecsnet::server
