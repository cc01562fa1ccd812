// The game's systems on a world of their own: no server, no network.
#include <gtest/gtest.h>

#include "__NAME__/systems.hpp"

namespace {

using namespace __NAME__;

TEST(Move, FollowsTheInputAtPlayerSpeed) {
    const auto owned = ecsnet::ecs::World::make();  // a world lives in a shared_ptr
    ecsnet::ecs::World& world = *owned;
    const auto e = world.create();
    world.emplace<Position>(e, 0.0F, 0.0F);
    world.emplace<Velocity>(e);
    world.emplace<Move>(e, 1.0F, -0.5F);

    move(world, 0.5F);

    EXPECT_EQ(world.get<Velocity>(e), (Velocity{player_speed, -0.5F * player_speed}));
    EXPECT_EQ(world.get<Position>(e), (Position{0.5F * player_speed, -0.25F * player_speed}));
}

TEST(Move, StopsAtTheFieldsEdge) {
    const auto owned = ecsnet::ecs::World::make();  // a world lives in a shared_ptr
    ecsnet::ecs::World& world = *owned;
    const auto e = world.create();
    world.emplace<Position>(e, field_half_size - 1.0F, 0.0F);
    world.emplace<Velocity>(e);
    world.emplace<Move>(e, 1.0F, 0.0F);

    move(world, 1.0F);

    EXPECT_EQ(world.get<Position>(e).x, field_half_size);
}

TEST(Move, AScheduledTickRunsIt) {
    const auto owned = ecsnet::ecs::World::make();  // a world lives in a shared_ptr
    ecsnet::ecs::World& world = *owned;
    ecsnet::ecs::Scheduler scheduler{1.0 / 30.0};
    add_systems(scheduler);
    const auto e = world.create();
    world.emplace<Position>(e);
    world.emplace<Velocity>(e);
    world.emplace<Move>(e, 0.0F, 1.0F);

    const auto report = scheduler.run(world);

    EXPECT_TRUE(report.system_failures.empty());  // e.g. an access it did not declare
    EXPECT_GT(world.get<Position>(e).y, 0.0F);
}

}  // namespace
