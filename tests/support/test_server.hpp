// The server over real sockets, in the test's process: it runs on its own thread with its own
// io_context, and the test thread talks to it only through clients and call(), which runs a
// function on the server's thread. Shared by the socket-level server tests.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ecsnet/demo/game.hpp"
#include "ecsnet/server/operations/admin.hpp"
#include "ecsnet/server/game.hpp"
#include "ecsnet/server/server.hpp"

namespace ecsnet::test {

using namespace std::chrono_literals;

// A server for a test: on 127.0.0.1, a free port, `tick_rate`, and a short shutdown grace (the
// test ends it). Each test sets what else it needs.
inline server::server_config local_server_config(double tick_rate) {
    server::server_config c;
    c.bind = "127.0.0.1";
    c.port = 0;
    c.tick_rate = tick_rate;
    c.shutdown_grace = 1000ms;
    return c;
}

class test_server {
public:
    using clock_type = std::chrono::steady_clock;
    // The demo game's server (what ecsnet-server runs), or with no_game the core alone.
    enum class game_choice { demo, no_game };
    explicit test_server(server::server_config config, game_choice game = game_choice::demo)
        : test_server(std::move(config),
                      game == game_choice::demo ? demo::game() : server::game{}) {}
    // A game of the test's own.
    test_server(server::server_config config, const server::game& g) {
        spdlog::set_level(spdlog::level::warn);
        server_.emplace(io_, std::move(config), g);
        std::promise<std::pair<std::uint16_t, std::uint16_t>> ports;
        auto ports_future = ports.get_future();
        thread_ = std::thread([this, ports = std::move(ports)]() mutable { run(ports); });
        try {
            std::tie(port_, ws_port_) = ports_future.get();
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    test_server(const test_server&) = delete;
    test_server& operator=(const test_server&) = delete;
    ~test_server() { (void)stop(); }

    // Where this test's clients connect: the WebSocket port when the config enables one
    // (the session tests over each transport, test_support.hpp), else the TCP port.
    [[nodiscard]] std::uint16_t port() const noexcept { return ws_port_ != 0 ? ws_port_ : port_; }
    [[nodiscard]] std::uint16_t tcp_port() const noexcept { return port_; }
    [[nodiscard]] std::uint16_t ws_port() const noexcept { return ws_port_; }

    // Starts the admin endpoint on a free port of options.bind (127.0.0.1 unless the test says),
    // wired to the server as run() wires it (observers included); returns its port.
    std::uint16_t start_admin(server::admin_options options = {}) {
        options.port = 0;
        options.observe = [this](server::released_socket socket, server::upgrade_request request) {
            server_->adopt_observer(std::move(socket), std::move(request));
        };
        admin_.emplace(*server_, std::move(options));
        admin_->start();
        return admin_->port();
    }

    // Runs f(server) on the server's thread and returns its result.
    template <typename F>
    auto call(F f) -> std::invoke_result_t<F&, ecsnet::server::server&> {
        using result = std::invoke_result_t<F&, ecsnet::server::server&>;
        auto task = std::make_shared<std::packaged_task<result()>>(
            [this, f = std::move(f)]() mutable { return f(*server_); });
        auto future = task->get_future();
        boost::asio::post(io_, [task] { (*task)(); });
        if (future.wait_for(5s) != std::future_status::ready) {
            throw std::runtime_error("the server thread did not answer within 5 s");
        }
        return future.get();
    }
    server::server_stats stats() {
        return call([](ecsnet::server::server& s) { return s.stats(); });
    }
    std::size_t clients() {
        return call([](ecsnet::server::server& s) { return s.clients(); });
    }
    std::uint64_t tick() {
        return call([](ecsnet::server::server& s) { return s.tick(); });
    }

    // Graceful stop: server::stop() on its thread, then run() must return by itself. Returns
    // how long that took.
    std::chrono::milliseconds stop() {
        if (!thread_.joinable()) {
            return std::chrono::milliseconds{0};
        }
        const auto started = clock_type::now();
        boost::asio::post(io_, [this] { server_->stop(); });
        if (finished_.wait_for(15s) != std::future_status::ready) {
            ADD_FAILURE() << "io_context::run() did not return within 15 s of server::stop()";
            io_.stop();
        }
        thread_.join();
        EXPECT_EQ(run_error_, "") << "io_context::run() threw";
        return std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started);
    }

private:
    void run(std::promise<std::pair<std::uint16_t, std::uint16_t>>& ports) {
        try {
            server_->start();
            ports.set_value({server_->port(), server_->ws_port()});
        } catch (...) {
            ports.set_exception(std::current_exception());
            finished_promise_.set_value();
            return;
        }
        try {
            io_.run();
        } catch (const std::exception& e) {
            run_error_ = e.what();
        }
        finished_promise_.set_value();
    }

    boost::asio::io_context io_;
    std::optional<ecsnet::server::server> server_;
    std::thread thread_;
    std::uint16_t port_{0};
    std::uint16_t ws_port_{0};
    std::promise<void> finished_promise_;
    std::future<void> finished_ = finished_promise_.get_future();
    std::string run_error_;  // written by the server thread, read after join
    // After server_: stopped (its thread joined) before the server goes.
    std::optional<server::admin_endpoint> admin_;
};

}  // namespace ecsnet::test
