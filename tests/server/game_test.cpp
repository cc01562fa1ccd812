// The demo game's systems (movement with bounds, lifetime) and the demo entities.
#include "ecsnet/server/game.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/components.hpp"

namespace {

using ecsnet::ecs::Entity;
using ecsnet::ecs::Scheduler;
using ecsnet::ecs::World;
using ecsnet::protocol::Lifetime;
using ecsnet::protocol::Name;
using ecsnet::protocol::Owner;
using ecsnet::protocol::Position;
using ecsnet::protocol::Velocity;
using ecsnet::server::add_game_systems;
using ecsnet::server::spawn_demo_entities;

constexpr double dt = 0.1;
constexpr float extent = 100.0F;

class GameSystems : public testing::Test {
protected:
    GameSystems() { add_game_systems(scheduler_, extent); }

    Entity make(Position p, std::optional<Velocity> v = std::nullopt) {
        const Entity e = world_->create();
        world_->emplace<Position>(e, p);
        if (v) {
            world_->emplace<Velocity>(e, *v);
        }
        return e;
    }
    void tick() {
        const auto report = scheduler_.run(*world_);
        EXPECT_TRUE(report.command_failures.empty());
    }
    static bool contains(const std::vector<Entity>& list, Entity e) {
        return std::find(list.begin(), list.end(), e) != list.end();
    }

    std::shared_ptr<World> world_ = World::make();
    Scheduler scheduler_{dt};
};

TEST_F(GameSystems, MovementAddsVelocityTimesDt) {
    const Entity e = make(Position{1.0F, 2.0F}, Velocity{10.0F, -5.0F});
    tick();
    EXPECT_FLOAT_EQ(world_->get<Position>(e).x, 2.0F);
    EXPECT_FLOAT_EQ(world_->get<Position>(e).y, 1.5F);
    tick();
    EXPECT_FLOAT_EQ(world_->get<Position>(e).x, 3.0F);
    EXPECT_FLOAT_EQ(world_->get<Position>(e).y, 1.0F);
}

TEST_F(GameSystems, OnlyMovingEntitiesAreWritten) {
    const Entity moving = make(Position{0.0F, 0.0F}, Velocity{1.0F, 0.0F});
    const Entity resting = make(Position{5.0F, 5.0F}, Velocity{0.0F, 0.0F});
    const Entity no_velocity = make(Position{7.0F, 7.0F});
    world_->discard_changes();

    tick();
    const auto changes = world_->take_changes();
    const auto* positions = changes.find<Position>();
    ASSERT_NE(positions, nullptr);
    EXPECT_TRUE(contains(positions->updated, moving));
    EXPECT_FALSE(contains(positions->updated, resting)) << "idle entities cost nothing";
    EXPECT_FALSE(contains(positions->updated, no_velocity));
    EXPECT_EQ(world_->get<Position>(resting), (Position{5.0F, 5.0F}));
    EXPECT_EQ(world_->get<Position>(no_velocity), (Position{7.0F, 7.0F}));
    EXPECT_EQ(changes.find<Velocity>(), nullptr);
}

TEST_F(GameSystems, BoundsClampAndBounceOnEveryEdge) {
    const Entity right = make(Position{99.5F, 0.0F}, Velocity{10.0F, 0.0F});
    const Entity left = make(Position{-99.5F, 3.0F}, Velocity{-10.0F, 1.0F});
    const Entity top = make(Position{0.0F, 99.9F}, Velocity{0.0F, 20.0F});
    const Entity corner = make(Position{-99.9F, -99.9F}, Velocity{-5.0F, -5.0F});
    tick();

    EXPECT_EQ(world_->get<Position>(right).x, extent);
    EXPECT_EQ(world_->get<Velocity>(right), (Velocity{-10.0F, 0.0F}));
    EXPECT_EQ(world_->get<Position>(left).x, -extent);
    EXPECT_EQ(world_->get<Velocity>(left), (Velocity{10.0F, 1.0F}));
    EXPECT_EQ(world_->get<Position>(top).y, extent);
    EXPECT_EQ(world_->get<Velocity>(top), (Velocity{0.0F, -20.0F}));
    EXPECT_EQ(world_->get<Position>(corner), (Position{-extent, -extent}));
    EXPECT_EQ(world_->get<Velocity>(corner), (Velocity{5.0F, 5.0F}));

    tick();  // and they move back inside
    EXPECT_LT(world_->get<Position>(right).x, extent);
    EXPECT_GT(world_->get<Position>(left).x, -extent);
}

TEST_F(GameSystems, EntityOutsideMovingInwardIsClampedNotFlipped) {
    const Entity e = make(Position{150.0F, 0.0F}, Velocity{-1.0F, 0.0F});
    tick();
    EXPECT_EQ(world_->get<Position>(e).x, extent);
    EXPECT_EQ(world_->get<Velocity>(e), (Velocity{-1.0F, 0.0F}));
}

TEST_F(GameSystems, EntitiesStayInsideOverManyTicks) {
    spawn_demo_entities(*world_, 200, extent, 3);
    const Entity fast = make(Position{0.0F, 0.0F}, Velocity{3000.0F, -4000.0F});
    int outside = 0;
    for (int i = 0; i < 300; ++i) {
        tick();
        world_->view<const Position>().each([&](Entity, const Position& p) {
            outside += std::abs(p.x) > extent || std::abs(p.y) > extent ? 1 : 0;
        });
    }
    EXPECT_EQ(outside, 0);
    EXPECT_TRUE(world_->valid(fast));
}

TEST_F(GameSystems, LifetimeCountsDownAndDestroysAtZero) {
    const Entity e = make(Position{});
    world_->emplace<Lifetime>(e, 2U);
    const Entity immortal = make(Position{});

    tick();
    ASSERT_TRUE(world_->valid(e));
    EXPECT_EQ(world_->get<Lifetime>(e).ticks, 1U);
    tick();
    ASSERT_TRUE(world_->valid(e));
    EXPECT_EQ(world_->get<Lifetime>(e).ticks, 0U);
    tick();
    EXPECT_FALSE(world_->valid(e));
    EXPECT_TRUE(world_->valid(immortal));
}

TEST_F(GameSystems, LifetimeZeroDestroysOnTheNextTick) {
    const Entity e = make(Position{});
    world_->emplace<Lifetime>(e, 0U);
    world_->emplace<Owner>(e, 4U);
    world_->discard_changes();
    tick();
    EXPECT_FALSE(world_->valid(e));
    const auto changes = world_->take_changes();
    EXPECT_TRUE(contains(changes.destroyed, e));
}

TEST_F(GameSystems, ManyExpiringInOneTick) {
    std::vector<Entity> doomed;
    for (int i = 0; i < 100; ++i) {
        const Entity e = make(Position{}, Velocity{1.0F, 1.0F});
        world_->emplace<Lifetime>(e, static_cast<std::uint32_t>(i % 2));
        doomed.push_back(e);
    }
    tick();
    tick();
    for (const Entity e : doomed) {
        EXPECT_EQ(world_->valid(e), false);
    }
    EXPECT_EQ(world_->alive(), 0U);
}

TEST(DemoEntities, SpawnsMovingNamedServerEntitiesInside) {
    const auto world = World::make();
    spawn_demo_entities(*world, 50, extent);
    EXPECT_EQ(world->alive(), 50U);
    std::set<std::string> names;
    world->view<const Position, const Velocity, const Name>().each(
        [&](Entity e, const Position& p, const Velocity&, const Name& n) {
            EXPECT_LE(std::abs(p.x), extent);
            EXPECT_LE(std::abs(p.y), extent);
            EXPECT_FALSE(world->has<Owner>(e)) << "demo entities belong to the server";
            names.insert(n.value);
        });
    EXPECT_EQ(names.size(), 50U);
    EXPECT_TRUE(names.contains("demo-0"));
    EXPECT_TRUE(names.contains("demo-49"));
}

TEST(DemoEntities, DeterministicForASeed) {
    const auto a = World::make();
    const auto b = World::make();
    const auto c = World::make();
    spawn_demo_entities(*a, 20, extent, 11);
    spawn_demo_entities(*b, 20, extent, 11);
    spawn_demo_entities(*c, 20, extent, 12);
    bool any_difference = false;
    a->view<const Position>().each([&](Entity e, const Position& p) {
        EXPECT_EQ(b->get<Position>(e), p);
        EXPECT_EQ(b->get<Velocity>(e), a->get<Velocity>(e));
        any_difference = any_difference || !(c->get<Position>(e) == p);
    });
    EXPECT_TRUE(any_difference) << "another seed gives another world";
}

}  // namespace
