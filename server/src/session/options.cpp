// The connections part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

#include <chrono>

namespace ecsnet::server::detail {

void add_session_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Connections", "Each client connection: frame and queue bounds, command rate, timeouts");
    std::int64_t& hello_ms = cl.number(c.hello_timeout.count());
    std::int64_t& idle_ms = cl.number(c.idle_timeout.count());
    std::int64_t& frame_ms = cl.number(c.frame_timeout.count());
    std::int64_t& stall_ms = cl.number(c.stall_timeout.count());
    std::int64_t& resync_ms = cl.number(c.resync_interval.count());
    env(g->add_option("--max-frame-bytes", c.max_frame_bytes, "Largest client frame accepted")
            ->check(CLI::Range(64, 16 * 1024 * 1024)),
        "ECSNET_MAX_FRAME_BYTES");
    env(g->add_option("--queue-bytes", c.queue_bytes, "Outbound queue per client; a client past it is resynced")
            ->check(CLI::Range(4096, 1024 * 1024 * 1024)),
        "ECSNET_QUEUE_BYTES");
    env(g->add_option("--max-pending", c.max_pending,
                       "Connections waiting for their Hello at most (not counted in --max-clients); "
                       "past it the oldest is closed")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_PENDING");
    env(g->add_option("--max-pending-per-address", c.max_pending_per_address,
                       "Connections waiting for their Hello from one address at most; more are refused")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_PENDING_PER_ADDRESS");
    env(g->add_option("--resync-interval-ms", resync_ms,
                       "A client's ResyncRequests are served at most once per interval (more are "
                       "coalesced; persistent excess disconnects)")
            ->check(CLI::Range(0, 600'000)),
        "ECSNET_RESYNC_INTERVAL_MS");
    env(g->add_option("--command-rate", c.command_rate, "Commands per second per client (token bucket rate)")
            ->check(CLI::PositiveNumber),
        "ECSNET_COMMAND_RATE");
    env(g->add_option("--command-burst", c.command_burst, "Commands a client may send at once (bucket size)")
            ->check(CLI::Range(1.0, 1e9)),
        "ECSNET_COMMAND_BURST");
    env(g->add_option("--hello-timeout-ms", hello_ms, "Close a connection that sends no Hello by then")
            ->check(CLI::Range(100, 600'000)),
        "ECSNET_HELLO_TIMEOUT_MS");
    env(g->add_option("--idle-timeout-ms", idle_ms, "Close a client that sends nothing for this long")
            ->check(CLI::Range(100, 86'400'000)),
        "ECSNET_IDLE_TIMEOUT_MS");
    env(g->add_option("--frame-timeout-ms", frame_ms, "Close a client whose started frame does not complete by then")
            ->check(CLI::Range(100, 600'000)),
        "ECSNET_FRAME_TIMEOUT_MS");
    env(g->add_option("--stall-timeout-ms", stall_ms, "Close a client that reads nothing for this long while data waits")
            ->check(CLI::Range(100, 600'000)),
        "ECSNET_STALL_TIMEOUT_MS");
    cl.after_parse([&c, &hello_ms, &idle_ms, &frame_ms, &stall_ms, &resync_ms] {
        c.hello_timeout = std::chrono::milliseconds{hello_ms};
        c.idle_timeout = std::chrono::milliseconds{idle_ms};
        c.frame_timeout = std::chrono::milliseconds{frame_ms};
        c.stall_timeout = std::chrono::milliseconds{stall_ms};
        c.resync_interval = std::chrono::milliseconds{resync_ms};
    });
}

}  // namespace ecsnet::server::detail
