// The demo game module (games/demo): its components' registration, its systems (movement with
// bounds, lifetime), its demo entities, and the whole game on a server.
#include "ecsnet/demo/game.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include <boost/asio/io_context.hpp>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/server.hpp"

namespace {

using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::ecs::Entity;
using ecsnet::ecs::Scheduler;
using ecsnet::ecs::World;
using ecsnet::protocol::Owner;
using ecsnet::protocol::writer;

namespace demo = ecsnet::demo;

constexpr double dt = 0.1;
constexpr float extent = 100.0F;

class GameSystems : public testing::Test {
protected:
    GameSystems() { demo::add_systems(scheduler_, extent); }

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
    demo::spawn_entities(*world_, 200, extent, 3);
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
    demo::spawn_entities(*world, 50, extent);
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
    demo::spawn_entities(*a, 20, extent, 11);
    demo::spawn_entities(*b, 20, extent, 11);
    demo::spawn_entities(*c, 20, extent, 12);
    bool any_difference = false;
    a->view<const Position>().each([&](Entity e, const Position& p) {
        EXPECT_EQ(b->get<Position>(e), p);
        EXPECT_EQ(b->get<Velocity>(e), a->get<Velocity>(e));
        any_difference = any_difference || !(c->get<Position>(e) == p);
    });
    EXPECT_TRUE(any_difference) << "another seed gives another world";
}

TEST(DemoComponents, RegisteredAfterOwnerInTheirOrderWithTheirFields) {
    ecsnet::protocol::component_registry types;
    demo::register_components(types);
    ASSERT_EQ(types.size(), 6U);
    EXPECT_EQ(types.id_of<Owner>(), 0U);
    EXPECT_EQ(types.id_of<Position>(), 1U);
    EXPECT_EQ(types.id_of<Velocity>(), 2U);
    EXPECT_EQ(types.id_of<Health>(), 3U);
    EXPECT_EQ(types.id_of<Lifetime>(), 4U);
    EXPECT_EQ(types.id_of<Name>(), 5U);

    const auto* position = types.types().find("position");
    ASSERT_NE(position, nullptr);
    EXPECT_EQ(position->written_by, writer::owner);
    EXPECT_FALSE(position->owner_only);
    ASSERT_EQ(position->fields.size(), 2U);
    EXPECT_EQ(position->fields[0].name, "x");
    EXPECT_EQ(position->fields[0].type, ecsnet::protocol::field_type::float32);
    EXPECT_EQ(position->fields[1].name, "y");
    EXPECT_EQ(position->value_bytes(), 8U);

    const auto* health = types.types().find("health");
    ASSERT_NE(health, nullptr);
    ASSERT_EQ(health->fields.size(), 1U);
    EXPECT_EQ(health->fields[0].name, "value");
    EXPECT_EQ(health->fields[0].type, ecsnet::protocol::field_type::int32);

    const auto* name = types.types().find("name");
    ASSERT_NE(name, nullptr);
    EXPECT_TRUE(name->is_string);
    EXPECT_EQ(name->max_bytes, demo::max_name_bytes);
    EXPECT_TRUE(name->fields.empty());

    ecsnet::protocol::component_registry twice;
    demo::register_components(twice);
    EXPECT_THROW(demo::register_components(twice), std::invalid_argument)
        << "a type registered twice is refused";
}

TEST(DemoComponents, NonFinitePositionsAndVelocitiesAreNotValid) {
    const float inf = std::numeric_limits<float>::infinity();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE((Position{1.0F, -2.0F}.valid()));
    EXPECT_FALSE((Position{inf, 0.0F}.valid()));
    EXPECT_FALSE((Position{0.0F, nan}.valid()));
    EXPECT_TRUE((Velocity{0.0F, 0.0F}.valid()));
    EXPECT_FALSE((Velocity{-inf, 0.0F}.valid()));
}

// demo::game() on a server: its types are the server's, its systems run on the server's
// scheduler, and it spawns --demo-entities inside --world-half-extent.
TEST(DemoGame, SetsUpAServerWithItsTypesSystemsAndEntities) {
    boost::asio::io_context io;
    ecsnet::server::server_config config;
    config.demo_entities = 30;
    config.world_half_extent = 50.0F;
    ecsnet::server::server service{io, config, demo::game()};

    EXPECT_EQ(demo::game().name, "demo");
    EXPECT_EQ(service.types().size(), 6U);
    EXPECT_EQ(service.types().id_of<Name>(), 5U);
    EXPECT_EQ(service.world().alive(), 30U);
    service.world().view<const Position, const Velocity, const Name>().each(
        [&](Entity e, const Position& p, const Velocity&, const Name&) {
            EXPECT_LE(std::abs(p.x), 50.0F);
            EXPECT_LE(std::abs(p.y), 50.0F);
            EXPECT_FALSE(service.world().has<Owner>(e));
        });

    // The systems are the server's: a tick moves an entity and ends another's lifetime.
    auto& world = service.world();
    const Entity mover = world.create();
    world.emplace<Position>(mover, 0.0F, 0.0F);
    world.emplace<Velocity>(mover, 1.0F, 0.0F);
    const Entity doomed = world.create();
    world.emplace<Lifetime>(doomed, 0U);
    const auto report = service.scheduler().run(world);
    EXPECT_TRUE(report.command_failures.empty());
    EXPECT_GT(world.get<Position>(mover).x, 0.0F) << "the movement system ran";
    EXPECT_FALSE(world.valid(doomed)) << "the lifetime system ran";

    config.demo_entities = 0;
    ecsnet::server::server empty{io, config, demo::game()};
    EXPECT_EQ(empty.world().alive(), 0U);
    EXPECT_EQ(empty.types().size(), 6U);
}

}  // namespace
