// The transport part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

#include <charconv>
#include <chrono>
#include <string>
#include <system_error>

#include "ecsnet/server/transport/websocket_stream.hpp"

namespace ecsnet::server::detail {

namespace {

constexpr std::size_t max_io_threads = 1024;

}  // namespace

void add_transport_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Transport", "How clients reach the server: TCP, TLS, WebSocket, the I/O threads, --web-root pages");
    std::int64_t& web_stall_ms = cl.number(c.web_stall_timeout.count());
    env(g->add_option("--bind", c.bind, "Address to listen on"), "ECSNET_BIND");
    env(g->add_option("--port", c.port, "TCP port to listen on (0: any free port)"),
        "ECSNET_PORT");
    env(g->add_option("--tls-cert", c.tls_cert, "TLS certificate chain (PEM); with --tls-key, clients must use TLS")
            ->check(CLI::ExistingFile),
        "ECSNET_TLS_CERT");
    env(g->add_option("--tls-key", c.tls_key, "TLS private key (PEM) of --tls-cert")
            ->check(CLI::ExistingFile),
        "ECSNET_TLS_KEY");
    env(g->add_option("--ws-port", c.ws_port,
                       "WebSocket port (the same protocol, one binary message per frame; wss with "
                       "--tls-cert); -1: off, 0: any free port (logged)")
            ->check(CLI::Range(-1, 65535)),
        "ECSNET_WS_PORT");
    env(g->add_option("--ws-allowed-origins", c.ws_allowed_origins,
                       "Origins browsers may connect from over WebSocket, comma-separated "
                       "(https://game.example.com, * for any); default: the server's own host "
                       "only. Requests without an Origin (not browsers) always pass")
            ->delimiter(',')
            ->check([](const std::string& origin) { return check_allowed_origin(origin); }),
        "ECSNET_WS_ALLOWED_ORIGINS");
    env(g->add_option("--web-root", c.web_root,
                       "Directory whose files the WebSocket port serves to plain HTTP GET/HEAD "
                       "(a game's browser page: / is its index.html); default: off (426). Needs "
                       "--ws-port")
            ->check(CLI::ExistingDirectory),
        "ECSNET_WEB_ROOT");
    env(g->add_option("--web-chunk-bytes", c.web_chunk_bytes,
                       "--web-root: a page connection's memory: its file is read and sent this "
                       "much at a time")
            ->check(CLI::Range(std::size_t{4096}, std::size_t{16} * 1024 * 1024)),
        "ECSNET_WEB_CHUNK_BYTES");
    env(g->add_option("--web-memory-bytes", c.web_memory_bytes,
                       "--web-root: the memory of all page connections together (a chunk "
                       "each); a page request past it gets 503 with Retry-After")
            ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 40U)),
        "ECSNET_WEB_MEMORY_BYTES");
    env(g->add_option("--web-max-per-address", c.web_max_per_address,
                       "--web-root: page connections from one address at once; the next gets "
                       "429 with Retry-After")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_WEB_MAX_PER_ADDRESS");
    env(g->add_option("--web-stall-timeout-ms", web_stall_ms,
                       "--web-root: a page connection whose client takes less than a chunk "
                       "in this long is closed (the request itself is due within "
                       "--hello-timeout-ms)")
            ->check(CLI::Range(100, 3'600'000)),
        "ECSNET_WEB_STALL_TIMEOUT_MS");
    env(g->add_option("--io-threads", c.io_threads,
                       "Threads that read and write the clients' sockets (default: cores - 1, at "
                       "least 1); the world ticks on a thread of its own")
            ->check([](const std::string& v) {
                std::size_t n = 0;
                const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
                if (ec != std::errc{} || end != v.data() + v.size()) {
                    return "not a number of threads: " + v;
                }
                if (n == 0) {
                    return std::string{"must be at least 1: the world's thread does no socket I/O"};
                }
                return n > max_io_threads ? "at most " + std::to_string(max_io_threads)
                                          : std::string{};
            }),
        "ECSNET_IO_THREADS");
    cl.after_parse([&c, &web_stall_ms] {
        if (c.tls_cert.empty() != c.tls_key.empty()) {
            throw CLI::ValidationError("--tls-cert/--tls-key", "give both or neither");
        }
        if (c.ws_port >= 0 && c.ws_port != 0 && c.ws_port == static_cast<std::int32_t>(c.port)) {
            throw CLI::ValidationError("--ws-port", "must differ from --port (" +
                                                        std::to_string(c.port) + ")");
        }
        if (!c.ws_allowed_origins.empty() && c.ws_port < 0) {
            throw CLI::ValidationError("--ws-allowed-origins", "needs --ws-port");
        }
        if (!c.web_root.empty() && c.ws_port < 0) {
            throw CLI::ValidationError("--web-root", "needs --ws-port (the page is served on the "
                                                     "WebSocket port)");
        }
        if (c.web_memory_bytes < c.web_chunk_bytes) {
            throw CLI::ValidationError("--web-memory-bytes",
                                       "must hold at least one chunk (--web-chunk-bytes " +
                                           std::to_string(c.web_chunk_bytes) + ")");
        }
        c.web_stall_timeout = std::chrono::milliseconds{web_stall_ms};
    });
}

}  // namespace ecsnet::server::detail
