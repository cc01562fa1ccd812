// A game's server binary: parse the configuration, run the service until SIGINT/SIGTERM.
#include "ecsnet/server/run.hpp"

#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <optional>

#include "ecsnet/server/operations/admin.hpp"
#include "ecsnet/server/operations/agones.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/operations/healthcheck.hpp"
#include "ecsnet/server/persistence/inspect_state.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/server.hpp"
#include "ecsnet/server/transport/static_files.hpp"

namespace {

int healthcheck(const ecsnet::server::server_config& config) {
    std::string why;
    int code = 1;
    if (config.admin_port <= 0) {
        why = config.admin_port < 0
                  ? "the admin endpoint is off: give the server and --healthcheck the same "
                    "--admin-port (ECSNET_ADMIN_PORT)"
                  : "--admin-port 0 (any free port) cannot be probed: give the port the server "
                    "logged";
    } else {
        code = ecsnet::server::run_healthcheck(ecsnet::server::admin_probe_host(config),
                                               static_cast<std::uint16_t>(config.admin_port),
                                               std::chrono::milliseconds{2000}, why);
    }
    std::fprintf(code == 0 ? stdout : stderr, "%s\n", why.c_str());
    return code;
}

}  // namespace

namespace ecsnet::server {

int run(int argc, char** argv, const game& g) {
    auto parsed = parse_command_line(argc, argv, g.add_options);
    if (parsed.exit_code) {
        return *parsed.exit_code;
    }
    if (parsed.issue_token) {
        try {
            const auto& t = *parsed.issue_token;
            const auto now = std::chrono::system_clock::now();
            const connect_token_claims claims{t.player, t.world, random_jti(), now + t.ttl,
                                              std::nullopt};
            const std::string token =
                t.private_key.empty()
                    ? issue_connect_token(claims, token_algorithm::hs256,
                                          parsed.config.token_secret)
                    : issue_connect_token(claims, token_algorithm::es256,
                                          read_key_file(t.private_key));
            std::printf("%s\n", token.c_str());
            return 0;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "issue-token: %s\n", e.what());
            return 2;
        }
    }
    if (parsed.inspect_state) {
        return inspect_state(*parsed.inspect_state, stdout, stderr);
    }
    if (parsed.healthcheck) {
        return healthcheck(parsed.config);
    }

    setup_logging(parsed.config.log_level, parsed.config.log_format_);
    // Past a file-size limit (RLIMIT_FSIZE) a write then fails with EFBIG, which the journal
    // and the checkpoints report, rather than the process being killed mid-write.
    std::signal(SIGXFSZ, SIG_IGN);
    // A game's own page on its WebSocket port, when it was built beside the binary.
    if (!g.web_app.empty() && parsed.config.web_root.empty() && parsed.config.ws_port >= 0) {
        const std::filesystem::path page = default_web_dir(g.web_app);
        std::error_code ec;
        if (!page.empty() && std::filesystem::is_directory(page, ec)) {
            parsed.config.web_root = page.string();
        } else {
            spdlog::info("no {} page to serve: {} is not a directory (--web-root DIR serves one)",
                         g.web_app, page.empty() ? std::string{"its directory"} : page.string());
        }
    }
    try {
        boost::asio::io_context io{1};
        server service{io, parsed.config, g};
        service.start();
        // After the service, so that it is destroyed (its thread joined) first.
        std::optional<admin_endpoint> admin;
        if (parsed.config.admin_port >= 0) {
            admin_options options;
            options.bind = parsed.config.admin_bind;
            options.port = static_cast<std::uint16_t>(parsed.config.admin_port);
            options.allowed_hosts = parsed.config.admin_allowed_hosts;
            options.allowed_origins = parsed.config.admin_allowed_origins;
            options.inspector_dir = parsed.config.inspector_dir.empty()
                                        ? default_web_dir("inspector")
                                        : std::filesystem::path{parsed.config.inspector_dir};
            options.observe = [&service](released_socket socket, upgrade_request request) {
                service.adopt_observer(std::move(socket), std::move(request));
            };
            admin.emplace(service, std::move(options));
            admin->start();
        }
        // Also after the service; told Shutdown once the world has ended (after the drain).
        std::optional<agones_sdk> agones;
        if (parsed.config.agones) {
            agones_options options;
            options.port = parsed.config.agones_port;
            options.health_interval = parsed.config.agones_health_interval;
            agones.emplace(service, options);
            agones->start();
        }

        // As PID 1 in a container there is no default handler: without this, SIGTERM is ignored.
        // With --drain-seconds, the first signal starts the drain (readyz 503, listener closed,
        // connected clients served) and its end or a second signal shuts down.
        boost::asio::signal_set signals{io, SIGINT, SIGTERM};
        boost::asio::steady_timer drain_timer{io};
        bool draining = false;
        const auto shut_down = [&] {
            signals.cancel();
            drain_timer.cancel();
            service.stop();  // bounded by the shutdown grace; run() then returns
        };
        std::function<void(const boost::system::error_code&, int)> on_signal =
            [&](const boost::system::error_code& ec, int signal) {
                if (ec) {
                    return;
                }
                const char* name = signal == SIGINT ? "SIGINT" : "SIGTERM";
                if (draining) {
                    spdlog::info("received {} while draining, shutting down", name);
                    shut_down();
                    return;
                }
                if (parsed.config.drain.count() == 0) {
                    spdlog::info("received {}, shutting down", name);
                    shut_down();
                    return;
                }
                spdlog::info("received {}, draining for {} s, then shutting down", name,
                             parsed.config.drain.count());
                draining = true;
                service.drain();
                drain_timer.expires_after(parsed.config.drain);
                drain_timer.async_wait([&](const boost::system::error_code& timer_ec) {
                    if (!timer_ec) {
                        spdlog::info("drain over, shutting down");
                        shut_down();
                    }
                });
                signals.async_wait(on_signal);
            };
        signals.async_wait(on_signal);
        // A stop the service decides itself (the journal cannot be written) ends the process
        // as a signal does: nothing may keep run() from returning.
        service.on_stop = [&] {
            signals.cancel();
            drain_timer.cancel();
        };
        io.run();  // returns once every client has been flushed or cut off
        spdlog::info("stopped after {} ticks", service.tick());
        if (agones) {
            (void)agones->shutdown(std::chrono::seconds{3});
        }
        if (!service.failure().empty()) {
            // Supervisors (Kubernetes, systemd, compose) must see it.
            spdlog::critical("exiting with status 1: {}", service.failure());
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        spdlog::critical("{}: {}", g.name.empty() ? "server" : g.name, e.what());
        return 1;
    }
}

}  // namespace ecsnet::server
