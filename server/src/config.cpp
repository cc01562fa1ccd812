#include "ecsnet/server/config.hpp"

#include "ecsnet/server/operations/admin.hpp"

#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/transport/websocket_stream.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/fmt/fmt.h>

#include <charconv>
#include <cmath>
#include <system_error>
#include <thread>

#ifndef ECSNET_VERSION
#define ECSNET_VERSION "0.0.0"
#endif

namespace ecsnet::server {

namespace {

constexpr std::size_t max_io_threads = 1024;

}  // namespace

std::size_t default_io_threads() noexcept {
    // hardware_concurrency() is 0 when unknown: then one I/O thread.
    const unsigned cores = std::thread::hardware_concurrency();
    return cores > 1 ? cores - 1 : 1;
}

parsed_command_line parse_command_line(int argc, const char* const* argv,
                                       const std::function<void(CLI::App&)>& game_options) {
    parsed_command_line out;
    server_config& c = out.config;

    // The binary's own name: every game's server (ecsnet-server, shields-server) parses here.
    std::string program = "ecsnet-server";
    if (argc > 0 && argv[0] != nullptr && *argv[0] != '\0') {
        const std::string_view path{argv[0]};
        program = std::string{path.substr(path.find_last_of('/') + 1)};
    }
    CLI::App app{program + ": a server-authoritative ECS world replicated to TCP clients"};
    app.set_version_flag("--version", program + " (ecsnet " + ECSNET_VERSION + ")");
    app.get_formatter()->column_width(36);

    std::string format = "text";
    std::int64_t hello_ms = c.hello_timeout.count();
    std::int64_t idle_ms = c.idle_timeout.count();
    std::int64_t frame_ms = c.frame_timeout.count();
    std::int64_t stall_ms = c.stall_timeout.count();
    std::int64_t web_stall_ms = c.web_stall_timeout.count();
    std::int64_t stats_s = c.stats_interval.count();
    std::int64_t resync_ms = c.resync_interval.count();
    std::int64_t drain_s = c.drain.count();
    double grace_s = std::chrono::duration<double>(c.reconnect_grace).count();

    const auto env = [](CLI::Option* o, const char* name) { return o->envname(name)->capture_default_str(); };
    env(app.add_option("--bind", c.bind, "Address to listen on"), "ECSNET_BIND");
    env(app.add_option("--port", c.port, "TCP port to listen on (0: any free port)"),
        "ECSNET_PORT");
    env(app.add_option("--tick-rate", c.tick_rate, "Ticks per second")
            ->check(CLI::Range(1.0, 1000.0)),
        "ECSNET_TICK_RATE");
    env(app.add_option("--max-clients", c.max_clients, "Connected clients at most; the next gets Disconnect \"server full\"")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_CLIENTS");
    env(app.add_option("--max-frame-bytes", c.max_frame_bytes, "Largest client frame accepted")
            ->check(CLI::Range(64, 16 * 1024 * 1024)),
        "ECSNET_MAX_FRAME_BYTES");
    env(app.add_option("--queue-bytes", c.queue_bytes, "Outbound queue per client; a client past it is resynced")
            ->check(CLI::Range(4096, 1024 * 1024 * 1024)),
        "ECSNET_QUEUE_BYTES");
    env(app.add_option("--demo-entities", c.demo_entities, "Moving demo entities spawned at start"),
        "ECSNET_DEMO_ENTITIES");
    env(app.add_option("--log-level", c.log_level, "trace, debug, info, warn, error, critical, off (SPDLOG_LEVEL also works)")
            ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"})),
        "ECSNET_LOG_LEVEL");
    env(app.add_option("--log-format", format, "text or json (one JSON object per line)")
            ->check(CLI::IsMember({"text", "json"})),
        "ECSNET_LOG_FORMAT");
    env(app.add_option("--auth-token", c.auth_token, "Shared secret every Hello must carry (empty: none)"),
        "ECSNET_AUTH_TOKEN");
    env(app.add_option("--token-secret", c.token_secret,
                       "HS256 secret shared with the backend that issues connect tokens (JWTs); "
                       "when set, every client needs a valid token or a resume key, and owners "
                       "are its player ids (at least 16 bytes; empty: development identity by "
                       "resume keys)"),
        "ECSNET_TOKEN_SECRET");
    env(app.add_option("--token-public-key", c.token_public_key,
                       "ES256 public key (PEM file) of the backend that issues connect tokens: "
                       "this server verifies tokens but cannot mint them (instead of "
                       "--token-secret)")
            ->check(CLI::ExistingFile),
        "ECSNET_TOKEN_PUBLIC_KEY");
    env(app.add_option("--world-id", c.world_id, "This server's world id: connect tokens' \"aud\" must name it")
            ->check([](const std::string& v) {
                return v.size() <= 64 ? std::string{} : std::string{"at most 64 bytes"};
            }),
        "ECSNET_WORLD_ID");
    env(app.add_option("--max-connections-per-player", c.max_connections_per_player,
                       "With connect tokens, joined connections per player at most; a newer one "
                       "takes the oldest's seat, which gets Disconnect \"signed in elsewhere\"")
            ->check(CLI::Range(1, 1024)),
        "ECSNET_MAX_CONNECTIONS_PER_PLAYER");
    env(app.add_option("--max-clients-per-address", c.max_clients_per_address,
                       "Joined connections from one address at most, without connect tokens "
                       "(with tokens, seats are per player)")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_CLIENTS_PER_ADDRESS");
    env(app.add_option("--max-remembered-tokens", c.max_remembered_tokens,
                       "Admitted, unexpired connect tokens remembered so each admits once; when "
                       "full, new tokens are refused until some expire")
            ->check(CLI::Range(1, 100'000'000)),
        "ECSNET_MAX_REMEMBERED_TOKENS");
    env(app.add_option("--tls-cert", c.tls_cert, "TLS certificate chain (PEM); with --tls-key, clients must use TLS")
            ->check(CLI::ExistingFile),
        "ECSNET_TLS_CERT");
    env(app.add_option("--tls-key", c.tls_key, "TLS private key (PEM) of --tls-cert")
            ->check(CLI::ExistingFile),
        "ECSNET_TLS_KEY");
    env(app.add_option("--ws-port", c.ws_port,
                       "WebSocket port (the same protocol, one binary message per frame; wss with "
                       "--tls-cert); -1: off, 0: any free port (logged)")
            ->check(CLI::Range(-1, 65535)),
        "ECSNET_WS_PORT");
    env(app.add_option("--ws-allowed-origins", c.ws_allowed_origins,
                       "Origins browsers may connect from over WebSocket, comma-separated "
                       "(https://game.example.com, * for any); default: the server's own host "
                       "only. Requests without an Origin (not browsers) always pass")
            ->delimiter(',')
            ->check([](const std::string& origin) { return check_allowed_origin(origin); }),
        "ECSNET_WS_ALLOWED_ORIGINS");
    env(app.add_option("--web-root", c.web_root,
                       "Directory whose files the WebSocket port serves to plain HTTP GET/HEAD "
                       "(a game's browser page: / is its index.html); default: off (426). Needs "
                       "--ws-port")
            ->check(CLI::ExistingDirectory),
        "ECSNET_WEB_ROOT");
    env(app.add_option("--web-chunk-bytes", c.web_chunk_bytes,
                       "--web-root: a page connection's memory: its file is read and sent this "
                       "much at a time")
            ->check(CLI::Range(std::size_t{4096}, std::size_t{16} * 1024 * 1024)),
        "ECSNET_WEB_CHUNK_BYTES");
    env(app.add_option("--web-memory-bytes", c.web_memory_bytes,
                       "--web-root: the memory of all page connections together (a chunk "
                       "each); a page request past it gets 503 with Retry-After")
            ->check(CLI::Range(std::size_t{4096}, std::size_t{1} << 40U)),
        "ECSNET_WEB_MEMORY_BYTES");
    env(app.add_option("--web-max-per-address", c.web_max_per_address,
                       "--web-root: page connections from one address at once; the next gets "
                       "429 with Retry-After")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_WEB_MAX_PER_ADDRESS");
    env(app.add_option("--web-stall-timeout-ms", web_stall_ms,
                       "--web-root: a page connection whose client takes less than a chunk "
                       "in this long is closed (the request itself is due within "
                       "--hello-timeout-ms)")
            ->check(CLI::Range(100, 3'600'000)),
        "ECSNET_WEB_STALL_TIMEOUT_MS");
    env(app.add_option("--max-pending", c.max_pending,
                       "Connections waiting for their Hello at most (not counted in --max-clients); "
                       "past it the oldest is closed")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_PENDING");
    env(app.add_option("--max-pending-per-address", c.max_pending_per_address,
                       "Connections waiting for their Hello from one address at most; more are refused")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_MAX_PENDING_PER_ADDRESS");
    env(app.add_option("--resync-interval-ms", resync_ms,
                       "A client's ResyncRequests are served at most once per interval (more are "
                       "coalesced; persistent excess disconnects)")
            ->check(CLI::Range(0, 600'000)),
        "ECSNET_RESYNC_INTERVAL_MS");
    env(app.add_option("--max-entities-per-client", c.max_entities_per_client, "Live entities one client may own"),
        "ECSNET_MAX_ENTITIES_PER_CLIENT");
    env(app.add_option("--max-entities", c.max_entities, "Live entities in the world at most"),
        "ECSNET_MAX_ENTITIES");
    env(app.add_option("--command-rate", c.command_rate, "Commands per second per client (token bucket rate)")
            ->check(CLI::PositiveNumber),
        "ECSNET_COMMAND_RATE");
    env(app.add_option("--command-burst", c.command_burst, "Commands a client may send at once (bucket size)")
            ->check(CLI::Range(1.0, 1e9)),
        "ECSNET_COMMAND_BURST");
    env(app.add_option("--input-buffer-ticks", c.input_buffer_ticks,
                       "How many ticks ahead of the server a player input may be stamped; "
                       "further ahead is refused (InputTooEarly)")
            ->check(CLI::Range(1, 1024)),
        "ECSNET_INPUT_BUFFER_TICKS");
    env(app.add_option("--input-rate", c.input_rate,
                       "Input frames per second per client (token bucket of one second's worth; "
                       "a client sends one per tick, or fewer batched)")
            ->check(CLI::Range(1.0, 100'000.0)),
        "ECSNET_INPUT_RATE");
    env(app.add_flag("--keep-entities-on-disconnect", c.keep_entities_on_disconnect,
                     "Keep a client's entities for ever when it disconnects (default: despawn "
                     "them after --reconnect-grace)"),
        "ECSNET_KEEP_ENTITIES_ON_DISCONNECT");
    env(app.add_option("--reconnect-grace", grace_s,
                       "Seconds an owner's entities outlive its last connection: a reconnect "
                       "with its resume key (or a token of the same player) within them finds "
                       "them again; 0 despawns them at the next tick")
            ->check(CLI::Range(0.0, 86400.0)),
        "ECSNET_RECONNECT_GRACE");
    env(app.add_option("--connection-log-lines", c.connection_log_lines,
                       "Join, leave and refusal lines logged per 10 s; past it they are counted "
                       "in the stats line (0: log every one)"),
        "ECSNET_CONNECTION_LOG_LINES");
    env(app.add_option("--checksum-interval", c.checksum_interval, "Send a world checksum every this many ticks")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_CHECKSUM_INTERVAL");
    env(app.add_option("--checksum-slice", c.checksum_slice, "Entity indices one checksum covers at most; larger worlds are checked a slice per checksum")
            ->check(CLI::Range(1, 1 << 30)),
        "ECSNET_CHECKSUM_SLICE");
    env(app.add_option("--world-half-extent", c.world_half_extent, "Entities bounce inside [-E, E] on both axes")
            ->check(CLI::PositiveNumber),
        "ECSNET_WORLD_HALF_EXTENT");
    env(app.add_option("--interest-radius", c.interest_radius,
                       "Interest management: each client receives the entities within this distance of its focus, its own and global ones (0: off, every client receives the whole world; games with a position component)")
            ->check(CLI::Range(0.0F, 1e9F)),
        "ECSNET_INTEREST_RADIUS");
    env(app.add_option("--interest-cell", c.interest_cell, "Cell size of the interest grid (0: half the radius)")
            ->check(CLI::Range(0.0F, 1e9F)),
        "ECSNET_INTEREST_CELL");
    env(app.add_option("--client-budget", c.client_budget,
                       "Interest management: bytes per second of tick frames per client; what does not fit is sent later, most urgent first (0: unlimited)")
            ->check(CLI::Range(0.0, 1e12)),
        "ECSNET_CLIENT_BUDGET");
    env(app.add_option("--hello-timeout-ms", hello_ms, "Close a connection that sends no Hello by then")
            ->check(CLI::Range(100, 600'000)),
        "ECSNET_HELLO_TIMEOUT_MS");
    env(app.add_option("--idle-timeout-ms", idle_ms, "Close a client that sends nothing for this long")
            ->check(CLI::Range(100, 86'400'000)),
        "ECSNET_IDLE_TIMEOUT_MS");
    env(app.add_option("--frame-timeout-ms", frame_ms, "Close a client whose started frame does not complete by then")
            ->check(CLI::Range(100, 600'000)),
        "ECSNET_FRAME_TIMEOUT_MS");
    env(app.add_option("--stall-timeout-ms", stall_ms, "Close a client that reads nothing for this long while data waits")
            ->check(CLI::Range(100, 600'000)),
        "ECSNET_STALL_TIMEOUT_MS");
    env(app.add_option("--stats-interval-s", stats_s, "Seconds between stats log lines")
            ->check(CLI::Range(1, 86'400)),
        "ECSNET_STATS_INTERVAL_S");
    env(app.add_option("--io-threads", c.io_threads,
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
    env(app.add_option("--admin-port", c.admin_port,
                       "Admin HTTP endpoint (/healthz, /readyz, /status) port; -1: off, 0: any "
                       "free port (logged)")
            ->check(CLI::Range(-1, 65535)),
        "ECSNET_ADMIN_PORT");
    env(app.add_option("--admin-bind", c.admin_bind,
                       "Address of the admin endpoint (keep it private)"),
        "ECSNET_ADMIN_BIND");
    CLI::Option* admin_allowed_hosts =
        env(app.add_option("--admin-allowed-hosts", c.admin_allowed_hosts,
                           "Host names the admin endpoint answers to besides IP addresses and "
                           "localhost, comma-separated, no port (admin.example.internal); "
                           "another name in Host gets 403 except on /healthz and /readyz (DNS "
                           "rebinding)")
                ->delimiter(',')
                ->check([](const std::string& name) { return check_admin_allowed_host(name); }),
            "ECSNET_ADMIN_ALLOWED_HOSTS");
    CLI::Option* admin_allowed_origins =
        env(app.add_option("--admin-allowed-origins", c.admin_allowed_origins,
                           "Origins a browser may open the admin endpoint's /observe from, "
                           "comma-separated (https://ops.example.com, * for any); default: its "
                           "own host only. Not --ws-allowed-origins")
                ->delimiter(',')
                ->check([](const std::string& origin) { return check_allowed_origin(origin); }),
            "ECSNET_ADMIN_ALLOWED_ORIGINS");
    env(app.add_option("--inspector-dir", c.inspector_dir,
                       "Directory of the web inspector, served by the admin endpoint at "
                       "/inspector/ (default: <exe dir>/../share/ecsnet/web/inspector, where "
                       "the build puts it). Needs --admin-port")
            ->check(CLI::ExistingDirectory),
        "ECSNET_INSPECTOR_DIR");
    env(app.add_option("--drain-seconds", drain_s,
                       "On SIGTERM: stop accepting, serve connected clients this long, then shut "
                       "down (a second signal ends it)")
            ->check(CLI::Range(0, 3600)),
        "ECSNET_DRAIN_SECONDS");
    std::string agones_port = std::to_string(c.agones_port);
    std::int64_t agones_health_ms = c.agones_health_interval.count();
    env(app.add_flag("--agones", c.agones,
                     "Tell Agones' SDK sidecar (http://127.0.0.1:--agones-port) the lifecycle: "
                     "Ready, Health pings, a players label, Shutdown (on by itself when "
                     "AGONES_SDK_HTTP_PORT is set)"),
        "ECSNET_AGONES");
    CLI::Option* agones_port_option =
        app.add_option("--agones-port", agones_port,
                       "Port of the Agones SDK sidecar's REST API on 127.0.0.1 (implies --agones)")
            ->type_name("PORT")
            ->envname("AGONES_SDK_HTTP_PORT")
            ->capture_default_str()
            ->check([](const std::string& v) {
                unsigned port = 0;
                const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), port);
                return ec == std::errc{} && end == v.data() + v.size() && port >= 1 &&
                               port <= 65535
                           ? std::string{}
                           : "not a port (1-65535): '" + v +
                                 "' (from --agones-port or AGONES_SDK_HTTP_PORT)";
            });
    CLI::Option* agones_health_option =
        env(app.add_option("--agones-health-interval-ms", agones_health_ms,
                           "Agones health pings every this many ms while ticks run on time; "
                           "keep it below the GameServer's health periodSeconds (default 5 s)")
                ->check(CLI::Range(100, 600'000)),
            "ECSNET_AGONES_HEALTH_INTERVAL_MS");
    CLI::Option* inspector_token =
        env(app.add_option("--inspector-token", c.inspector_token,
                           "Secret the web inspector needs: /observe?token=SECRET, and /clients "
                           "with it or \"Authorization: Bearer SECRET\" (empty: none; needs "
                           "--admin-port); required for them when --admin-bind is not loopback"),
            "ECSNET_INSPECTOR_TOKEN");
    CLI::Option* inspector_writes =
        env(app.add_flag("--inspector-writes", c.inspector_writes,
                         "Observers (the web inspector) may send commands, checked as any "
                         "client's; default: read-only (needs --admin-port)"),
            "ECSNET_INSPECTOR_WRITES");
    CLI::Option* max_observers =
        env(app.add_option("--max-observers", c.max_observers,
                           "Observers (GET /observe on the admin endpoint) at once; more get "
                           "Disconnect (needs --admin-port)")
                ->check(CLI::Range(0, 1024)),
            "ECSNET_MAX_OBSERVERS");
    std::int64_t checkpoint_s = c.checkpoint_interval.count();
    env(app.add_option("--state-dir", c.state_dir,
                       "Keep the world in this directory (created if missing): checkpoints, "
                       "the journal; restored from it at start (docs/PERSISTENCE.md; empty: "
                       "the world lives in memory only)")
            ->type_name("DIR"),
        "ECSNET_STATE_DIR");
    env(app.add_option("--checkpoint-seconds", checkpoint_s,
                       "With --state-dir, a checkpoint every N seconds (and one at shutdown); "
                       "0: only at shutdown")
            ->type_name("N")
            ->check(CLI::Range(0, 86'400)),
        "ECSNET_CHECKPOINT_SECONDS");
    env(app.add_option("--keep-checkpoints", c.keep_checkpoints,
                       "With --state-dir, checkpoints kept; older ones (and their journal "
                       "segments) are removed")
            ->type_name("N")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_KEEP_CHECKPOINTS");
    env(app.add_flag("--journal", c.journal,
                     "Journal every acknowledged command in --state-dir, made durable before "
                     "its result is sent: kill -9 loses nothing acknowledged (one fsync per tick)"),
        "ECSNET_JOURNAL");
    app.add_flag("--healthcheck", out.healthcheck,
                 "GET /healthz of the admin endpoint (--admin-port, --admin-bind); exit 0 on 200, "
                 "else 1 (within 2 s)");

    if (game_options) {
        game_options(app);
    }

    issue_token_request token;
    std::string ttl = "5m";
    bool allow_long_ttl = false;
    CLI::App* issue = app.add_subcommand(
        "issue-token",
        "Print a connect token (a JWT) for a player, signed with --token-secret "
        "(ECSNET_TOKEN_SECRET, HS256) or --private-key (ES256), as a game backend would issue "
        "it (docs/PROTOCOL.md, Identity)");
    issue->add_option("--player", token.player, "Player id (1-64 bytes of UTF-8)")->required();
    issue->add_option("--ttl", ttl, "Validity: 90s, 15m, 1h; at most 1d without --allow-long-ttl")
        ->capture_default_str();
    issue->add_flag("--allow-long-ttl", allow_long_ttl,
                    "Allow a --ttl over one day (a stolen token is good that long)");
    issue->add_option("--private-key", token.private_key,
                      "ES256 private key (PEM file) to sign with, instead of --token-secret")
        ->check(CLI::ExistingFile);
    issue->add_option("--world", token.world, "World id the token admits to (the server's --world-id)")
        ->envname("ECSNET_WORLD_ID")
        ->capture_default_str();
    // `issue-token --player alice --token-secret S`: the secret is the server's option, and
    // belongs after the command just as well.
    issue->fallthrough();

    inspect_state_request inspect;
    CLI::App* inspect_command = app.add_subcommand(
        "inspect-state",
        "Print what a state dir holds (checkpoints, journal segments, valid or why not), or "
        "export a checkpoint as JSON; reads only, safe beside a running server. Exit 0, 1 when "
        "nothing valid is found, 2 on a usage error");
    inspect_command->add_option("DIR", inspect.dir,
                                "The state dir (default: --state-dir / ECSNET_STATE_DIR)")
        ->type_name("DIR");
    inspect_command->add_flag("--json", inspect.json,
                              "Export the newest valid checkpoint (or --tick's) as JSON");
    CLI::Option* inspect_tick =
        inspect_command->add_option("--tick", inspect.tick, "With --json: the checkpoint of this tick")
            ->type_name("T");
    inspect_command->add_option("--output", inspect.output, "Write to FILE instead of stdout")
        ->type_name("FILE");

    try {
        app.parse(argc, argv);
        if (issue->parsed()) {
            try {
                token.ttl = parse_ttl(ttl);
            } catch (const std::invalid_argument& e) {
                throw CLI::ValidationError("--ttl", e.what());
            }
            if (token.ttl > max_default_token_ttl && !allow_long_ttl) {
                throw CLI::ValidationError(
                    "--ttl", "'" + ttl + "' is over one day: a stolen token would admit that "
                    "long; add --allow-long-ttl if you mean it");
            }
            if (token.private_key.empty() && c.token_secret.empty()) {
                throw CLI::RequiredError(
                    "--token-secret (or ECSNET_TOKEN_SECRET) or --private-key for issue-token "
                    "(a public key verifies but cannot sign)");
            }
            out.issue_token = token;
        }
        if (inspect_command->parsed()) {
            if (inspect.dir.empty()) {
                inspect.dir = c.state_dir;
            }
            if (inspect.dir.empty()) {
                throw CLI::RequiredError("inspect-state DIR (or --state-dir / ECSNET_STATE_DIR)");
            }
            if (inspect_tick->count() > 0 && !inspect.json) {
                throw CLI::ValidationError("--tick", "exports a checkpoint: add --json");
            }
            out.inspect_state = inspect;
        }
        if (c.journal && c.state_dir.empty()) {
            throw CLI::ValidationError("--journal", "needs --state-dir (the journal is kept "
                                                    "there, beside the checkpoints)");
        }
        if (!c.token_secret.empty() && !c.token_public_key.empty()) {
            throw CLI::ValidationError("--token-secret/--token-public-key",
                                       "give one: a secret (HS256) or a public key (ES256)");
        }
        if (!c.token_public_key.empty()) {
            try {
                (void)es256_verifier(read_key_file(c.token_public_key));
            } catch (const std::invalid_argument& e) {
                throw CLI::ValidationError("--token-public-key", e.what());
            }
        }
        if (!c.token_secret.empty() && c.token_secret.size() < min_token_secret_bytes) {
            throw CLI::ValidationError("--token-secret", "must be at least " +
                                                             std::to_string(min_token_secret_bytes) +
                                                             " bytes (for example: openssl rand -hex 32)");
        }
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
        if (!c.inspector_dir.empty() && c.admin_port < 0) {
            throw CLI::ValidationError("--inspector-dir", "needs --admin-port (the inspector is "
                                                          "served by the admin endpoint)");
        }
        // Observers come through the admin endpoint: without it these would silently do nothing.
        for (const CLI::Option* o : {admin_allowed_hosts, admin_allowed_origins}) {
            if (o->count() > 0 && c.admin_port < 0) {
                throw CLI::ValidationError(o->get_name(), "needs --admin-port");
            }
        }
        for (const CLI::Option* o : {inspector_token, inspector_writes, max_observers}) {
            if (o->count() > 0 && c.admin_port < 0) {
                throw CLI::ValidationError(o->get_name(), "needs --admin-port (observers join "
                                                          "through the admin endpoint)");
            }
        }
        if (agones_port_option->count() > 0) {
            c.agones = true;
        }
        if (agones_health_option->count() > 0 && !c.agones) {
            throw CLI::ValidationError("--agones-health-interval-ms",
                                       "needs --agones (or AGONES_SDK_HTTP_PORT)");
        }
        c.agones_port = static_cast<std::uint16_t>(std::stoul(agones_port));
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code.
        out.exit_code = app.exit(e) == 0 ? 0 : 2;
        return out;
    }
    c.log_format_ = format == "json" ? log_format::json : log_format::text;
    c.hello_timeout = std::chrono::milliseconds{hello_ms};
    c.idle_timeout = std::chrono::milliseconds{idle_ms};
    c.frame_timeout = std::chrono::milliseconds{frame_ms};
    c.stall_timeout = std::chrono::milliseconds{stall_ms};
    c.web_stall_timeout = std::chrono::milliseconds{web_stall_ms};
    c.stats_interval = std::chrono::seconds{stats_s};
    c.resync_interval = std::chrono::milliseconds{resync_ms};
    c.drain = std::chrono::seconds{drain_s};
    c.checkpoint_interval = std::chrono::seconds{checkpoint_s};
    c.agones_health_interval = std::chrono::milliseconds{agones_health_ms};
    c.reconnect_grace = std::chrono::milliseconds{std::llround(grace_s * 1000.0)};
    return out;
}

std::string admin_probe_host(const server_config& config) {
    if (config.admin_bind == "0.0.0.0" || config.admin_bind.empty()) {
        return "127.0.0.1";
    }
    if (config.admin_bind == "::") {
        return "::1";
    }
    return config.admin_bind;
}

std::string describe(const server_config& c) {
    return fmt::format(
        "bind={} port={} tick_rate={} max_clients={} max_frame_bytes={} queue_bytes={} "
        "demo_entities={} max_entities={} max_entities_per_client={} command_rate={}/s "
        "burst={} input_buffer_ticks={} input_rate={}/s checksum_interval={} checksum_slice={} "
        "interest={} auth={} identity={} "
        "max_connections_per_player={} tls={} ws={} max_pending={} "
        "max_pending_per_address={} resync_interval={}ms on_disconnect={} world=[-{},{}] log={}/{} "
        "io_threads={} observers={} admin={} drain={}s agones={} state={}",
        c.bind, c.port, c.tick_rate, c.max_clients, c.max_frame_bytes, c.queue_bytes,
        c.demo_entities, c.max_entities, c.max_entities_per_client, c.command_rate,
        c.command_burst, c.input_buffer_ticks, c.input_rate, c.checksum_interval, c.checksum_slice,
        c.interest_radius > 0.0F
            ? fmt::format("radius {} cell {} budget {}", c.interest_radius, c.interest_cell,
                          c.client_budget > 0.0 ? fmt::format("{} B/s", c.client_budget) : "unlimited")
            : std::string{"off"},
        c.auth_token.empty() ? "off" : "token",
        !uses_connect_tokens(c)
            ? fmt::format("resume-keys(max_clients_per_address={})", c.max_clients_per_address)
            : fmt::format("connect-tokens({} world={} remembered={})",
                          c.token_secret.empty() ? "ES256" : "HS256", c.world_id,
                          c.max_remembered_tokens),
        c.max_connections_per_player,
        c.tls_cert.empty() ? "off" : "on",
        c.ws_port < 0 ? std::string{"off"}
                      : fmt::format("{}(origins {}{})", c.ws_port,
                                    c.ws_allowed_origins.empty()
                                        ? std::string{"same-host"}
                                        : fmt::format("{}", fmt::join(c.ws_allowed_origins, ",")),
                                    c.web_root.empty()
                                        ? std::string{}
                                        : fmt::format(" web-root {} (pages {}/address, memory {} B, "
                                                      "chunk {} B, stall {} ms)",
                                                      c.web_root, c.web_max_per_address,
                                                      c.web_memory_bytes, c.web_chunk_bytes,
                                                      c.web_stall_timeout.count())),
        c.max_pending, c.max_pending_per_address,
        c.resync_interval.count(),
        c.keep_entities_on_disconnect
            ? std::string{"keep"}
            : fmt::format("despawn after {} s", std::chrono::duration<double>(c.reconnect_grace).count()),
        c.world_half_extent,
        c.world_half_extent, c.log_level, c.log_format_ == log_format::json ? "json" : "text",
        c.io_threads,
        c.admin_port < 0 ? std::string{"off"}
                         : fmt::format("{}({}{})", c.max_observers,
                                       c.inspector_writes ? "read-write" : "read-only",
                                       c.inspector_token.empty() ? "" : ", token"),
        c.admin_port < 0 ? std::string{"off"} : c.admin_bind + ":" + std::to_string(c.admin_port),
        c.drain.count(),
        c.agones ? fmt::format("127.0.0.1:{}(health every {} ms)", c.agones_port,
                               c.agones_health_interval.count())
                 : std::string{"off"},
        c.state_dir.empty()
            ? std::string{"off"}
            : fmt::format("{}(checkpoint {} keep {} journal {})", c.state_dir,
                          c.checkpoint_interval.count() == 0
                              ? std::string{"at shutdown"}
                              : fmt::format("every {} s", c.checkpoint_interval.count()),
                          c.keep_checkpoints, c.journal ? "on" : "off"));
}

}  // namespace ecsnet::server
