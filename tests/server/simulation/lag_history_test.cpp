// Lag compensation's memory (server/include/ecsnet/server/simulation/lag_history.hpp): shapes
// found where a client drew them, between two ticks, within a bounded window.
#include "ecsnet/server/simulation/lag_history.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace lag_history_test {

using ecsnet::ecs::Entity;
using ecsnet::server::hit_shape;
using ecsnet::server::lag_history;
using namespace std::chrono_literals;

const Entity runner{1, 1};
const Entity target{2, 1};
const Entity shooter{3, 1};

// `runner` moves 10 units along x per tick (x = 10 * tick), `target` stands at (100, 50).
lag_history runs_until(std::uint64_t last, std::chrono::milliseconds window = 250ms) {
    lag_history h{30.0, window};
    for (std::uint64_t t = 1; t <= last; ++t) {
        h.record(t, {hit_shape{target, 100.0F, 50.0F, 10.0F},
                     hit_shape{runner, 10.0F * static_cast<float>(t), 0.0F, 14.0F}});
    }
    return h;
}

const hit_shape* find(const std::vector<hit_shape>& shapes, Entity e) {
    for (const hit_shape& s : shapes) {
        if (s.entity == e) {
            return &s;
        }
    }
    return nullptr;
}

TEST(LagHistory, RefusesNonsense) {
    EXPECT_THROW((lag_history{0.0}), std::invalid_argument);
    EXPECT_THROW((lag_history{30.0, 0ms}), std::invalid_argument);
    EXPECT_THROW((lag_history{30.0, 1001ms}), std::invalid_argument) << "capped at a second";
    lag_history h{30.0};
    h.record(5, {});
    EXPECT_THROW(h.record(5, {}), std::logic_error);
    EXPECT_THROW(h.record(4, {}), std::logic_error);
}

TEST(LagHistory, KeepsTheWindowAndAnswersBetweenTwoTicks) {
    const lag_history h = runs_until(40);
    EXPECT_EQ(h.capacity(), 9U) << "250 ms at 30 Hz: 8 ticks, and the one after the oldest";
    EXPECT_EQ(lag_history{30.0}.capacity(), 22U) << "700 ms by default";
    EXPECT_EQ(h.newest(), 40U);
    EXPECT_EQ(h.oldest(), 32U);
    const auto shapes = h.at(35.25);
    ASSERT_NE(find(shapes, runner), nullptr);
    EXPECT_FLOAT_EQ(find(shapes, runner)->x, 352.5F) << "a quarter of the way from 35 to 36";
    EXPECT_FLOAT_EQ(find(shapes, target)->x, 100.0F);
    EXPECT_FLOAT_EQ(find(shapes, runner)->x, find(h.at(35.25), runner)->x);
}

TEST(LagHistory, AnOlderRenderTickIsAnsweredAtTheWindowsEdge) {
    const lag_history h = runs_until(40);
    EXPECT_DOUBLE_EQ(h.clamp(3.0), 32.0) << "the shooter's advantage stops at the window";
    EXPECT_DOUBLE_EQ(h.clamp(99.0), 40.0) << "nobody sees the future";
    EXPECT_DOUBLE_EQ(h.clamp(std::nan("")), 40.0);
    EXPECT_FLOAT_EQ(find(h.at(3.0), runner)->x, 320.0F);
}

TEST(LagHistory, AShotHitsWhereTheShooterSawItAndMissesThePresent) {
    const lag_history h = runs_until(40);
    // The shooter at (355, -100) fires straight up (+y) at render tick 35.5: the runner was at
    // x = 355 then, and is at 400 now.
    const auto hit = h.raycast(35.5, 355.0F, -100.0F, 0.0F, 1.0F, 500.0F, shooter);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->entity, runner);
    EXPECT_NEAR(hit->distance, 100.0F - 14.0F, 1e-3);
    EXPECT_FALSE(h.raycast(40.0, 355.0F, -100.0F, 0.0F, 1.0F, 500.0F, shooter).has_value())
        << "at the present the runner is 45 units further";
    EXPECT_FALSE(h.raycast(35.5, 355.0F, -100.0F, 0.0F, 1.0F, 80.0F, shooter).has_value())
        << "too short to reach it";
}

TEST(LagHistory, TheNearestShapeIsHitAndTheShooterIsIgnored) {
    lag_history h{30.0};
    h.record(1, {hit_shape{shooter, 0.0F, 0.0F, 14.0F}, hit_shape{target, 0.0F, 200.0F, 10.0F},
                 hit_shape{runner, 0.0F, 100.0F, 10.0F}});
    const auto hit = h.raycast(1.0, 0.0F, 0.0F, 0.0F, 1.0F, 1000.0F, shooter);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->entity, runner);
    EXPECT_FLOAT_EQ(hit->distance, 90.0F);
    const auto self = h.raycast(1.0, 0.0F, 0.0F, 0.0F, 1.0F, 1000.0F);
    ASSERT_TRUE(self.has_value());
    EXPECT_EQ(self->entity, shooter) << "from inside a shape: hit at distance 0";
    EXPECT_FLOAT_EQ(self->distance, 0.0F);
}

TEST(LagHistory, AShotAtThePresentMakesTheSameTestOverTheShapesGiven) {
    const std::vector<hit_shape> now{hit_shape{shooter, 0.0F, 0.0F, 14.0F},
                                     hit_shape{target, 0.0F, 200.0F, 10.0F},
                                     hit_shape{runner, 0.0F, 100.0F, 10.0F}};
    const auto hit = ecsnet::server::raycast(now, 0.0F, 0.0F, 0.0F, 1.0F, 1000.0F, shooter);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->entity, runner);
    EXPECT_FLOAT_EQ(hit->distance, 90.0F);
    EXPECT_FALSE(ecsnet::server::raycast(now, 0.0F, 0.0F, 0.0F, 1.0F, 80.0F, shooter).has_value())
        << "out of range";
    EXPECT_FALSE(ecsnet::server::raycast({}, 0.0F, 0.0F, 0.0F, 1.0F, 80.0F).has_value());
}

TEST(LagHistory, ShapesThatAppearOrGoAreWhereTheyExisted) {
    lag_history h{30.0};
    h.record(1, {hit_shape{runner, 0.0F, 0.0F, 5.0F}});
    h.record(2, {hit_shape{target, 50.0F, 0.0F, 5.0F}});  // the runner is gone, the target new
    const auto between = h.at(1.5);
    ASSERT_EQ(between.size(), 1U) << "the target did not exist at tick 1";
    EXPECT_EQ(between[0].entity, runner);
    EXPECT_FLOAT_EQ(between[0].x, 0.0F) << "gone at tick 2: where it last was";
    EXPECT_EQ(h.at(2.0).size(), 1U);
    EXPECT_TRUE(lag_history{30.0}.at(1.0).empty());
    EXPECT_FALSE(lag_history{30.0}.raycast(1.0, 0.0F, 0.0F, 1.0F, 0.0F, 10.0F).has_value());
}

TEST(LagHistory, ASkippedTickIsAnsweredFromTheTickBefore) {
    lag_history h{30.0};
    h.record(10, {hit_shape{runner, 100.0F, 0.0F, 5.0F}});
    h.record(12, {hit_shape{runner, 120.0F, 0.0F, 5.0F}});  // 11 was skipped (an overload)
    EXPECT_FLOAT_EQ(find(h.at(11.5), runner)->x, 100.0F);
    EXPECT_FLOAT_EQ(find(h.at(12.0), runner)->x, 120.0F);
}

}  // namespace lag_history_test
