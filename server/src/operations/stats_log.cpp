#include "ecsnet/server/operations/stats_log.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "ecsnet/server/operations/health_publisher.hpp"

namespace ecsnet::server {

void stats_log::stages_timed(const tick_profile& tick) {
    for (std::size_t i = 0; i < tick_stage_count; ++i) {
        const auto stage = static_cast<tick_stage>(i);
        stages_.add(stage, std::chrono::nanoseconds{tick.nanoseconds(stage)});
    }
    ++staged_ticks_;
}

void stats_log::log(const world_line& now) {
    const auto at = clock::now();
    const double seconds = std::chrono::duration<double>(at - last_).count();
    last_ = at;
    const server_stats& stats = now.totals;
    const double out_rate =
        static_cast<double>(stats.bytes_out - bytes_out_) / std::max(seconds, 1e-9);
    bytes_out_ = stats.bytes_out;
    spdlog::info(
        "stats: tick {} p50 {:.3f} ms p99 {:.3f} ms, {} entities, {} clients, {:.0f} B/s out, "
        "{} overruns, {} resyncs, {} rate-limited, {} invalid frames, {} system failures",
        now.tick, percentile(tick_ms_, 0.50), percentile(tick_ms_, 0.99), now.entities,
        now.clients, out_rate, stats.overruns, stats.resyncs, stats.rate_limited,
        stats.invalid_frames, stats.system_failures);
    tick_ms_.clear();
    if (staged_ticks_ > 0) {
        // "stats: stages ms per tick: commands 0.010 inputs ...": ecsnet-loadgen reads it.
        std::string line;
        for (std::size_t i = 0; i < tick_stage_count; ++i) {
            const auto stage = static_cast<tick_stage>(i);
            line += fmt::format(" {} {:.3f}", to_string(stage),
                                static_cast<double>(stages_.nanoseconds(stage)) / 1e6 /
                                    static_cast<double>(staged_ticks_));
        }
        spdlog::info("stats: stages ms per tick:{}", line);
        stages_.clear();
        staged_ticks_ = 0;
    }
    if (now.connection_lines_unlogged > 0) {
        spdlog::info("stats: {} join, leave and refusal lines not logged (more than {} per "
                     "10 s, --connection-log-lines); {} joined clients now",
                     now.connection_lines_unlogged, now.connection_log_lines, now.clients);
    }
    if (now.input_players > 0 || stats.inputs_applied > 0) {
        spdlog::info("stats: input: {} ticks applied, {} late, {} repeated, {} frames refused, "
                     "{} failed in the game's code (totals); {} players, {} ticks held",
                     stats.inputs_applied, stats.inputs_late, stats.inputs_repeated,
                     stats.inputs_refused, stats.input_failures, now.input_players,
                     now.input_ticks_held);
    }
    if (!now.tick_waits_ms.empty()) {
        // "stats: tick waits per client: p50 ...": ecsnet-loadgen reads it.
        std::vector<double> waits = now.tick_waits_ms;
        spdlog::info("stats: tick waits per client: p50 {:.1f} ms p99 {:.1f} ms max {:.1f} ms, {} "
                     "clients (the longest each waited for tick frames to be written)",
                     percentile(waits, 0.50), percentile(waits, 0.99),
                     *std::max_element(waits.begin(), waits.end()), waits.size());
    }
    if (now.interest) {
        spdlog::info("stats: interest: views p50 {:.3f} ms p99 {:.3f} ms per tick, {} entered, {} "
                     "left, {} sends deferred for budgets (totals)",
                     percentile(views_ms_, 0.50), percentile(views_ms_, 0.99), stats.view_entered,
                     stats.view_left, stats.view_deferred);
        views_ms_.clear();
    }
}

}  // namespace ecsnet::server
