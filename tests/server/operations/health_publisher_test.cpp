#include "ecsnet/server/operations/health_publisher.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace health_publisher_test {

using ecsnet::server::client_report;
using ecsnet::server::clients_report;
using ecsnet::server::health_publisher;
using ecsnet::server::percentile;
using testing::HasSubstr;

health_publisher::settings settings(double tick_rate = 30.0, std::size_t max_clients = 4) {
    return {tick_rate, max_clients, false, true};
}

TEST(HealthPublisher, NotStartedIsNotTicking) {
    const health_publisher p{settings()};
    const auto h = p.health();
    EXPECT_FALSE(h.ticking);
    EXPECT_EQ(h.problem, "not started");
    EXPECT_FALSE(h.ready());
    EXPECT_EQ(h.max_clients, 4U);
    EXPECT_TRUE(h.inspector_token);
    EXPECT_EQ(h.tick_limit, std::chrono::milliseconds{1000}) << "at least a second";
}

TEST(HealthPublisher, ATickThatEndedInTimeIsTickingAndReadyWhileASeatIsFree) {
    health_publisher p{settings()};
    p.tick_loop_started(7778);
    health_publisher::world_state s;
    s.accepting = true;
    s.tick = 12;
    s.clients = 3;
    s.entities = 200;
    p.publish(s, true, 4.0);
    auto h = p.health();
    EXPECT_TRUE(h.ticking) << h.problem;
    EXPECT_TRUE(h.ready());
    EXPECT_EQ(h.tick, 12U);
    EXPECT_EQ(h.entities, 200U);
    EXPECT_EQ(h.ws_port, 7778);
    EXPECT_EQ(h.tick_ms.window_ticks, 1U);
    EXPECT_DOUBLE_EQ(h.tick_ms.max, 4.0);

    s.clients = 4;  // every seat taken: healthy, not ready
    p.publish(s);
    h = p.health();
    EXPECT_TRUE(h.ticking);
    EXPECT_TRUE(h.full());
    EXPECT_FALSE(h.ready());
    EXPECT_EQ(h.tick_ms.window_ticks, 1U) << "a publish without a tick adds no tick time";

    s.clients = 1;
    s.draining = true;
    p.publish(s);
    EXPECT_FALSE(p.health().ready());
}

TEST(HealthPublisher, TickTimesAreTheLastWindowOfTicks) {
    health_publisher p{settings()};
    p.tick_loop_started(0);
    const std::size_t ticks = health_publisher::tick_window + 100;
    for (std::size_t i = 1; i <= ticks; ++i) {
        p.publish({}, true, static_cast<double>(i));
    }
    const auto h = p.health();
    EXPECT_EQ(h.tick_ms.window_ticks, health_publisher::tick_window);
    EXPECT_DOUBLE_EQ(h.tick_ms.max, static_cast<double>(ticks));
    EXPECT_DOUBLE_EQ(h.tick_ms.p50, 250.0) << "ticks 101 to 400: the oldest 100 left the window";
    EXPECT_DOUBLE_EQ(h.tick_ms.p99, 397.0);
}

TEST(HealthPublisher, ALoopThatEndedSaysWhy) {
    health_publisher p{settings()};
    p.tick_loop_started(0);
    p.publish({}, true, 1.0);
    p.tick_loop_ended("failed: out of memory");
    const auto h = p.health();
    EXPECT_FALSE(h.ticking);
    EXPECT_EQ(h.problem, "tick loop failed: out of memory");
}

TEST(HealthPublisher, NoTickForLongerThanTheLimitIsNotTicking) {
    health_publisher p{settings(1000.0)};  // limit: max(1 s, 10 periods) = 1 s
    p.tick_loop_started(0);
    p.publish({}, true, 1.0);
    std::this_thread::sleep_for(std::chrono::milliseconds{1100});
    const auto h = p.health();
    EXPECT_FALSE(h.ticking);
    EXPECT_THAT(h.problem, HasSubstr("no tick completed for"));
    EXPECT_GE(h.last_tick_age, std::chrono::milliseconds{1100});
}

TEST(HealthPublisher, ClientListIsTheLastReportWithItsRates) {
    health_publisher p{settings()};
    EXPECT_TRUE(p.client_list().clients.empty());
    clients_report r;
    r.tick = 9;
    client_report c;
    c.session = 3;
    c.owner = 5;
    r.clients.push_back(c);
    p.publish_clients(r, 1500.0, 20.0);
    const auto list = p.client_list();
    EXPECT_EQ(list.tick, 9U);
    ASSERT_EQ(list.clients.size(), 1U);
    EXPECT_EQ(list.clients[0].owner, 5U);
    const auto h = p.health();
    EXPECT_DOUBLE_EQ(h.bytes_out_per_s, 1500.0);
    EXPECT_DOUBLE_EQ(h.bytes_in_per_s, 20.0);
}

TEST(Percentile, NearestRank) {
    std::vector<double> none;
    EXPECT_EQ(percentile(none, 0.5), 0.0);
    std::vector<double> v{5, 1, 4, 2, 3};
    EXPECT_EQ(percentile(v, 0.5), 3.0);
    EXPECT_EQ(percentile(v, 1.0), 5.0);
    EXPECT_EQ(percentile(v, 0.01), 1.0);
}

}  // namespace health_publisher_test
