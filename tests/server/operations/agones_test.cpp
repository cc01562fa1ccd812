// The Agones lifecycle (agones.hpp) against a fake SDK sidecar written here from Agones' REST
// reference (third_party/agones/docs/rest.md): the server in this process, and ecsnet-server as
// a process for SIGTERM and the drain.
#include "ecsnet/server/operations/agones.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/server.hpp"
#include "client_polling.hpp"
#include "server_process.hpp"

namespace agones_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using ecsnet::server::agones_options;
using ecsnet::server::agones_sdk;
using ecsnet::server::server_config;
using ecsnet::test::join;
using ecsnet::test::server_process;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

long long ms(clock_type::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

// Polls pred() every 10 ms until it holds, at most `timeout`.
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    while (!pred()) {
        if (clock_type::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(10ms);
    }
    return true;
}

struct sidecar_call {
    std::string method;
    std::string path;
    std::string body;
    clock_type::time_point at;
};

// The SDK sidecar's REST API as rest.md describes it, on 127.0.0.1 (a free port) and a thread
// of its own: POST /ready, /health, /shutdown ({} in, {} out), PUT /metadata/label
// ({"key","value"}), GET /gameserver (a GameServer) and GET /watch/gameserver (newline-delimited
// {"result": GameServer} objects, chunked, one per change). It records every request with its
// time. It can be taken down (listener and connections closed) and brought back on the same
// port, or made to answer 500 with a body that is not JSON.
class fake_sidecar {
public:
    fake_sidecar() : acceptor_{io_} {
        listen(0);
        thread_ = std::thread{[this] { io_.run(); }};
    }
    fake_sidecar(const fake_sidecar&) = delete;
    fake_sidecar& operator=(const fake_sidecar&) = delete;
    ~fake_sidecar() {
        io_.stop();
        thread_.join();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    void go_down() {
        on_thread([this] {
            boost::system::error_code ignored;
            acceptor_.close(ignored);
            for (auto& [id, socket] : open_) {
                socket->close(ignored);
            }
        });
    }
    void come_up() {
        on_thread([this] { listen(port_); });
    }
    void answer_errors(bool on) { errors_ = on; }

    // The GameServer changes: GET /gameserver answers it, open watches get a line.
    void set_gameserver(const std::string& state, const std::map<std::string, std::string>& labels,
                        const std::map<std::string, std::string>& annotations) {
        nlohmann::json gs = {
            {"object_meta",
             {{"name", "ecsnet-test"},
              {"namespace", "default"},
              {"uid", "1234"},
              {"resource_version", "v1"},
              {"generation", "1"},
              {"creation_timestamp", "1531795395"},
              {"annotations", annotations},
              {"labels", labels}}},
            {"status",
             {{"state", state},
              {"address", "127.0.0.1"},
              {"ports", nlohmann::json::array({{{"name", "default"}, {"port", 7777}}})}}}};
        const std::lock_guard lock{mutex_};
        gameserver_ = gs.dump();
        watch_lines_.push_back(nlohmann::json{{"result", gs}}.dump() + "\n");
    }
    // A line on the open watches as it is (not a GameServer: the SDK must skip it).
    void push_watch_line(std::string line) {
        const std::lock_guard lock{mutex_};
        watch_lines_.push_back(std::move(line));
    }
    // The open watch streams end (chunked: the last chunk), as when the sidecar restarts.
    void end_watches() { ++watch_generation_; }

    [[nodiscard]] std::vector<sidecar_call> calls() const {
        const std::lock_guard lock{mutex_};
        return calls_;
    }
    [[nodiscard]] std::vector<sidecar_call> calls(std::string_view method, std::string_view path) const {
        std::vector<sidecar_call> out;
        for (const sidecar_call& c : calls()) {
            if (c.method == method && c.path == path) {
                out.push_back(c);
            }
        }
        return out;
    }
    [[nodiscard]] std::size_t count(std::string_view method, std::string_view path) const {
        return calls(method, path).size();
    }
    // The "players" label values the SDK set, in order.
    [[nodiscard]] std::vector<std::string> player_labels() const {
        std::vector<std::string> out;
        for (const sidecar_call& c : calls("PUT", "/metadata/label")) {
            const auto body = nlohmann::json::parse(c.body, nullptr, false);
            if (body.is_object() && body.value("key", "") == "players") {
                out.push_back(body.value("value", "?"));
            }
        }
        return out;
    }

private:
    void listen(std::uint16_t port) {
        acceptor_ = asio::ip::tcp::acceptor{io_, {asio::ip::make_address("127.0.0.1"), port}};
        port_ = acceptor_.local_endpoint().port();
        asio::co_spawn(io_, accept_loop(), asio::detached);
    }

    void on_thread(std::function<void()> f) {
        std::promise<void> done;
        asio::post(io_, [&] {
            f();
            done.set_value();
        });
        if (done.get_future().wait_for(5s) != std::future_status::ready) {
            throw std::runtime_error("the fake sidecar's thread did not answer within 5 s");
        }
    }

    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
            if (ec) {
                co_return;  // closed: down
            }
            asio::co_spawn(io_, serve(std::move(socket)), asio::detached);
        }
    }

    asio::awaitable<void> serve(asio::ip::tcp::socket socket) {
        const std::uint64_t id = next_id_++;
        open_.emplace(id, &socket);
        struct forget {
            std::map<std::uint64_t, asio::ip::tcp::socket*>& open;
            std::uint64_t id;
            ~forget() { open.erase(id); }
        } forget_on_end{open_, id};
        beast::flat_buffer buffer;
        for (;;) {
            http::request<http::string_body> req;
            if (auto [ec, n] = co_await http::async_read(socket, buffer, req, use_tuple); ec) {
                co_return;
            }
            const std::string path{req.target()};
            std::size_t watch_from = 0;  // a watch sends the lines pushed after it was recorded
            {
                const std::lock_guard lock{mutex_};
                calls_.push_back({std::string{req.method_string()}, path, req.body(), clock_type::now()});
                watch_from = watch_lines_.size();
            }
            http::response<http::string_body> res{http::status::ok, req.version()};
            res.set(http::field::content_type, "application/json");
            const auto body = nlohmann::json::parse(req.body(), nullptr, false);
            if (errors_) {
                res.result(http::status::internal_server_error);
                res.body() = "<html>garbage{";
            } else if (req.method() == http::verb::get && path == "/watch/gameserver") {
                co_await stream_watch(socket, watch_from);
                co_return;
            } else if (req.method() == http::verb::get && path == "/gameserver") {
                const std::lock_guard lock{mutex_};
                res.body() = gameserver_;
            } else if (req.method() == http::verb::post &&
                       (path == "/ready" || path == "/health" || path == "/shutdown")) {
                res.body() = body.is_object() ? "{}" : R"({"error":"body is not {}"})";
                if (!body.is_object()) {
                    res.result(http::status::bad_request);
                }
            } else if (req.method() == http::verb::put && path == "/metadata/label") {
                const bool valid = body.is_object() && body.contains("key") &&
                                   body["key"].is_string() && body.contains("value") &&
                                   body["value"].is_string();
                res.result(valid ? http::status::ok : http::status::bad_request);
                res.body() = "{}";
            } else {
                res.result(http::status::not_found);
                res.body() = R"({"error":"Not Found"})";
            }
            res.keep_alive(req.keep_alive());
            res.prepare_payload();
            if (auto [ec, n] = co_await http::async_write(socket, res, use_tuple); ec) {
                co_return;
            }
            if (!req.keep_alive()) {
                boost::system::error_code ignored;
                socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
                co_return;
            }
        }
    }

    // A chunk per line, from the lines pushed after it began, until end_watches() or down.
    asio::awaitable<void> stream_watch(asio::ip::tcp::socket& socket, std::size_t next) {
        const int generation = watch_generation_;
        std::string out =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        asio::steady_timer timer{io_};
        for (;;) {
            {
                const std::lock_guard lock{mutex_};
                for (; next < watch_lines_.size(); ++next) {
                    char size[32];
                    std::snprintf(size, sizeof size, "%zx\r\n", watch_lines_[next].size());
                    out += size + watch_lines_[next] + "\r\n";
                }
            }
            const bool ending = watch_generation_ != generation;
            if (ending) {
                out += "0\r\n\r\n";
            }
            if (!out.empty()) {
                if (auto [ec, n] = co_await asio::async_write(socket, asio::buffer(out), use_tuple); ec) {
                    co_return;
                }
                out.clear();
            }
            if (ending || !socket.is_open()) {
                boost::system::error_code ignored;
                socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
                co_return;
            }
            timer.expires_after(10ms);
            co_await timer.async_wait(use_tuple);
        }
    }

    std::uint16_t port_{0};
    std::map<std::uint64_t, asio::ip::tcp::socket*> open_;  // on the sidecar's thread
    std::uint64_t next_id_{0};
    std::atomic<bool> errors_{false};
    std::atomic<int> watch_generation_{0};
    mutable std::mutex mutex_;
    std::vector<sidecar_call> calls_;
    std::string gameserver_ = R"({"object_meta":{"name":"ecsnet-test","namespace":"default",)"
                              R"("labels":{"islocal":"true"}},"status":{"state":"Scheduled",)"
                              R"("address":"127.0.0.1","ports":[{"name":"default","port":7777}]}})";
    std::vector<std::string> watch_lines_;
    // After what the coroutines use: io_'s destructor destroys their frames.
    asio::io_context io_{1};
    // While down, nothing else keeps run() going.
    asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
    asio::ip::tcp::acceptor acceptor_;
    std::thread thread_;
};

// The demo server in this process, started when the test says so (run() starts it before the
// SDK; here the SDK can be running first, to see that it waits).
class world {
public:
    explicit world(server_config config) {
        spdlog::set_level(spdlog::level::warn);
        server_.emplace(io_, std::move(config), ecsnet::demo::game());
    }
    world(const world&) = delete;
    world& operator=(const world&) = delete;
    ~world() { stop(); }

    // Binds (start()) and runs the ticks on a thread of its own; returns when bound.
    void start() {
        std::promise<void> bound;
        auto bound_future = bound.get_future();
        thread_ = std::thread{[this, &bound] {
            try {
                server_->start();
            } catch (...) {
                bound.set_exception(std::current_exception());
                return;
            }
            bound.set_value();
            io_.run();
        }};
        bound_future.get();
    }
    void stop() {
        if (!thread_.joinable()) {
            return;
        }
        asio::post(io_, [this] { server_->stop(); });
        const auto deadline = clock_type::now() + 15s;
        while (!io_.stopped() && clock_type::now() < deadline) {
            std::this_thread::sleep_for(10ms);
        }
        io_.stop();
        thread_.join();
    }
    void drain() {
        asio::post(io_, [this] { server_->drain(); });
    }
    // Runs f on the server's thread (to add a system).
    void on_thread(std::function<void(ecsnet::server::server&)> f) {
        std::promise<void> done;
        asio::post(io_, [&] {
            f(*server_);
            done.set_value();
        });
        ASSERT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
    }

    [[nodiscard]] const ecsnet::server::server& service() const { return *server_; }
    [[nodiscard]] std::uint16_t port() const { return server_->port(); }

private:
    asio::io_context io_;
    std::optional<ecsnet::server::server> server_;
    std::thread thread_;
};

server_config local_config() {
    server_config config;
    config.bind = "127.0.0.1";
    config.port = 0;
    config.tick_rate = 30.0;
    config.io_threads = 1;
    return config;
}

// Quick enough for tests; the order of calls is what they check.
agones_options test_options(std::uint16_t port) {
    agones_options options;
    options.port = port;
    options.health_interval = 200ms;
    options.poll_interval = 20ms;
    options.request_timeout = 1000ms;
    options.retry_min = 50ms;
    options.retry_max = 400ms;
    return options;
}

bool last_label_is(const fake_sidecar& sidecar, const std::string& value) {
    const auto labels = sidecar.player_labels();
    return !labels.empty() && labels.back() == value;
}

TEST(AgonesGameServer, ParsesTheRestReferenceExamples) {
    // GET /gameserver's answer and a /watch/gameserver line, as in rest.md.
    const auto gs = ecsnet::server::parse_gameserver(
        R"({"object_meta":{"name":"local","namespace":"default","uid":"1234","annotations":)"
        R"({"annotation":"true"},"labels":{"islocal":"true"}},"status":{"state":"Ready",)"
        R"("address":"127.0.0.1","ports":[{"name":"default","port":7777}]}})");
    ASSERT_TRUE(gs.has_value());
    EXPECT_EQ(gs->name, "local");
    EXPECT_EQ(gs->state, "Ready");
    EXPECT_EQ(gs->address, "127.0.0.1");
    EXPECT_EQ(gs->labels.at("islocal"), "true");
    EXPECT_EQ(gs->annotations.at("annotation"), "true");
    const auto line = ecsnet::server::parse_gameserver(
        R"({"result":{"object_meta":{"name":"local","labels":{"agones.dev/sdk-players":"3"}},)"
        R"("status":{"state":"Allocated"}}})");
    ASSERT_TRUE(line.has_value());
    EXPECT_EQ(line->state, "Allocated");
    EXPECT_EQ(line->labels.at("agones.dev/sdk-players"), "3");
    EXPECT_FALSE(ecsnet::server::parse_gameserver(R"({"error":{"code":14,"message":"x"}})"));
    EXPECT_FALSE(ecsnet::server::parse_gameserver("<html>garbage{"));
    EXPECT_FALSE(ecsnet::server::parse_gameserver("[1,2]"));
}

// Flags: AGONES_SDK_HTTP_PORT turns the SDK on, --agones uses Agones' default port.
TEST(AgonesFlags, OnWithTheEnvironmentOrTheFlagAndBadPortsAreUsageErrors) {
    const auto parse = [](std::vector<const char*> args) {
        args.insert(args.begin(), "ecsnet-server");
        return ecsnet::server::parse_command_line(static_cast<int>(args.size()), args.data());
    };
    ::unsetenv("AGONES_SDK_HTTP_PORT");
    EXPECT_FALSE(parse({}).config.agones);
    const auto flag = parse({"--agones"});
    EXPECT_TRUE(flag.config.agones);
    EXPECT_EQ(flag.config.agones_port, 9358);
    EXPECT_EQ(flag.config.agones_health_interval, 2000ms);
    const auto port = parse({"--agones-port", "9400", "--agones-health-interval-ms", "1500"});
    EXPECT_TRUE(port.config.agones);
    EXPECT_EQ(port.config.agones_port, 9400);
    EXPECT_EQ(port.config.agones_health_interval, 1500ms);
    EXPECT_EQ(parse({"--agones-port", "0"}).exit_code, 2);
    EXPECT_EQ(parse({"--agones-port", "70000"}).exit_code, 2);
    EXPECT_EQ(parse({"--agones-health-interval-ms", "1000"}).exit_code, 2) << "needs --agones";

    ::setenv("AGONES_SDK_HTTP_PORT", "9501", 1);
    const auto env = parse({});
    EXPECT_TRUE(env.config.agones);
    EXPECT_EQ(env.config.agones_port, 9501);
    ::setenv("AGONES_SDK_HTTP_PORT", "nine", 1);
    EXPECT_EQ(parse({}).exit_code, 2);
    ::unsetenv("AGONES_SDK_HTTP_PORT");
}

// Ready only once the port is bound and ticks run, never before; health pings from then on;
// the players label once at ready. Prints the calls' timing (the issue's measurement).
TEST(AgonesSdk, ReadyOnlyAfterTheListenerIsBoundAndTicksRun) {
    fake_sidecar sidecar;
    world w{local_config()};
    agones_sdk sdk{w.service(), test_options(sidecar.port())};
    sdk.start();
    // The SDK is running (it reads the GameServer) while the server is not started.
    ASSERT_TRUE(eventually([&] { return sidecar.count("GET", "/watch/gameserver") >= 1; }, 10s));
    std::this_thread::sleep_for(500ms);  // 25 looks at server::health()
    EXPECT_EQ(sidecar.count("POST", "/ready"), 0U) << "ready before the port was bound";
    EXPECT_EQ(sidecar.count("POST", "/health"), 0U) << "health before ticks ran";

    const auto started = clock_type::now();
    w.start();
    ASSERT_TRUE(eventually([&] { return sidecar.count("POST", "/health") >= 10; }, 20s));
    const auto ready = sidecar.calls("POST", "/ready");
    ASSERT_EQ(ready.size(), 1U);
    EXPECT_GT(ready[0].at, started);
    EXPECT_EQ(ready[0].body, "{}");
    ASSERT_TRUE(eventually([&] { return !sidecar.player_labels().empty(); }, 10s));
    EXPECT_EQ(sidecar.player_labels(), std::vector<std::string>{"0"});
    EXPECT_GT(sidecar.calls("PUT", "/metadata/label")[0].at, ready[0].at);
    EXPECT_EQ(sidecar.count("GET", "/gameserver"), 1U);
    EXPECT_EQ(sidecar.count("POST", "/shutdown"), 0U);

    const auto health = sidecar.calls("POST", "/health");
    long long min = 1'000'000;
    long long max = 0;
    long long sum = 0;
    for (std::size_t i = 1; i < health.size(); ++i) {
        const long long gap = ms(health[i].at - health[i - 1].at);
        min = std::min(min, gap);
        max = std::max(max, gap);
        sum += gap;
    }
    const auto gaps = static_cast<long long>(health.size() - 1);
    std::cout << "[ agones ] ready " << ms(ready[0].at - started)
              << " ms after server::start(); first health " << ms(health[0].at - started)
              << " ms after; health interval (set 200 ms) min/mean/max " << min << "/"
              << sum / gaps << "/" << max << " ms over " << gaps << " gaps\n";

    const auto shutdown_called = clock_type::now();
    EXPECT_TRUE(sdk.shutdown(2s));
    const auto shutdown_returned = clock_type::now();
    ASSERT_EQ(sidecar.count("POST", "/shutdown"), 1U);
    const auto shutdown_at = sidecar.calls("POST", "/shutdown")[0].at;
    std::this_thread::sleep_for(300ms);
    for (const sidecar_call& c : sidecar.calls()) {
        EXPECT_LE(c.at, shutdown_at) << c.method << " " << c.path << " after /shutdown";
    }
    std::cout << "[ agones ] shutdown(2 s): /shutdown " << ms(shutdown_at - shutdown_called)
              << " ms after the call, which returned after " << ms(shutdown_returned - shutdown_called)
              << " ms\n";
}

// A system that blocks while a flag is set: health.ticking turns false after
// max(1 s, 10 tick periods), and the pings stop until ticks run again.
TEST(AgonesSdk, HealthPingsStopWhileTheTickStallsAndResumeAfter) {
    fake_sidecar sidecar;
    world w{local_config()};
    w.start();
    auto stall = std::make_shared<std::atomic<bool>>(false);
    struct release_on_exit {
        std::shared_ptr<std::atomic<bool>> flag;
        ~release_on_exit() { flag->store(false); }
    } release{stall};
    w.on_thread([stall](ecsnet::server::server& s) {
        s.scheduler().add("stall-while-flagged", ecsnet::ecs::component_access{},
                          [stall](ecsnet::ecs::SystemContext&) {
                              const auto limit = clock_type::now() + 20s;
                              while (stall->load() && clock_type::now() < limit) {
                                  std::this_thread::sleep_for(5ms);
                              }
                          });
    });
    agones_sdk sdk{w.service(), test_options(sidecar.port())};
    sdk.start();
    ASSERT_TRUE(eventually([&] { return sidecar.count("POST", "/health") >= 3; }, 10s));

    stall->store(true);
    ASSERT_TRUE(eventually([&] { return !w.service().health().ticking; }, 10s));
    const auto stalled = clock_type::now();
    const auto before = sidecar.count("POST", "/health");
    std::this_thread::sleep_for(1500ms);  // 7 intervals
    const auto during = sidecar.count("POST", "/health") - before;
    EXPECT_TRUE(w.service().health().ticking == false) << "the stall ended by itself";
    stall->store(false);
    const auto released = clock_type::now();
    EXPECT_LE(during, 1U) << "pings went on while the tick was stalled (one may be in flight)";

    ASSERT_TRUE(eventually(
        [&] {
            const auto h = sidecar.calls("POST", "/health");
            return std::count_if(h.begin(), h.end(), [&](const sidecar_call& c) { return c.at > released; }) >= 3;
        },
        10s))
        << "pings did not resume";
    std::cout << "[ agones ] stalled " << ms(released - stalled) << " ms: " << during
              << " health calls meanwhile\n";
}

TEST(AgonesSdk, PlayersLabelFollowsJoinsAndLeaves) {
    fake_sidecar sidecar;
    world w{local_config()};
    w.start();
    agones_sdk sdk{w.service(), test_options(sidecar.port())};
    sdk.start();
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "0"); }, 10s));
    auto alice = join(w.port(), "alice");
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "1"); }, 10s));
    auto bob = join(w.port(), "bob");
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "2"); }, 10s));
    alice.reset();
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "1"); }, 10s));
    bob.reset();
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "0"); }, 10s));
    EXPECT_EQ(sidecar.player_labels(), (std::vector<std::string>{"0", "1", "2", "1", "0"}))
        << "one call per change, none repeated";
    EXPECT_EQ(sidecar.count("POST", "/ready"), 1U);
}

// The sidecar may start after the game or go away: the game runs and takes players meanwhile,
// and the SDK catches up (ready, health, the current label) once it answers; a sidecar answering
// 500 with garbage is retried the same way.
TEST(AgonesSdk, GameRunsWithTheSidecarDownAndCatchesUpWhenItReturns) {
    fake_sidecar sidecar;
    sidecar.go_down();
    world w{local_config()};
    w.start();
    agones_sdk sdk{w.service(), test_options(sidecar.port())};
    sdk.start();
    auto alice = join(w.port(), "alice");
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().statistics().deltas >= 10; }, 10s))
        << "the game does not run with the sidecar down";
    EXPECT_TRUE(sidecar.calls().empty());

    sidecar.come_up();
    ASSERT_TRUE(eventually(
        [&] {
            return sidecar.count("POST", "/ready") == 1 && sidecar.count("POST", "/health") >= 2 &&
                   last_label_is(sidecar, "1") && sidecar.count("GET", "/gameserver") >= 1 &&
                   sidecar.count("GET", "/watch/gameserver") >= 1;
        },
        15s))
        << "ready " << sidecar.count("POST", "/ready") << ", health "
        << sidecar.count("POST", "/health") << ", labels " << sidecar.player_labels().size();
    ASSERT_TRUE(sdk.last_gameserver().has_value());
    EXPECT_EQ(sdk.last_gameserver()->state, "Scheduled");

    // 500s and garbage: the label change is retried until the sidecar accepts it.
    sidecar.answer_errors(true);
    const auto errors_from = sidecar.calls().size();
    alice.reset();
    ASSERT_TRUE(eventually(
        [&] {
            const auto labels = sidecar.player_labels();
            return std::count(labels.begin(), labels.end(), "0") >= 2;  // two refused tries
        },
        10s));
    auto carol = join(w.port(), "carol");
    ASSERT_TRUE(carol->poll_until([&] { return carol->mirror().statistics().deltas >= 5; }, 10s))
        << "the game does not run while the sidecar answers 500";
    carol.reset();
    sidecar.answer_errors(false);
    const auto label_calls = sidecar.calls("PUT", "/metadata/label").size();
    ASSERT_TRUE(eventually(
        [&] { return sidecar.calls("PUT", "/metadata/label").size() > label_calls; }, 10s));
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "0"); }, 10s));
    EXPECT_GT(sidecar.calls().size(), errors_from);
    EXPECT_EQ(sidecar.count("POST", "/ready"), 1U) << "ready once";
}

TEST(AgonesSdk, WatchSeesAllocatedWithLabelsAndAnnotationsAndReconnects) {
    fake_sidecar sidecar;
    world w{local_config()};
    w.start();
    agones_sdk sdk{w.service(), test_options(sidecar.port())};
    sdk.start();
    ASSERT_TRUE(eventually([&] { return sidecar.count("GET", "/watch/gameserver") == 1; }, 10s));
    ASSERT_TRUE(eventually([&] { return sdk.last_gameserver().has_value(); }, 10s));
    EXPECT_EQ(sdk.last_gameserver()->state, "Scheduled");  // from GET /gameserver

    sidecar.push_watch_line("not json at all\n");
    sidecar.set_gameserver("Allocated", {{"agones.dev/sdk-players", "0"}, {"world", "w7"}},
                           {{"ecsnet.dev/match", "m-42"}});
    ASSERT_TRUE(eventually(
        [&] { return sdk.last_gameserver() && sdk.last_gameserver()->state == "Allocated"; }, 10s));
    const auto allocated = *sdk.last_gameserver();
    EXPECT_EQ(allocated.labels.at("world"), "w7");
    EXPECT_EQ(allocated.annotations.at("ecsnet.dev/match"), "m-42");
    EXPECT_EQ(sidecar.count("GET", "/gameserver"), 1U) << "Allocated came through the watch";

    // The stream ends (a sidecar restart): the SDK watches again and sees later changes.
    sidecar.end_watches();
    ASSERT_TRUE(eventually([&] { return sidecar.count("GET", "/watch/gameserver") >= 2; }, 10s));
    sidecar.set_gameserver("Shutdown", {}, {});
    ASSERT_TRUE(eventually(
        [&] { return sdk.last_gameserver() && sdk.last_gameserver()->state == "Shutdown"; }, 10s));
}

TEST(AgonesSdk, ShutdownIsBoundedWhenTheSidecarIsDown) {
    fake_sidecar sidecar;
    world w{local_config()};
    w.start();
    agones_sdk sdk{w.service(), test_options(sidecar.port())};
    sdk.start();
    ASSERT_TRUE(eventually([&] { return sidecar.count("POST", "/ready") == 1; }, 10s));
    sidecar.go_down();
    EXPECT_FALSE(sdk.shutdown(500ms));  // returns: the world can end whatever the sidecar does
    EXPECT_FALSE(sdk.shutdown(500ms)) << "once";
    EXPECT_EQ(sidecar.count("POST", "/shutdown"), 0U);
}


// SIGTERM with --drain-seconds 1: health pings go on while the connected player is served, and
// /shutdown comes after the drain, once, then a clean exit.
TEST(AgonesProcess, ShutdownComesAfterTheDrainOnSigterm) {
    fake_sidecar sidecar;
    server_process server{{"--port", "0", "--bind", "127.0.0.1", "--drain-seconds", "1",
                           "--agones-port", std::to_string(sidecar.port()),
                           "--agones-health-interval-ms", "200"}};
    const auto port = server.port();
    ASSERT_TRUE(port.has_value()) << server.log();
    ASSERT_TRUE(eventually([&] { return sidecar.count("POST", "/ready") == 1; }, 10s))
        << server.log();
    auto alice = join(*port, "alice");
    ASSERT_TRUE(eventually([&] { return last_label_is(sidecar, "1"); }, 10s)) << server.log();

    const auto sigterm = clock_type::now();
    server.signal(SIGTERM);
    const auto deltas_before = alice->mirror().statistics().deltas;
    const auto deadline = sigterm + 10s;
    while (alice->is_open() && clock_type::now() < deadline) {
        alice->poll_for(10ms);
    }
    const auto deltas_during_drain = alice->mirror().statistics().deltas - deltas_before;
    ASSERT_FALSE(alice->is_open()) << "the drain did not end";
    EXPECT_EQ(*alice->closed_reason(), "shutting down");
    alice.reset();  // the server waits (up to its shutdown grace) for the client to close
    EXPECT_EQ(server.exit_code(10s), 0) << server.log();

    const auto shutdown = sidecar.calls("POST", "/shutdown");
    ASSERT_EQ(shutdown.size(), 1U) << server.log();
    EXPECT_EQ(shutdown[0].body, "{}");
    EXPECT_GE(shutdown[0].at, sigterm + 1s) << "before the drain's end";
    EXPECT_GT(deltas_during_drain, 0U) << "the player was not served during the drain";
    const auto health = sidecar.calls("POST", "/health");
    const auto during_drain = std::count_if(health.begin(), health.end(), [&](const sidecar_call& c) {
        return c.at > sigterm && c.at < shutdown[0].at;
    });
    EXPECT_GE(during_drain, 1) << "no health pings while draining: Agones would mark it Unhealthy";
    for (const sidecar_call& c : sidecar.calls()) {
        EXPECT_LE(c.at, shutdown[0].at) << c.method << " " << c.path << " after /shutdown";
    }
    const std::string log = server.log();
    EXPECT_THAT(log, testing::HasSubstr("agones: ready"));
    const auto drain_over = log.find("drain over, shutting down");
    const auto shutdown_line = log.find("agones: shutdown (POST /shutdown accepted)");
    ASSERT_NE(drain_over, std::string::npos) << log;
    ASSERT_NE(shutdown_line, std::string::npos) << log;
    EXPECT_LT(drain_over, shutdown_line) << log;
    std::cout << "[ agones ] SIGTERM -> /shutdown " << ms(shutdown[0].at - sigterm)
              << " ms (drain 1 s); " << during_drain << " health pings and "
              << deltas_during_drain << " deltas to the player during the drain\n";
}

}  // namespace agones_test
