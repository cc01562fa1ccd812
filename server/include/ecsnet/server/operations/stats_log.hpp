#pragma once

// The line the server logs every --stats-interval: the tick's work time (p50, p99) since the
// last line, bytes out per second, and what connections, input and interest management did.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ecsnet/server/operations/stats.hpp"
#include "ecsnet/server/operations/tick_profile.hpp"

namespace ecsnet::server {

class stats_log {
public:
    using clock = std::chrono::steady_clock;

    // The work time of a tick, and of serving the views in it (under interest management).
    void tick_timed(double ms) { tick_ms_.push_back(ms); }
    void views_timed(double ms) { views_ms_.push_back(ms); }
    // A tick's time by stage (tick_profile), summed until the next line.
    void stages_timed(const tick_profile& tick);

    struct world_line {
        std::uint64_t tick{0};
        std::size_t entities{0};
        std::size_t clients{0};
        server_stats totals;
        std::size_t connection_lines_unlogged{0};  // since the last line
        std::size_t connection_log_lines{0};       // --connection-log-lines
        std::size_t input_players{0};
        std::size_t input_ticks_held{0};
        bool interest{false};
        // Per joined client, the longest it waited for tick frames since the last line, ms
        // (session::take_longest_tick_wait_us).
        std::vector<double> tick_waits_ms;
    };
    // Logs the lines for the time since the last call (or the start), then starts over.
    void log(const world_line& now);

private:
    std::vector<double> tick_ms_;
    std::vector<double> views_ms_;
    tick_profile stages_;
    std::uint64_t staged_ticks_{0};
    std::uint64_t bytes_out_{0};
    clock::time_point last_{clock::now()};
};

}  // namespace ecsnet::server
