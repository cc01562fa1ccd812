// What the reliability tests read off a running ecsnet-server: its memory, file descriptors
// and CPU from /proc, and the figures of its periodic "stats:" log lines.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ecsnet::test {

// Resident set size in KiB, open file descriptors, utime + stime in seconds; nullopt once
// the process is gone.
[[nodiscard]] std::optional<std::size_t> rss_kib(pid_t pid);
[[nodiscard]] std::optional<std::size_t> fd_count(pid_t pid);
[[nodiscard]] std::optional<double> cpu_seconds(pid_t pid);

// One "stats: tick T p50 X ms p99 Y ms, E entities, C clients, B B/s out, O overruns,
// R resyncs, L rate-limited, I invalid frames" line.
struct server_stats {
    std::uint64_t tick = 0;
    double tick_p50_ms = 0;
    double tick_p99_ms = 0;
    std::size_t entities = 0;
    std::size_t clients = 0;
    double bytes_out_per_s = 0;
    std::uint64_t overruns = 0;
    std::uint64_t resyncs = 0;
    std::uint64_t rate_limited = 0;
    std::uint64_t invalid_frames = 0;
};

// Every stats line of a server log, in order.
[[nodiscard]] std::vector<server_stats> parse_stats(const std::string& log);

// Lines of `log` that contain `needle`.
[[nodiscard]] std::size_t count_lines(const std::string& log, std::string_view needle);

// The first sanitizer report in `log` (AddressSanitizer, LeakSanitizer, UBSan "runtime
// error:"), with some context; empty when there is none.
[[nodiscard]] std::string sanitizer_report(const std::string& log);

}  // namespace ecsnet::test
