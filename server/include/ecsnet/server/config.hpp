#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ecsnet::server {

enum class log_format { text, json };

// Threads for session I/O by default: one per core beside the world's, at least one.
[[nodiscard]] std::size_t default_io_threads() noexcept;

// Everything the server can be told. Every field has a command-line flag and an ECSNET_*
// environment variable (config.cpp lists them; `ecsnet-server --help` prints them).
struct server_config {
    std::string bind = "0.0.0.0";
    std::uint16_t port = 7777;
    double tick_rate = 30.0;
    std::size_t max_clients = 256;
    std::size_t max_frame_bytes = 64 * 1024;
    std::size_t queue_bytes = 1024 * 1024;
    std::size_t demo_entities = 0;
    std::string log_level = "info";
    log_format log_format_ = log_format::text;
    std::string auth_token;
    // Identity (docs/SERVER.md): with a secret (HS256) or a public key file (ES256), owners
    // come from connect tokens (JWTs) for this world id; without either, from the resume keys
    // the server hands out.
    std::string token_secret;
    std::string token_public_key;  // path of a PEM EC P-256 public key
    std::string world_id = "default";
    // With connect tokens, joined connections per player at most: a newer one takes the seat
    // of the oldest, which gets Disconnect "signed in elsewhere".
    std::size_t max_connections_per_player = 1;
    // Without connect tokens only: joined connections from one address at most.
    std::size_t max_clients_per_address = 32;
    // Connect tokens admitted and not yet expired that the server remembers (each admits once);
    // when full, new tokens are refused until some expire.
    std::size_t max_remembered_tokens = 65'536;
    // TLS: both set, or neither (plain TCP).
    std::string tls_cert;
    std::string tls_key;
    // The WebSocket transport (websocket_stream.hpp): the same sessions over one binary message
    // per frame, on --bind at this port; wss with the TLS certificate. -1: off; 0: any free port.
    std::int32_t ws_port = -1;
    // Origins a browser may connect from ("https://game.example.com", "*" for any). Empty: only
    // the server's own host (the Origin's host:port equals the request's Host), and clients
    // that send no Origin (not browsers).
    std::vector<std::string> ws_allowed_origins;
    // Files answered to plain HTTP GET/HEAD on the WebSocket port (static_files.hpp): a game's
    // browser page, from the same origin as its WebSocket. Empty: off (such requests get 426).
    std::string web_root;
    // Its page connections (page_budget.hpp): a file streams a chunk at a time; the chunks of
    // all page connections together at most web_memory_bytes (past it: 503); from one address
    // web_max_per_address at once (past it: 429); a chunk not taken by the client within
    // web_stall_timeout ends the connection.
    std::size_t web_chunk_bytes = 64 * 1024;
    std::size_t web_memory_bytes = 32 * 1024 * 1024;
    std::size_t web_max_per_address = 8;
    std::chrono::milliseconds web_stall_timeout{10'000};
    // Connections that have not sent Hello yet: a bound of their own (past it the oldest is
    // closed, so a prompt player still gets in) and a bound per remote address.
    std::size_t max_pending = 256;
    std::size_t max_pending_per_address = 32;
    std::chrono::milliseconds resync_interval{2000};  // one client-asked snapshot per interval

    std::size_t max_entities_per_client = 10'000;
    std::size_t max_entities = 2'000'000;
    double command_rate = 200.0;
    double command_burst = 400.0;
    // Player input (docs/PROTOCOL.md, "Input"): how far ahead of the server's tick an input
    // may be stamped, and Input frames per second per client (bucket of one second's worth).
    std::uint32_t input_buffer_ticks = 32;
    double input_rate = 120.0;
    // A system's undeclared read or write (ecs::access_violation) stops the server with exit
    // status 1 instead of failing that system alone every tick: for a game's tests and CI.
    bool strict_access = false;
    bool keep_entities_on_disconnect = false;
    // An owner's entities outlive its last connection this long: a reconnect (resume key, or a
    // token of the same player) within it finds them, with the same handles. 0: gone at the
    // next tick. keep_entities_on_disconnect keeps them for ever.
    std::chrono::milliseconds reconnect_grace{30'000};
    // Join, leave and refusal lines logged per 10 s; past it they are counted, and the stats
    // line says how many were not logged. 0: every one (an audit log).
    std::size_t connection_log_lines = 20;
    std::uint32_t checksum_interval = 30;
    std::uint32_t checksum_slice = 65'536;  // entity indices one checksum covers at most
    float world_half_extent = 1000.0F;  // entities stay inside [-e, e] on both axes
    // Interest management (docs/INTEREST.md), for games that locate their entities: off at 0,
    // every client then receives the whole world.
    float interest_radius = 0.0F;
    float interest_cell = 0.0F;         // 0: half the radius
    double client_budget = 64.0 * 1024;  // bytes per second per client; 0: unlimited

    std::chrono::milliseconds hello_timeout{5000};
    std::chrono::milliseconds idle_timeout{60'000};
    std::chrono::milliseconds frame_timeout{10'000};   // a started frame must finish by then
    std::chrono::milliseconds stall_timeout{10'000};   // a queued write must progress by then
    std::chrono::milliseconds shutdown_grace{3000};    // flush time for Disconnect on shutdown
    std::chrono::seconds stats_interval{10};
    // Threads that run the sessions' socket I/O (docs/SERVER.md, "Threads"); the world keeps
    // the io_context's thread to itself.
    std::size_t io_threads = default_io_threads();

    // The admin HTTP endpoint (/healthz, /readyz, /status; admin.hpp). Off (-1) unless given a
    // port: a fixed default would make two servers on one host collide. 0: any free port.
    std::int32_t admin_port = -1;
    std::string admin_bind = "127.0.0.1";
    // Host names and browser Origins the admin endpoint accepts (admin_options).
    std::vector<std::string> admin_allowed_hosts;
    std::vector<std::string> admin_allowed_origins;
    // The web inspector's files, served by the admin endpoint under /inspector/. Empty:
    // <exe dir>/../share/ecsnet/web/inspector (static_files.hpp, default_web_dir).
    std::string inspector_dir;
    // The web inspector's observers (GET /observe on the admin endpoint; docs/SERVER.md,
    // "Observers"). With a token, /observe needs ?token= and /clients that or a Bearer header.
    std::string inspector_token;
    bool inspector_writes = false;  // observers may send commands (else: ReadOnly)
    std::size_t max_observers = 4;
    // After SIGTERM: stop accepting, keep serving connected clients this long, then shut down.
    std::chrono::seconds drain{0};
    // The Agones SDK sidecar (agones.hpp, docs/SERVER.md "Agones"): on with --agones,
    // --agones-port or when AGONES_SDK_HTTP_PORT is set (Agones sets it in the game container).
    bool agones = false;
    std::uint16_t agones_port = 9358;  // AGONES_SDK_HTTP_PORT, else Agones' default
    std::chrono::milliseconds agones_health_interval{2000};
    // Persistence (docs/PERSISTENCE.md): off unless a state dir is given.
    std::string state_dir;
    std::chrono::seconds checkpoint_interval{60};  // 0: only at shutdown
    std::size_t keep_checkpoints = 3;
    bool journal = false;  // acknowledged commands are durable (needs state_dir)
};

// Where `--healthcheck` finds the admin endpoint: --admin-bind, or the loopback address when it
// is a wildcard (0.0.0.0, ::).
[[nodiscard]] std::string admin_probe_host(const server_config& config);

// The outcome of parsing a command line: run with a config, run the healthcheck, or exit
// (after --help / --version or a usage error) with a code.
struct issue_token_request {
    std::string player;
    std::string world = "default";
    std::chrono::seconds ttl{300};
    std::string private_key;  // path of a PEM EC P-256 private key: ES256; else HS256 (secret)
};
// issue-token refuses a longer --ttl without --allow-long-ttl.
inline constexpr std::chrono::seconds max_default_token_ttl{86'400};

// Whether connect tokens decide identity (a secret or a public key is configured).
[[nodiscard]] inline bool uses_connect_tokens(const server_config& c) noexcept {
    return !c.token_secret.empty() || !c.token_public_key.empty();
}

// `ecsnet-server inspect-state DIR [--json] [--tick T] [--output FILE]`.
struct inspect_state_request {
    std::string dir;
    bool json = false;
    std::optional<std::uint64_t> tick;
    std::string output;  // empty: stdout
};

struct parsed_command_line {
    server_config config;
    bool healthcheck = false;
    std::optional<issue_token_request> issue_token;  // `ecsnet-server issue-token ...`
    std::optional<inspect_state_request> inspect_state;
    std::optional<int> exit_code;
};

// `game_options` adds a game's own options (game::add_options) beside the server's.
[[nodiscard]] parsed_command_line parse_command_line(
    int argc, const char* const* argv, const std::function<void(CLI::App&)>& game_options = {});

// One line describing the effective configuration, for the start-up log.
[[nodiscard]] std::string describe(const server_config& config);

}  // namespace ecsnet::server
