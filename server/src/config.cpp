#include "ecsnet/server/config.hpp"

#include <CLI/CLI.hpp>
#include <spdlog/fmt/fmt.h>

#include <stdexcept>
#include <thread>

#include "command_line.hpp"
#include "ecsnet/server/admission/connect_token.hpp"

#ifndef ECSNET_VERSION
#define ECSNET_VERSION "0.0.0"
#endif

namespace ecsnet::server {

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

    // Each part's options, a group of --help each (server/src/<part>/options.cpp).
    detail::command_line parts{app, c};
    detail::add_transport_options(parts);
    detail::add_session_options(parts);
    detail::add_admission_options(parts);
    detail::add_simulation_options(parts);
    detail::add_replication_options(parts);
    detail::add_persistence_options(parts);
    detail::add_operations_options(parts);
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
        parts.finish();
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code.
        out.exit_code = app.exit(e) == 0 ? 0 : 2;
        return out;
    }
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
