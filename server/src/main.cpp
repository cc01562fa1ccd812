// ecsnet-server: parse the configuration, run the service until SIGINT/SIGTERM.
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstdio>

#include "ecsnet/server/config.hpp"
#include "ecsnet/server/connect_token.hpp"
#include "ecsnet/server/healthcheck.hpp"
#include "ecsnet/server/logging.hpp"
#include "ecsnet/server/server.hpp"

int main(int argc, char** argv) {
    using namespace ecsnet::server;
    auto parsed = parse_command_line(argc, argv);
    if (parsed.exit_code) {
        return *parsed.exit_code;
    }
    if (parsed.issue_token) {
        try {
            const auto& t = *parsed.issue_token;
            std::printf("%s\n", issue_connect_token(
                                     {t.player, t.world, std::chrono::system_clock::now() + t.ttl},
                                     parsed.config.token_secret)
                                     .c_str());
            return 0;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "ecsnet-server issue-token: %s\n", e.what());
            return 2;
        }
    }
    if (parsed.healthcheck) {
        std::string why;
        const int code = run_healthcheck("127.0.0.1", parsed.config.port,
                                         std::chrono::milliseconds{2000}, why);
        std::fprintf(code == 0 ? stdout : stderr, "%s\n", code == 0 ? "healthy" : why.c_str());
        return code;
    }

    setup_logging(parsed.config.log_level, parsed.config.log_format_);
    try {
        boost::asio::io_context io{1};
        server service{io, parsed.config};
        service.start();

        // As PID 1 in a container there is no default handler: without this, SIGTERM is ignored.
        boost::asio::signal_set signals{io, SIGINT, SIGTERM};
        const auto on_signal = [&](const boost::system::error_code& ec, int signal) {
            if (ec) {
                return;
            }
            spdlog::info("received {}, shutting down", signal == SIGINT ? "SIGINT" : "SIGTERM");
            service.stop();  // bounded by the shutdown grace; run() then returns
        };
        signals.async_wait(on_signal);
        io.run();  // returns once every client has been flushed or cut off
        spdlog::info("stopped after {} ticks", service.tick());
        return 0;
    } catch (const std::exception& e) {
        spdlog::critical("ecsnet-server: {}", e.what());
        return 1;
    }
}
