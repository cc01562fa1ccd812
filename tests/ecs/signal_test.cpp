#include "ecsnet/ecs/signal.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace signal_test {

using ecsnet::ecs::signal;

TEST(Signal, StartsEmpty) {
    signal<int> s;
    EXPECT_TRUE(s.empty());
    EXPECT_EQ(s.size(), 0U);
    s.publish(1);  // publishing to nobody is fine
    EXPECT_FALSE(s.disconnect(1));
}

TEST(Signal, ListenersRunInConnectionOrderWithTheArguments) {
    signal<int, const std::string&> s;
    std::vector<std::string> calls;
    s.connect(
        [&](int n, const std::string& text) { calls.push_back("a" + std::to_string(n) + text); });
    s.connect(
        [&](int n, const std::string& text) { calls.push_back("b" + std::to_string(n) + text); });
    s.connect(
        [&](int n, const std::string& text) { calls.push_back("c" + std::to_string(n) + text); });
    EXPECT_EQ(s.size(), 3U);
    EXPECT_FALSE(s.empty());

    s.publish(7, "x");
    EXPECT_THAT(calls, ::testing::ElementsAre("a7x", "b7x", "c7x"));
}

TEST(Signal, DisconnectRemovesOneListener) {
    signal<> s;
    std::vector<char> calls;
    const auto a = s.connect([&] { calls.push_back('a'); });
    const auto b = s.connect([&] { calls.push_back('b'); });
    s.connect([&] { calls.push_back('c'); });
    EXPECT_NE(a, b);

    EXPECT_TRUE(s.disconnect(b));
    EXPECT_EQ(s.size(), 2U);
    s.publish();
    EXPECT_THAT(calls, ::testing::ElementsAre('a', 'c'));

    EXPECT_FALSE(s.disconnect(b)) << "already disconnected";
    EXPECT_FALSE(s.disconnect(12345)) << "never connected";
    EXPECT_TRUE(s.disconnect(a));
    EXPECT_EQ(s.size(), 1U);
}

TEST(Signal, ConnectionIdsAreNotReused) {
    signal<> s;
    int calls = 0;
    const auto a = s.connect([&] { ++calls; });
    s.disconnect(a);
    const auto b = s.connect([&] { ++calls; });
    EXPECT_NE(a, b);
    EXPECT_FALSE(s.disconnect(a)) << "the old id must not remove the new listener";
    s.publish();
    EXPECT_EQ(calls, 1);
}

TEST(Signal, ListenerDisconnectingItselfDuringPublish) {
    signal<> s;
    std::vector<char> calls;
    s.connect([&] { calls.push_back('a'); });
    signal<>::connection self = 0;
    self = s.connect([&] {
        calls.push_back('b');
        EXPECT_TRUE(s.disconnect(self));
    });
    s.connect([&] { calls.push_back('c'); });

    s.publish();
    EXPECT_THAT(calls, ::testing::ElementsAre('a', 'b', 'c')) << "the others still run";
    EXPECT_EQ(s.size(), 2U);

    calls.clear();
    s.publish();
    EXPECT_THAT(calls, ::testing::ElementsAre('a', 'c'));
}

TEST(Signal, ListenerDisconnectingALaterOneDuringPublish) {
    signal<> s;
    std::vector<char> calls;
    signal<>::connection later = 0;
    s.connect([&] {
        calls.push_back('a');
        s.disconnect(later);
    });
    later = s.connect([&] { calls.push_back('b'); });

    s.publish();
    EXPECT_THAT(calls, ::testing::ElementsAre('a')) << "removal takes effect at once";
    EXPECT_EQ(s.size(), 1U);
}

TEST(Signal, ListenerConnectingAnotherDuringPublish) {
    signal<int> s;
    std::vector<std::string> calls;
    bool connected = false;
    s.connect([&](int n) {
        calls.push_back("a" + std::to_string(n));
        if (!connected) {
            connected = true;
            s.connect([&](int m) { calls.push_back("new" + std::to_string(m)); });
            EXPECT_EQ(s.size(), 3U) << "counted at once";
        }
    });
    s.connect([&](int n) { calls.push_back("b" + std::to_string(n)); });

    s.publish(1);
    EXPECT_THAT(calls, ::testing::ElementsAre("a1", "b1")) << "the new listener waits";
    EXPECT_EQ(s.size(), 3U);

    calls.clear();
    s.publish(2);
    EXPECT_THAT(calls, ::testing::ElementsAre("a2", "b2", "new2")) << "and runs last from now on";
}

TEST(Signal, ListenerConnectedAndDisconnectedDuringTheSamePublish) {
    signal<> s;
    int added_calls = 0;
    s.connect([&] {
        const auto id = s.connect([&] { ++added_calls; });
        EXPECT_TRUE(s.disconnect(id));
    });
    s.publish();
    s.publish();
    EXPECT_EQ(added_calls, 0);
    EXPECT_EQ(s.size(), 1U);
}

TEST(Signal, NestedPublish) {
    signal<int> s;
    std::vector<std::string> calls;
    s.connect([&](int depth) {
        calls.push_back("a" + std::to_string(depth));
        if (depth == 0) {
            s.publish(1);
        }
    });
    s.connect([&](int depth) { calls.push_back("b" + std::to_string(depth)); });
    s.publish(0);
    EXPECT_THAT(calls, ::testing::ElementsAre("a0", "a1", "b1", "b0"));
}

TEST(Signal, ThrowingListenerDoesNotBreakTheSignal) {
    signal<> s;
    std::vector<char> calls;
    bool fail = true;
    s.connect([&] {
        calls.push_back('a');
        if (fail) {
            throw std::runtime_error("listener failed");
        }
    });
    s.connect([&] { calls.push_back('b'); });

    EXPECT_THROW(s.publish(), std::runtime_error);
    EXPECT_THAT(calls, ::testing::ElementsAre('a'));

    // Afterwards the signal is back to normal: new listeners join and run.
    fail = false;
    calls.clear();
    s.connect([&] { calls.push_back('c'); });
    s.publish();
    EXPECT_THAT(calls, ::testing::ElementsAre('a', 'b', 'c'));
    EXPECT_EQ(s.size(), 3U);
}

}  // namespace signal_test
