// The admin HTTP endpoint: its answers from server::health(), and a real server and endpoint in
// this process (the server on its own thread, the endpoint on its own).
#include "ecsnet/server/admin.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ecsnet/server/healthcheck.hpp"
#include "http_get.hpp"

namespace {

namespace asio = boost::asio;
using ecsnet::server::admin_endpoint;
using ecsnet::server::admin_options;
using ecsnet::server::answer_admin_request;
using ecsnet::server::server_config;
using ecsnet::server::server_health;
using ecsnet::test::http_get;
using testing::HasSubstr;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

server_health healthy() {
    server_health h;
    h.ticking = true;
    h.accepting = true;
    h.tick = 42;
    h.clients = 3;
    h.max_clients = 3;
    h.stats.skipped_ticks = 7;
    return h;
}

TEST(AdminAnswers, HealthzFollowsTheTickAndReadyzAlsoTheListenerAndTheDrain) {
    server_health h = healthy();
    EXPECT_EQ(answer_admin_request(h, "/healthz").status, 200U);
    EXPECT_THAT(answer_admin_request(h, "/healthz").body, HasSubstr("healthy: tick 42"));
    EXPECT_EQ(answer_admin_request(h, "/readyz").status, 200U) << "a full server is still ready";

    h.draining = true;
    EXPECT_EQ(answer_admin_request(h, "/healthz").status, 200U) << "draining is healthy";
    EXPECT_EQ(answer_admin_request(h, "/readyz").status, 503U);
    EXPECT_THAT(answer_admin_request(h, "/readyz").body, HasSubstr("draining"));

    h = healthy();
    h.accepting = false;
    EXPECT_EQ(answer_admin_request(h, "/readyz").status, 503U);

    h = healthy();
    h.ticking = false;
    h.problem = "no tick completed for 1500 ms (limit 1000 ms), last tick 42";
    EXPECT_EQ(answer_admin_request(h, "/healthz").status, 503U);
    EXPECT_THAT(answer_admin_request(h, "/healthz").body, HasSubstr("no tick completed"));
    EXPECT_EQ(answer_admin_request(h, "/readyz").status, 503U);

    EXPECT_EQ(answer_admin_request(h, "/").status, 404U);
    EXPECT_EQ(answer_admin_request(h, "/healthz/x").status, 404U);
}

TEST(AdminAnswers, StatusIsJsonWithTheStats) {
    const auto a = answer_admin_request(healthy(), "/status");
    EXPECT_EQ(a.status, 200U);
    EXPECT_EQ(a.content_type, "application/json");
    const auto j = nlohmann::json::parse(a.body);
    EXPECT_EQ(j.at("tick"), 42);
    EXPECT_EQ(j.at("clients"), 3);
    EXPECT_EQ(j.at("ready"), true);
    EXPECT_EQ(j.at("stats").at("skipped_ticks"), 7);
}

// ---- a real server and admin endpoint --------------------------------------------------------

class running_server {
public:
    explicit running_server(server_config config) : server_{io_, std::move(config)} {
        spdlog::set_level(spdlog::level::warn);
        server_.start();
        admin_.start();
        thread_ = std::thread{[this] { io_.run(); }};
    }
    running_server(const running_server&) = delete;
    running_server& operator=(const running_server&) = delete;
    ~running_server() {
        asio::post(io_, [this] { server_.stop(); });
        thread_.join();
        admin_.stop();
    }

    // Runs f(server) on the server's thread and waits for it (bounded).
    template <typename F>
    void call(F f) {
        auto task = std::make_shared<std::packaged_task<void()>>([this, f] { f(server_); });
        auto done = task->get_future();
        asio::post(io_, [task] { (*task)(); });
        if (done.wait_for(5s) != std::future_status::ready) {
            throw std::runtime_error("the server thread did not answer within 5 s");
        }
        done.get();
    }

    [[nodiscard]] std::uint16_t admin_port() const noexcept { return admin_.port(); }
    [[nodiscard]] ecsnet::server::server& service() noexcept { return server_; }

private:
    asio::io_context io_;
    ecsnet::server::server server_;
    admin_endpoint admin_{server_, admin_options{}};
    std::thread thread_;
};

server_config local_config() {
    server_config c;
    c.bind = "127.0.0.1";
    c.port = 0;
    c.tick_rate = 50.0;
    c.shutdown_grace = 1000ms;
    return c;
}

// Polls GET path until pred(reply) holds, at most `timeout`.
template <typename Pred>
ecsnet::test::http_reply get_until(std::uint16_t port, const std::string& path, Pred pred,
                                   std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    auto reply = http_get(port, path);
    while (!pred(reply) && clock_type::now() < deadline) {
        std::this_thread::sleep_for(50ms);
        reply = http_get(port, path);
    }
    return reply;
}

TEST(AdminEndpoint, HealthzIs503WithAReasonWhileATickIsStuck) {
    running_server server{local_config()};
    const auto ok = get_until(
        server.admin_port(), "/healthz", [](const auto& r) { return r.status == 200; }, 5s);
    ASSERT_EQ(ok.status, 200U) << ok.error << ok.body;

    // A system that blocks the server's thread until the test has seen the 503: the endpoint
    // answers from its own thread, from the time of the last completed tick.
    auto release = std::make_shared<std::promise<void>>();
    auto released = release->get_future().share();
    auto armed = std::make_shared<std::atomic<bool>>(true);
    server.call([released, armed](ecsnet::server::server& s) {
        s.scheduler().add("stuck-once", ecsnet::ecs::component_access{},
                          [released, armed](ecsnet::ecs::SystemContext&) {
                              if (armed->exchange(false)) {
                                  (void)released.wait_for(20s);
                              }
                          });
    });
    const auto stuck = get_until(
        server.admin_port(), "/healthz", [](const auto& r) { return r.status == 503; }, 10s);
    std::string why;
    const int check = ecsnet::server::run_healthcheck("127.0.0.1", server.admin_port(), 2s, why);
    const auto ready = http_get(server.admin_port(), "/readyz");
    release->set_value();

    EXPECT_EQ(stuck.status, 503U) << stuck.error << stuck.body;
    EXPECT_THAT(stuck.body, HasSubstr("unhealthy: no tick completed for"));
    EXPECT_THAT(stuck.body, HasSubstr("(limit 1000 ms)"));
    EXPECT_EQ(check, 1);
    EXPECT_THAT(why, HasSubstr("HTTP 503"));
    EXPECT_EQ(ready.status, 503U) << "not ready while not ticking";

    const auto again = get_until(
        server.admin_port(), "/healthz", [](const auto& r) { return r.status == 200; }, 10s);
    EXPECT_EQ(again.status, 200U) << again.error << again.body;
}

TEST(AdminEndpoint, ReadyzTurns503AtOnceOnDrainWhileHealthzStays200) {
    running_server server{local_config()};
    ASSERT_EQ(get_until(
                  server.admin_port(), "/readyz", [](const auto& r) { return r.status == 200; }, 5s)
                  .status,
              200U);
    server.call([](ecsnet::server::server& s) { s.drain(); });
    const auto ready = http_get(server.admin_port(), "/readyz");
    EXPECT_EQ(ready.status, 503U) << ready.error;
    EXPECT_THAT(ready.body, HasSubstr("draining"));
    EXPECT_EQ(http_get(server.admin_port(), "/healthz").status, 200U);
    const auto status = nlohmann::json::parse(http_get(server.admin_port(), "/status").body);
    EXPECT_EQ(status.at("draining"), true);
    EXPECT_EQ(status.at("accepting"), false);
}

TEST(AdminEndpoint, IdleConnectionsAreBoundedAndTimedOut) {
    server_config config = local_config();
    asio::io_context io;
    ecsnet::server::server service{io, config};
    service.start();
    admin_options options;
    options.max_connections = 2;
    options.timeout = 1000ms;
    admin_endpoint admin{service, options};
    admin.start();

    // Two connections that send nothing take every slot: a third is closed without an answer.
    std::vector<asio::ip::tcp::socket> idle;
    for (int i = 0; i < 2; ++i) {
        idle.emplace_back(io).connect({asio::ip::make_address("127.0.0.1"), admin.port()});
    }
    std::this_thread::sleep_for(100ms);  // let the endpoint accept them
    const auto refused = http_get(admin.port(), "/status", 2s);
    EXPECT_EQ(refused.status, 0U) << refused.body;
    // After the read timeout the idle ones are closed, and the endpoint answers again.
    const auto later = get_until(
        admin.port(), "/status", [](const auto& r) { return r.status == 200; }, 5s);
    EXPECT_EQ(later.status, 200U) << later.error;

    // A request larger than max_request_bytes is cut off, not buffered.
    const auto huge = http_get(admin.port(), "/healthz?" + std::string(16 * 1024, 'x'), 2s);
    EXPECT_EQ(huge.status, 0U);
    admin.stop();
}

}  // namespace
