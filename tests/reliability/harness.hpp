// What the reliability tests read off a running ecsnet-server: its memory, file descriptors
// and CPU from /proc, and the figures of its periodic "stats:" log lines.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/protocol/messages.hpp"

namespace ecsnet::test {

class server;

// Resident set size in KiB, open file descriptors, utime + stime in seconds; nullopt once
// the process is gone.
[[nodiscard]] std::optional<std::size_t> rss_kib(pid_t pid);
[[nodiscard]] std::optional<std::size_t> fd_count(pid_t pid);
[[nodiscard]] std::optional<double> cpu_seconds(pid_t pid);

// Each open descriptor's target ("socket:[123]", "anon_inode:[timerfd]", a path) by number;
// empty once the process is gone.
[[nodiscard]] std::map<int, std::string> fd_targets(pid_t pid);
// The descriptors open now that `before` did not list, one per line, a TCP socket with its
// state and addresses: what a test prints when descriptors fail to return to a baseline.
[[nodiscard]] std::string describe_new_fds(pid_t pid, const std::map<int, std::string>& before);

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

// Nearest-rank percentile (p in [0, 1]), as the server's stats line computes it; 0 when empty.
[[nodiscard]] double percentile(std::vector<double> values, double p);

// Waits (bounded) for a child to exit and returns its exit code (128 + signal when killed),
// without reaping it: the `server` object that owns the pid still reaps it.
[[nodiscard]] std::optional<int> exit_status_of(pid_t pid, std::chrono::milliseconds timeout);

// The port of the server's admin endpoint (started with --admin-port 0), from its "admin
// endpoint on http://127.0.0.1:PORT" log line, waiting at most `timeout` for it.
[[nodiscard]] std::optional<std::uint16_t> admin_port(const server& s,
                                                      std::chrono::milliseconds timeout);

// GET /status of the admin endpoint, parsed; nullopt when it does not answer 200 with JSON.
[[nodiscard]] std::optional<nlohmann::json> admin_status(std::uint16_t admin_port);

// Sends `commands` in order on `c`, each with the connection's next request id (written into
// the message); returns the ids, for the caller to match the CommandResults.
std::vector<std::uint32_t> send_numbered(client::connection& c,
                                         std::vector<protocol::client_message>& commands);

// One `FIGURES {"test":...}` JSON line on stdout, for docs/RELIABILITY.md; each figure is also a
// gtest property, so the XML report carries it.
class figures {
public:
    explicit figures(const std::string& test);

    template <typename T>
        requires std::is_arithmetic_v<T>
    figures& add(const std::string& key, T value) {
        return add_number(key, std::is_floating_point_v<T> ? format(static_cast<double>(value))
                                                           : std::to_string(value));
    }
    figures& add(const std::string& key, const std::string& value);
    figures& add(const std::string& key, const char* value) { return add(key, std::string{value}); }
    void print() const;

private:
    static std::string format(double value);
    figures& add_number(const std::string& key, const std::string& text);
    std::string json_;
};

}  // namespace ecsnet::test
