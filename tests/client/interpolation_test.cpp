#include "ecsnet/client/interpolation.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <variant>
#include <vector>

#include "test_types.hpp"

namespace interpolation_test {

namespace protocol = ecsnet::protocol;
using ecsnet::client::interpolation;
using ecsnet::ecs::Entity;
using ecsnet::testing::Drift;
using ecsnet::testing::Glide;
using ecsnet::testing::Spot;

const protocol::component_registry& registry() {
    static const protocol::component_registry types = ecsnet::testing::motion_types();
    return types;
}
std::uint32_t glide_id() { return *registry().id_of<Glide>(); }
std::uint32_t drift_id() { return *registry().id_of<Drift>(); }

const Entity ship{3, 1};

template <typename T>
std::vector<std::byte> bytes_of(const T& value) {
    const auto packed = protocol::pack(value);
    return {packed.begin(), packed.end()};
}

// Records `value` for `ship` at `tick`, as the mirror's events would.
template <typename T>
void at(interpolation& in, std::uint64_t tick, const T& value, Entity e = ship) {
    in.on_tick(tick);
    in.record(e, *registry().id_of<T>(), bytes_of(value));
}

TEST(Interpolation, RefusesNonsenseOptions) {
    EXPECT_THROW((interpolation{registry().types(), {.history = 1}}), std::invalid_argument);
    EXPECT_THROW((interpolation{registry().types(), {.max_extrapolation = -1.0}}),
                 std::invalid_argument);
}

TEST(Interpolation, BetweenTwoConsecutiveTicksEveryKindOfField) {
    interpolation in{registry().types()};
    at(in, 10, Glide{0.0F, 10.0F, 0, false});
    at(in, 11, Glide{1.0F, 8.0F, 10, true});
    EXPECT_EQ(in.sample<Glide>(ship, 10.0), (Glide{0.0F, 10.0F, 0, false}));
    const Glide mid = *in.sample<Glide>(ship, 10.25);
    EXPECT_FLOAT_EQ(mid.x, 0.25F);
    EXPECT_FLOAT_EQ(mid.y, 9.5F);
    EXPECT_EQ(mid.frame, 3);      // 2.5 rounds away from zero... 0 + 10 * 0.25 = 2.5 -> 3
    EXPECT_FALSE(mid.lit);        // a bool steps at the newer tick
    EXPECT_EQ(in.sample<Glide>(ship, 11.0), (Glide{1.0F, 8.0F, 10, true}));
    // The generic form, as a client without the type sees it.
    const auto fields = *in.sample(ship, glide_id(), 10.5);
    ASSERT_EQ(fields.size(), 4U);
    EXPECT_DOUBLE_EQ(std::get<double>(fields[0]), 0.5);
    EXPECT_DOUBLE_EQ(std::get<double>(fields[1]), 9.0);
    EXPECT_EQ(std::get<std::int64_t>(fields[2]), 5);
    EXPECT_EQ(std::get<bool>(fields[3]), false);
}

TEST(Interpolation, AValueHeldForTicksMovesOnlyDuringTheLastOne) {
    // Sent at 10 and 14 only: it stood at 0 until tick 13 and moved during tick 14.
    interpolation in{registry().types()};
    at(in, 10, Glide{0.0F, 0.0F, 0, false});
    at(in, 14, Glide{4.0F, 0.0F, 0, false});
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 12.0)->x, 0.0F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 13.0)->x, 0.0F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 13.5)->x, 2.0F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 14.0)->x, 4.0F);
}

TEST(Interpolation, QuantizedFieldsInterpolateBetweenSteps) {
    interpolation in{registry().types()};
    at(in, 20, Drift{1.0F, 2.0F});
    at(in, 21, Drift{1.0F + 1.0F / 64.0F, 2.0F});
    // Halfway between two quantization steps: the typed sample is not requantized.
    EXPECT_FLOAT_EQ(in.sample<Drift>(ship, 20.5)->x, 1.0F + 0.5F / 64.0F);
    const auto fields = *in.sample(ship, drift_id(), 20.5);
    EXPECT_DOUBLE_EQ(std::get<double>(fields[0]), 1.0 + 0.5 / 64.0);
}

TEST(Interpolation, OnlyTypesMarkedInterpolatedAreKept) {
    interpolation in{registry().types()};
    at(in, 10, Spot{1.0F, 1.0F});
    EXPECT_FALSE(in.sample<Spot>(ship, 10.0).has_value());
    EXPECT_EQ(in.histories(), 0U);
}

TEST(Interpolation, AnEntityThatAppearsSnapsAndAJumpIsNotSmoothed) {
    interpolation in{registry().types(), {.snap_distance = 50.0}};
    at(in, 10, Glide{0.0F, 0.0F, 0, false});
    // Before its first value: that value (nothing earlier is known).
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 5.0)->x, 0.0F);
    at(in, 11, Glide{500.0F, 0.0F, 0, false});  // a teleport
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 10.5)->x, 0.0F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 11.0)->x, 500.0F);
    // It leaves and comes back elsewhere: no interpolation from where it was.
    in.forget(ship);
    EXPECT_FALSE(in.sample<Glide>(ship, 11.0).has_value());
    in.appeared(ship);
    at(in, 15, Glide{-100.0F, 0.0F, 0, false});
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 14.5)->x, -100.0F);
    // A recycled index at another version is another entity.
    EXPECT_FALSE(in.sample<Glide>(Entity{ship.index(), ship.version() + 1}, 15.0).has_value());
}

TEST(Interpolation, LateFramesExtrapolateAMovingValueForABoundedTime) {
    interpolation in{registry().types(), {.max_extrapolation = 2.0}};
    at(in, 10, Glide{0.0F, 0.0F, 0, false});
    at(in, 11, Glide{1.0F, 0.0F, 0, false});
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 11.5)->x, 1.5F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 13.0)->x, 3.0F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 20.0)->x, 3.0F);  // at most 2 ticks on
    // Frames of later ticks arrived without a change: it stopped, nothing to extrapolate.
    in.on_tick(12);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 12.5)->x, 1.0F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 14.0)->x, 1.0F);
}

TEST(Interpolation, TheHistoryIsBounded) {
    interpolation in{registry().types(), {.history = 4}};
    for (std::uint64_t t = 1; t <= 100; ++t) {
        at(in, t, Glide{static_cast<float>(t), 0.0F, 0, false});
    }
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 99.5)->x, 99.5F);
    EXPECT_FLOAT_EQ(in.sample<Glide>(ship, 50.0)->x, 97.0F);  // older than kept: the oldest kept
    EXPECT_EQ(in.histories(), 1U);
}

// A moving entity sampled at 60 Hz from a 30 Hz stream moves by its speed times the frame time,
// never more: what a player sees is smooth.
TEST(Interpolation, ARenderedPathNeverJumpsMoreThanItsSpeedAllows) {
    interpolation in{registry().types()};
    const float speed = 3.0F;  // units per tick
    double previous = 0.0;
    bool first = true;
    for (std::uint64_t t = 1; t <= 60; ++t) {
        at(in, t, Glide{speed * static_cast<float>(t), 0.0F, 0, false});
        for (const double frame : {0.0, 0.5}) {
            const double render = static_cast<double>(t) - 2.0 + frame;
            if (render < 1.0) {
                continue;
            }
            const double x = in.sample<Glide>(ship, render)->x;
            if (!first) {
                EXPECT_LE(std::abs(x - previous), speed * 0.5 + 1e-4) << "at render tick " << render;
            }
            previous = x;
            first = false;
        }
    }
}

}  // namespace interpolation_test
