#include "ecsnet/server/simulation/input_buffer.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace input_buffer_test {

namespace protocol = ecsnet::protocol;
using ecsnet::ecs::Entity;
using ecsnet::server::input_buffer;

constexpr std::uint32_t alice = 1;
constexpr std::uint32_t bob = 2;
const Entity ship{4, 1};
const Entity other_ship{5, 1};

// One tick's input: a value named "stick" whose one byte says which input it is.
protocol::component_set value(std::uint8_t which) {
    protocol::component_value v;
    v.name = "stick";
    v.bytes = {std::byte{which}};
    return protocol::component_set{}.set(std::move(v));
}

protocol::input input_of(Entity e, std::uint64_t first_tick, std::vector<std::uint8_t> which) {
    protocol::input in{e, first_tick, {}};
    for (const std::uint8_t w : which) {
        in.ticks.push_back(value(w));
    }
    return in;
}

struct applied {
    std::uint32_t owner;
    Entity entity;
    std::uint8_t which;
    friend bool operator==(const applied&, const applied&) = default;
};

// Runs `tick` and returns what it applied.
std::vector<applied> run(input_buffer& buffer, std::uint64_t tick, bool alive = true) {
    std::vector<applied> out;
    buffer.run(tick, [&](std::uint32_t owner, Entity e, const protocol::component_set& values) {
        out.push_back(applied{owner, e, static_cast<std::uint8_t>(values.values()[0].bytes[0])});
        return alive;
    });
    return out;
}

TEST(InputBuffer, EachTickGetsTheInputStampedForIt) {
    input_buffer buffer{32};
    const auto got = buffer.offer(alice, input_of(ship, 11, {1, 2, 3}), 10);
    EXPECT_EQ(got.accepted, 3U);
    EXPECT_EQ(got.late, 0U);
    EXPECT_EQ(got.too_early, 0U);
    EXPECT_EQ(buffer.held(), 3U);
    EXPECT_EQ(run(buffer, 11), (std::vector<applied>{{alice, ship, 1}}));
    EXPECT_EQ(run(buffer, 12), (std::vector<applied>{{alice, ship, 2}}));
    EXPECT_EQ(run(buffer, 13), (std::vector<applied>{{alice, ship, 3}}));
    EXPECT_EQ(buffer.held(), 0U);
    EXPECT_EQ(buffer.counters().applied, 3U);
    ASSERT_NE(buffer.ack(alice), nullptr);
    EXPECT_EQ(buffer.ack(alice)->applied_tick, 13U);
    EXPECT_EQ(buffer.ack(alice)->tick, 13U);
}

TEST(InputBuffer, AMissingTickRepeatsTheLastInputAndIsCounted) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 11, {1}), 10);
    EXPECT_EQ(run(buffer, 11).size(), 1U);
    EXPECT_TRUE(run(buffer, 12).empty());  // nothing applied: the world keeps input 1
    EXPECT_TRUE(run(buffer, 13).empty());
    EXPECT_EQ(buffer.counters().repeated, 2U);
    EXPECT_EQ(buffer.ack(alice)->repeated, 2U);
    EXPECT_EQ(buffer.ack(alice)->applied_tick, 11U);
}

TEST(InputBuffer, TheViewIsTheRenderTickOfTheInputAppliedAndMovesOnWhenItRepeats) {
    input_buffer buffer{32};
    EXPECT_FALSE(buffer.view(alice).has_value());
    protocol::input in = input_of(ship, 11, {1, 2, 3});
    in.render_tick = 8;  // what was shown when tick 13's input was set
    in.render_fraction = 0.5F;
    (void)buffer.offer(alice, in, 10);
    (void)run(buffer, 11);
    ASSERT_TRUE(buffer.view(alice).has_value());
    EXPECT_DOUBLE_EQ(*buffer.view(alice), 6.5) << "two ticks earlier than the last tick's";
    (void)run(buffer, 12);
    EXPECT_DOUBLE_EQ(*buffer.view(alice), 7.5);
    (void)run(buffer, 13);
    EXPECT_DOUBLE_EQ(*buffer.view(alice), 8.5);
    (void)run(buffer, 14);  // a repeated input: the player's screen went on
    EXPECT_DOUBLE_EQ(*buffer.view(alice), 9.5);

    (void)buffer.offer(bob, input_of(other_ship, 15, {1}), 14);  // protocol 4: no render tick
    (void)run(buffer, 15);
    EXPECT_FALSE(buffer.view(bob).has_value());
}

TEST(InputBuffer, NothingRepeatsBeforeTheFirstInput) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 15, {1}), 10);
    for (std::uint64_t tick = 11; tick < 15; ++tick) {
        EXPECT_TRUE(run(buffer, tick).empty());
    }
    EXPECT_EQ(buffer.counters().repeated, 0U);
    EXPECT_EQ(run(buffer, 15).size(), 1U);
}

TEST(InputBuffer, LateTicksAreDroppedAndCounted) {
    input_buffer buffer{32};
    // Ticks 9 and 10 have run: only 11 is kept.
    const auto got = buffer.offer(alice, input_of(ship, 9, {1, 2, 3}), 10);
    EXPECT_EQ(got.late, 2U);
    EXPECT_EQ(got.accepted, 1U);
    EXPECT_EQ(buffer.counters().late, 2U);
    EXPECT_EQ(run(buffer, 11), (std::vector<applied>{{alice, ship, 3}}));
    EXPECT_EQ(buffer.ack(alice)->late, 2U);
}

TEST(InputBuffer, TicksBeyondTheBufferAreRefused) {
    input_buffer buffer{4};
    const auto got = buffer.offer(alice, input_of(ship, 13, {1, 2, 3, 4}), 10);
    EXPECT_EQ(got.accepted, 2U);  // 13 and 14; 15 and 16 are more than 4 ahead of 10
    EXPECT_EQ(got.too_early, 2U);
    EXPECT_EQ(buffer.counters().too_early, 2U);
    EXPECT_EQ(buffer.held(), 4U);  // 11 and 12 are holes
}

TEST(InputBuffer, ATickSentAgainReplacesTheValueHeld) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 11, {1, 2}), 10);
    (void)buffer.offer(alice, input_of(ship, 12, {7}), 10);
    EXPECT_EQ(run(buffer, 11)[0].which, 1U);
    EXPECT_EQ(run(buffer, 12)[0].which, 7U);
}

TEST(InputBuffer, ALaterTickFirstLeavesAHoleThatRepeats) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 11, {1}), 10);
    EXPECT_EQ(run(buffer, 11).size(), 1U);
    (void)buffer.offer(alice, input_of(ship, 14, {4}), 11);
    EXPECT_TRUE(run(buffer, 12).empty());
    EXPECT_TRUE(run(buffer, 13).empty());
    EXPECT_EQ(run(buffer, 14)[0].which, 4U);
    EXPECT_EQ(buffer.counters().repeated, 2U);
}

TEST(InputBuffer, OwnersAndEntitiesHaveTheirOwnStreams) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 11, {1}), 10);
    (void)buffer.offer(alice, input_of(other_ship, 11, {2}), 10);
    (void)buffer.offer(bob, input_of(Entity{9, 3}, 11, {3}), 10);
    auto got = run(buffer, 11);
    std::sort(got.begin(), got.end(), [](const applied& a, const applied& b) { return a.which < b.which; });
    EXPECT_EQ(got, (std::vector<applied>{{alice, ship, 1}, {alice, other_ship, 2}, {bob, Entity{9, 3}, 3}}));
    EXPECT_EQ(buffer.players(), 2U);
    buffer.forget(bob);
    EXPECT_EQ(buffer.players(), 1U);
    EXPECT_EQ(buffer.ack(bob), nullptr);
}

TEST(InputBuffer, AStreamWhoseEntityIsGoneGoes) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 11, {1, 2}), 10);
    EXPECT_EQ(run(buffer, 11, /*alive=*/false).size(), 1U);
    EXPECT_TRUE(run(buffer, 12).empty());  // tick 12's input went with the stream
    EXPECT_EQ(buffer.held(), 0U);
    EXPECT_EQ(buffer.counters().repeated, 0U);
}

TEST(InputBuffer, LeadSaysHowFarAheadTheNewestInputWas) {
    input_buffer buffer{32};
    (void)buffer.offer(alice, input_of(ship, 14, {1}), 10);
    (void)run(buffer, 11);
    EXPECT_EQ(buffer.ack(alice)->lead, 3);
    (void)run(buffer, 12);
    (void)run(buffer, 13);
    (void)run(buffer, 14);
    (void)run(buffer, 15);
    EXPECT_EQ(buffer.ack(alice)->lead, -1);  // nothing newer came: the client falls behind
    (void)buffer.offer(alice, input_of(ship, 14, {2}), 15);  // late
    (void)run(buffer, 16);
    EXPECT_EQ(buffer.ack(alice)->lead, -2);
}

TEST(InputBuffer, MemoryIsBoundedByTheBufferWhateverIsSent) {
    input_buffer buffer{8};
    for (std::uint64_t first = 1; first < 10'000; first += 16) {
        (void)buffer.offer(alice, input_of(ship, first, std::vector<std::uint8_t>(16, 1)), 0);
    }
    EXPECT_LE(buffer.held(), 8U);
}

}  // namespace input_buffer_test
