// The operations part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

#include <charconv>
#include <chrono>
#include <string>
#include <system_error>

#include "ecsnet/server/operations/admin.hpp"

namespace ecsnet::server::detail {

void add_operations_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Operations", "Logging, the admin endpoint, the web inspector, draining, Agones");
    std::int64_t& stats_s = cl.number(c.stats_interval.count());
    std::int64_t& drain_s = cl.number(c.drain.count());
    std::string& format = cl.text("text");
    env(g->add_option("--log-level", c.log_level, "trace, debug, info, warn, error, critical, off (SPDLOG_LEVEL also works)")
            ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"})),
        "ECSNET_LOG_LEVEL");
    env(g->add_option("--log-format", format, "text or json (one JSON object per line)")
            ->check(CLI::IsMember({"text", "json"})),
        "ECSNET_LOG_FORMAT");
    env(g->add_option("--connection-log-lines", c.connection_log_lines,
                       "Join, leave and refusal lines logged per 10 s; past it they are counted "
                       "in the stats line (0: log every one)"),
        "ECSNET_CONNECTION_LOG_LINES");
    env(g->add_option("--stats-interval-s", stats_s, "Seconds between stats log lines")
            ->check(CLI::Range(1, 86'400)),
        "ECSNET_STATS_INTERVAL_S");
    env(g->add_option("--admin-port", c.admin_port,
                       "Admin HTTP endpoint (/healthz, /readyz, /status) port; -1: off, 0: any "
                       "free port (logged)")
            ->check(CLI::Range(-1, 65535)),
        "ECSNET_ADMIN_PORT");
    env(g->add_option("--admin-bind", c.admin_bind,
                       "Address of the admin endpoint (keep it private)"),
        "ECSNET_ADMIN_BIND");
    CLI::Option* admin_allowed_hosts =
        env(g->add_option("--admin-allowed-hosts", c.admin_allowed_hosts,
                           "Host names the admin endpoint answers to besides IP addresses and "
                           "localhost, comma-separated, no port (admin.example.internal); "
                           "another name in Host gets 403 except on /healthz and /readyz (DNS "
                           "rebinding)")
                ->delimiter(',')
                ->check([](const std::string& name) { return check_admin_allowed_host(name); }),
            "ECSNET_ADMIN_ALLOWED_HOSTS");
    CLI::Option* admin_allowed_origins =
        env(g->add_option("--admin-allowed-origins", c.admin_allowed_origins,
                           "Origins a browser may open the admin endpoint's /observe from, "
                           "comma-separated (https://ops.example.com, * for any); default: its "
                           "own host only. Not --ws-allowed-origins")
                ->delimiter(',')
                ->check([](const std::string& origin) { return check_allowed_origin(origin); }),
            "ECSNET_ADMIN_ALLOWED_ORIGINS");
    env(g->add_option("--inspector-dir", c.inspector_dir,
                       "Directory of the web inspector, served by the admin endpoint at "
                       "/inspector/ (default: <exe dir>/../share/ecsnet/web/inspector, where "
                       "the build puts it). Needs --admin-port")
            ->check(CLI::ExistingDirectory),
        "ECSNET_INSPECTOR_DIR");
    env(g->add_option("--drain-seconds", drain_s,
                       "On SIGTERM: stop accepting, serve connected clients this long, then shut "
                       "down (a second signal ends it)")
            ->check(CLI::Range(0, 3600)),
        "ECSNET_DRAIN_SECONDS");
    std::string& agones_port = cl.text(std::to_string(c.agones_port));
    std::int64_t& agones_health_ms = cl.number(c.agones_health_interval.count());
    env(g->add_flag("--agones", c.agones,
                     "Tell Agones' SDK sidecar (http://127.0.0.1:--agones-port) the lifecycle: "
                     "Ready, Health pings, a players label, Shutdown (on by itself when "
                     "AGONES_SDK_HTTP_PORT is set)"),
        "ECSNET_AGONES");
    CLI::Option* agones_port_option =
        g->add_option("--agones-port", agones_port,
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
        env(g->add_option("--agones-health-interval-ms", agones_health_ms,
                           "Agones health pings every this many ms while ticks run on time; "
                           "keep it below the GameServer's health periodSeconds (default 5 s)")
                ->check(CLI::Range(100, 600'000)),
            "ECSNET_AGONES_HEALTH_INTERVAL_MS");
    CLI::Option* inspector_token =
        env(g->add_option("--inspector-token", c.inspector_token,
                           "Secret the web inspector needs: /observe?token=SECRET, and /clients "
                           "with it or \"Authorization: Bearer SECRET\" (empty: none; needs "
                           "--admin-port); required for them when --admin-bind is not loopback"),
            "ECSNET_INSPECTOR_TOKEN");
    CLI::Option* inspector_writes =
        env(g->add_flag("--inspector-writes", c.inspector_writes,
                         "Observers (the web inspector) may send commands, checked as any "
                         "client's; default: read-only (needs --admin-port)"),
            "ECSNET_INSPECTOR_WRITES");
    CLI::Option* max_observers =
        env(g->add_option("--max-observers", c.max_observers,
                           "Observers (GET /observe on the admin endpoint) at once; more get "
                           "Disconnect (needs --admin-port)")
                ->check(CLI::Range(0, 1024)),
            "ECSNET_MAX_OBSERVERS");
    cl.after_parse([&c, &format, &stats_s, &drain_s, &agones_port, &agones_health_ms,
                     admin_allowed_hosts, admin_allowed_origins, inspector_token, inspector_writes,
                     max_observers, agones_port_option, agones_health_option] {
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
        c.log_format_ = format == "json" ? log_format::json : log_format::text;
        c.stats_interval = std::chrono::seconds{stats_s};
        c.drain = std::chrono::seconds{drain_s};
        c.agones_health_interval = std::chrono::milliseconds{agones_health_ms};
    });
}

}  // namespace ecsnet::server::detail
