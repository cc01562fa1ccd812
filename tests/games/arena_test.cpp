// The arena game (games/arena): its systems on a bare World (steering, firing, bullets,
// collisions, score, death and respawn, asteroids, determinism), the bot's decisions, and the
// game on a real server played by a blocking client. Every wait on a socket is bounded in
// time; nothing here measures speed.
#include "ecsnet/arena/game.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/arena/bot.hpp"
#include "ecsnet/client/connection.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/server/server.hpp"
#include "test_server.hpp"

namespace {

namespace arena = ecsnet::arena;
namespace protocol = ecsnet::protocol;
namespace rules = ecsnet::arena::rules;
using arena::Asteroid;
using arena::Bullet;
using arena::BulletLife;
using arena::Heading;
using arena::Pilot;
using arena::Position;
using arena::Ship;
using arena::ship_status;
using arena::ShipTimers;
using arena::Stats;
using arena::Velocity;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::ecs::Entity;
using ecsnet::ecs::Scheduler;
using ecsnet::ecs::World;
using protocol::Owner;
using namespace std::chrono_literals;

constexpr double dt = 1.0 / 30.0;

Ship with(ship_status s) { return Ship{static_cast<std::uint8_t>(s)}; }

float distance(Position a, Position b) { return std::hypot(a.x - b.x, a.y - b.y); }

// ---- the systems on a bare World ------------------------------------------------------------

class ArenaSystems : public testing::Test {
protected:
    ArenaSystems() { arena::add_systems(scheduler_, game_); }

    // A flying ship (no spawn shield) at `at`, pointing along `heading`.
    Entity ship(std::uint32_t owner, Position at, Heading heading = {}) {
        const Entity e = arena::spawn_ship(*world_, *game_, owner);
        world_->replace<Position>(e, at);
        world_->replace<Heading>(e, heading);
        world_->replace<Ship>(e, with(ship_status::flying));
        world_->replace<ShipTimers>(e, ShipTimers{0.0F, rules::reload_interval, 0.0F});
        return e;
    }
    Entity asteroid(Position at, Velocity v, std::uint8_t size) {
        const Entity e = world_->create();
        world_->emplace<Position>(e, at);
        world_->emplace<Velocity>(e, v);
        world_->emplace<Asteroid>(e, Asteroid{size});
        return e;
    }
    void tick(int n = 1) {
        for (int i = 0; i < n; ++i) {
            const auto report = scheduler_.run(*world_);
            ASSERT_TRUE(report.system_failures.empty()) << report.system_failures[0].what;
            ASSERT_TRUE(report.command_failures.empty()) << report.command_failures[0];
        }
    }
    std::size_t count_bullets() { return world_->storage<Bullet>().size(); }
    std::vector<Asteroid> asteroids() {
        std::vector<Asteroid> out;
        world_->view<const Asteroid>().each([&](const Asteroid& a) { out.push_back(a); });
        return out;
    }

    std::shared_ptr<World> world_ = World::make();
    Scheduler scheduler_{dt};
    std::shared_ptr<arena::state> game_ =
        std::make_shared<arena::state>(arena::settings{.size = 1000.0F, .asteroids = 0, .seed = 7});
};

TEST_F(ArenaSystems, ThrustMovesAShipAlongItsHeadingAndDragStopsIt) {
    const Entity e = ship(1, Position{0.0F, 0.0F});
    world_->replace<Pilot>(e, Pilot{1.0F, 0.0F, false, false});
    tick(10);
    EXPECT_GT(world_->get<Position>(e).x, 5.0F);
    EXPECT_EQ(world_->get<Position>(e).y, 0.0F);
    EXPECT_GT(world_->get<Velocity>(e).x, 50.0F);

    world_->replace<Pilot>(e, Pilot{});
    tick(400);
    EXPECT_EQ(world_->get<Velocity>(e), (Velocity{})) << "drag brings a ship to rest";
    world_->discard_changes();
    tick();
    const auto changes = world_->take_changes();
    for (const auto* written : {changes.find<Position>(), changes.find<Velocity>()}) {
        ASSERT_TRUE(written == nullptr || written->updated.empty()) << "a ship at rest costs nothing";
    }
    EXPECT_EQ(changes.find<Heading>(), nullptr);
    EXPECT_EQ(changes.find<Stats>(), nullptr);
}

TEST_F(ArenaSystems, SpeedIsCappedAndTurnTurnsCounterClockwise) {
    const Entity e = ship(1, Position{-480.0F, 0.0F});  // room to speed up before the wall
    world_->replace<Pilot>(e, Pilot{0.0F, 1.0F, false, false});
    tick();
    const Heading h = world_->get<Heading>(e);
    const float step = rules::ship_turn_rate * static_cast<float>(dt);
    // The heading ends the tick on the wire's grid of 1/4096 (settle).
    EXPECT_NEAR(std::atan2(h.y, h.x), step, 2.0 / 4096);
    EXPECT_NEAR(std::hypot(h.x, h.y), 1.0F, 2.0 / 4096);
    EXPECT_EQ(world_->get<Position>(e), (Position{-480.0F, 0.0F})) << "turning alone does not move";

    world_->replace<Heading>(e, Heading{});
    world_->replace<Pilot>(e, Pilot{1.0F, 0.0F, false, false});
    tick(100);  // drag alone would let it reach about 425 units/s
    const Velocity v = world_->get<Velocity>(e);
    EXPECT_NEAR(std::hypot(v.x, v.y), rules::ship_max_speed, 0.01F);
    EXPECT_LT(world_->get<Position>(e).x, 500.0F) << "it did not reach the wall";
}

TEST_F(ArenaSystems, ShipsEndEachTickOnTheWiresGridAndTheSmallestTurnStillTurns) {
    const Entity e = ship(1, Position{0.3F, -0.3F});
    world_->replace<Velocity>(e, Velocity{10.01F, 0.0F});
    world_->replace<Pilot>(e, Pilot{0.5F, 1.0F / 64, false, false});  // the smallest turn the wire sends
    Heading before = world_->get<Heading>(e);
    for (int i = 0; i < 30; ++i) {
        tick();
        EXPECT_EQ(world_->get<Position>(e), ecsnet::protocol::quantized(world_->get<Position>(e)));
        EXPECT_EQ(world_->get<Velocity>(e), ecsnet::protocol::quantized(world_->get<Velocity>(e)));
        const Heading h = world_->get<Heading>(e);
        EXPECT_EQ(h, ecsnet::protocol::quantized(h));
        EXPECT_GT(std::atan2(h.y, h.x), std::atan2(before.y, before.x)) << "tick " << i;
        before = h;
    }
}

TEST_F(ArenaSystems, FireSpawnsBulletsNoFasterThanTheCooldown) {
    const Entity e = ship(9, Position{0.0F, 0.0F});
    world_->replace<Pilot>(e, Pilot{0.0F, 0.0F, true, false});
    tick();
    ASSERT_EQ(count_bullets(), 1U);
    world_->view<const Bullet, const Position, const Velocity>().each(
        [&](const Bullet& b, const Position& p, const Velocity& v) {
            EXPECT_EQ(b.shooter, 9U);
            EXPECT_GT(p.x, rules::ship_radius);
            EXPECT_NEAR(v.x, rules::bullet_speed, 1e-3);
        });
    EXPECT_EQ(world_->get<Stats>(e).ammo, rules::max_ammo - 1);
    tick(5);  // 0.18 s between shots: 5 ticks of 1/30 s are not enough
    EXPECT_EQ(count_bullets(), 1U);
    tick();
    EXPECT_EQ(count_bullets(), 2U);
    EXPECT_EQ(world_->get<Stats>(e).ammo, rules::max_ammo - 2);
}

TEST_F(ArenaSystems, WithoutAmmoNothingFiresUntilARoundReloads) {
    const Entity e = ship(1, Position{0.0F, 0.0F});
    world_->replace<Stats>(e, Stats{0, 1, 0});
    world_->replace<Pilot>(e, Pilot{0.0F, 0.0F, true, false});
    tick();
    EXPECT_EQ(count_bullets(), 1U);
    EXPECT_EQ(world_->get<Stats>(e).ammo, 0);
    tick(9);  // the round comes back 0.4 s (12 ticks) later
    EXPECT_EQ(count_bullets(), 1U);
    tick(4);
    EXPECT_EQ(count_bullets(), 2U);
}

TEST_F(ArenaSystems, FiringDropsTheSpawnShield) {
    const Entity e = ship(1, Position{0.0F, 0.0F});
    world_->replace<Ship>(e, with(ship_status::shielded));
    world_->replace<ShipTimers>(e, ShipTimers{0.0F, rules::reload_interval, rules::shield_time});
    tick();
    EXPECT_EQ(world_->get<Ship>(e).state(), ship_status::shielded);
    world_->replace<Pilot>(e, Pilot{0.0F, 0.0F, true, false});
    tick();
    EXPECT_EQ(world_->get<Ship>(e).state(), ship_status::flying);
}

TEST_F(ArenaSystems, BulletsExpireAfterTheirLifetime) {
    const Entity e = ship(1, Position{0.0F, 0.0F});
    world_->replace<Pilot>(e, Pilot{0.0F, 0.0F, true, false});
    tick();
    world_->replace<Pilot>(e, Pilot{});
    tick(25);
    EXPECT_EQ(count_bullets(), 1U);
    tick(10);
    EXPECT_EQ(count_bullets(), 0U);
}

TEST_F(ArenaSystems, ABulletShattersAnAsteroidAndScores) {
    const Entity shooter = ship(1, Position{0.0F, 0.0F});
    const Entity rock = asteroid(Position{150.0F, 0.0F}, Velocity{}, 3);
    world_->replace<Pilot>(shooter, Pilot{0.0F, 0.0F, true, false});
    tick();
    world_->replace<Pilot>(shooter, Pilot{});
    tick(10);
    EXPECT_FALSE(world_->valid(rock));
    EXPECT_EQ(count_bullets(), 0U) << "the bullet is spent";
    const auto left = asteroids();
    ASSERT_EQ(left.size(), 2U) << "a large asteroid leaves two medium ones";
    EXPECT_EQ(left[0].size, 2);
    EXPECT_EQ(left[1].size, 2);
    EXPECT_EQ(world_->get<Stats>(shooter).score, rules::asteroid_points(3));
}

TEST_F(ArenaSystems, SmallAsteroidsDoNotSplit) {
    const Entity shooter = ship(1, Position{0.0F, 0.0F});
    (void)asteroid(Position{100.0F, 0.0F}, Velocity{}, 1);
    world_->replace<Pilot>(shooter, Pilot{0.0F, 0.0F, true, false});
    tick();
    world_->replace<Pilot>(shooter, Pilot{});
    tick(10);
    EXPECT_TRUE(asteroids().empty());
    EXPECT_EQ(world_->get<Stats>(shooter).score, rules::asteroid_points(1));
}

TEST_F(ArenaSystems, AShotShipIsWreckedThenRespawnsShieldedElsewhere) {
    const Entity shooter = ship(1, Position{0.0F, 0.0F});
    const Entity target = ship(2, Position{200.0F, 0.0F});
    world_->replace<Velocity>(target, Velocity{0.0F, 1.0F});
    world_->replace<Stats>(target, Stats{0, 3, 0});
    world_->replace<Pilot>(shooter, Pilot{0.0F, 0.0F, true, false});
    tick();
    world_->replace<Pilot>(shooter, Pilot{});
    tick(12);
    ASSERT_EQ(world_->get<Ship>(target).state(), ship_status::wrecked);
    EXPECT_EQ(world_->get<Stats>(target).deaths, 1);
    EXPECT_EQ(world_->get<Velocity>(target), (Velocity{}));
    EXPECT_EQ(world_->get<Stats>(shooter).score, rules::ship_points);
    const Position wreck = world_->get<Position>(target);

    world_->replace<Pilot>(target, Pilot{1.0F, 1.0F, true, false});  // a wreck ignores its pilot
    tick(80);  // 3 s to respawn: not yet
    EXPECT_EQ(world_->get<Ship>(target).state(), ship_status::wrecked);
    EXPECT_EQ(world_->get<Position>(target), wreck);
    EXPECT_EQ(world_->get<Heading>(target), (Heading{}));
    world_->replace<Pilot>(target, Pilot{});
    tick(15);
    EXPECT_EQ(world_->get<Ship>(target).state(), ship_status::shielded);
    EXPECT_GE(distance(world_->get<Position>(target), world_->get<Position>(shooter)),
              rules::free_spot_clearance)
        << "a respawn lands away from other ships";
    EXPECT_EQ(world_->get<Stats>(target).ammo, rules::max_ammo);
    tick(70);  // 2 s of shield
    EXPECT_EQ(world_->get<Ship>(target).state(), ship_status::flying);
}

TEST_F(ArenaSystems, TheLaserHitsTheFirstShipInItsBeamAtOnceThenRecharges) {
    const Entity shooter = ship(1, Position{0.0F, 0.0F});
    const Entity near = ship(2, Position{300.0F, 0.0F});
    const Entity far = ship(3, Position{500.0F, 0.0F});
    world_->replace<Pilot>(shooter, Pilot{0.0F, 0.0F, false, true});
    tick();
    EXPECT_EQ(world_->get<Ship>(near).state(), ship_status::wrecked);
    EXPECT_EQ(world_->get<Ship>(far).state(), ship_status::flying) << "the first ship stops it";
    EXPECT_EQ(world_->get<Stats>(shooter).score, rules::ship_points);
    const arena::Laser beam = world_->get<arena::Laser>(shooter);
    EXPECT_EQ(beam.tick, 1U);
    EXPECT_EQ(beam.target, near.index() + 1);
    EXPECT_NEAR(beam.length, 300.0F - rules::ship_radius - rules::muzzle, 0.01F);
    EXPECT_EQ(count_bullets(), 0U) << "the laser is not the gun";

    tick(25);  // held, still charging
    EXPECT_EQ(world_->get<Ship>(far).state(), ship_status::flying);
    tick(10);
    EXPECT_EQ(world_->get<Ship>(far).state(), ship_status::wrecked) << "recharged after 1 s";
    EXPECT_EQ(world_->get<arena::Laser>(shooter).target, far.index() + 1);
    EXPECT_EQ(world_->get<Stats>(shooter).score, 2 * rules::ship_points);
}

TEST_F(ArenaSystems, TheLaserMissesAShieldedShipAndBeyondItsRange) {
    const Entity shooter = ship(1, Position{0.0F, 0.0F});
    const Entity shielded = ship(2, Position{200.0F, 0.0F});
    world_->replace<Ship>(shielded, with(ship_status::shielded));
    world_->replace<ShipTimers>(shielded, ShipTimers{0.0F, rules::reload_interval, 100.0F});
    const Entity beyond = ship(3, Position{rules::laser_range + rules::muzzle + 20.0F, 0.0F});
    world_->replace<Pilot>(shooter, Pilot{0.0F, 0.0F, false, true});
    tick();
    EXPECT_EQ(world_->get<Ship>(shielded).state(), ship_status::shielded);
    EXPECT_EQ(world_->get<Ship>(beyond).state(), ship_status::flying);
    const arena::Laser beam = world_->get<arena::Laser>(shooter);
    EXPECT_EQ(beam.target, 0U);
    EXPECT_EQ(beam.length, rules::laser_range);
}

// A target crossing the beam: at tick 1 it was in the line, by tick 6 it is 50 units past.
class ArenaLaserRewind : public ArenaSystems {
protected:
    void cross(std::optional<double> view) {
        game_->view_of = [view](std::uint32_t) { return view; };
        shooter_ = ship(1, Position{0.0F, 0.0F});
        target_ = ship(2, Position{300.0F, 0.0F});
        world_->replace<Velocity>(target_, Velocity{0.0F, 300.0F});
        tick(5);
        ASSERT_GT(world_->get<Position>(target_).y, 40.0F);
        world_->replace<Pilot>(shooter_, Pilot{0.0F, 0.0F, false, true});
        tick();
    }
    Entity shooter_;
    Entity target_;
};

TEST_F(ArenaLaserRewind, AShotHitsWhereItsShooterSawTheTarget) {
    cross(1.0);
    EXPECT_EQ(world_->get<Ship>(target_).state(), ship_status::wrecked);
    EXPECT_EQ(world_->get<arena::Laser>(shooter_).target, target_.index() + 1);
}

TEST_F(ArenaLaserRewind, WithoutLagCompensationTheShotMissesWhatItsShooterSaw) {
    game_->config.lag_compensation = false;
    cross(1.0);
    EXPECT_EQ(world_->get<Ship>(target_).state(), ship_status::flying);
    EXPECT_EQ(world_->get<arena::Laser>(shooter_).target, 0U);
}

TEST_F(ArenaLaserRewind, AClientThatGaveNoViewShootsAtThePresent) {
    cross(std::nullopt);
    EXPECT_EQ(world_->get<Ship>(target_).state(), ship_status::flying);
}

TEST_F(ArenaLaserRewind, AViewOlderThanTheWindowIsAnsweredAtItsOldestTick) {
    game_->config.lag_window_ms = 100;  // 3 ticks at 30 Hz: at tick 6 it holds ticks 3 to 6
    cross(1.0);
    EXPECT_EQ(world_->get<Ship>(target_).state(), ship_status::flying)
        << "tick 1 is out of the window: the target was already past the beam at tick 3";
}

TEST_F(ArenaSystems, BulletsPassThroughShieldedShipsAndTheirShooter) {
    const Entity shooter = ship(1, Position{0.0F, 0.0F});
    const Entity shielded = ship(2, Position{200.0F, 0.0F});
    world_->replace<Ship>(shielded, with(ship_status::shielded));
    world_->replace<ShipTimers>(shielded, ShipTimers{0.0F, rules::reload_interval, 100.0F});
    world_->replace<Pilot>(shooter, Pilot{0.0F, 0.0F, true, false});
    tick();
    world_->replace<Pilot>(shooter, Pilot{});
    tick(12);
    EXPECT_EQ(world_->get<Ship>(shielded).state(), ship_status::shielded);
    EXPECT_EQ(world_->get<Stats>(shooter).score, 0U);
    EXPECT_EQ(count_bullets(), 1U);
    EXPECT_EQ(world_->get<Ship>(shooter).state(), ship_status::flying);
}

TEST_F(ArenaSystems, AShipRammingAnAsteroidIsWreckedAndNobodyScores) {
    const Entity e = ship(1, Position{0.0F, 0.0F});
    const Entity rock = asteroid(Position{80.0F, 0.0F}, Velocity{-60.0F, 0.0F}, 2);
    tick(30);
    EXPECT_EQ(world_->get<Ship>(e).state(), ship_status::wrecked);
    EXPECT_FALSE(world_->valid(rock));
    EXPECT_EQ(asteroids().size(), 2U);
    EXPECT_EQ(world_->get<Stats>(e).score, 0U);
    EXPECT_EQ(world_->get<Stats>(e).deaths, 1);
}

TEST_F(ArenaSystems, AsteroidsDriftAndBounceOffTheWalls) {
    const Entity rock = asteroid(Position{480.0F, 0.0F}, Velocity{60.0F, 30.0F}, 3);
    tick();
    EXPECT_FLOAT_EQ(world_->get<Position>(rock).x, 482.0F);
    EXPECT_FLOAT_EQ(world_->get<Position>(rock).y, 1.0F);
    tick(15);
    EXPECT_LE(world_->get<Position>(rock).x, 500.0F);
    EXPECT_EQ(world_->get<Velocity>(rock), (Velocity{-60.0F, 30.0F}));
    for (int i = 0; i < 600; ++i) {
        tick();
        const Position p = world_->get<Position>(rock);
        ASSERT_TRUE(std::abs(p.x) <= 500.0F && std::abs(p.y) <= 500.0F) << p.x << ", " << p.y;
    }
}

TEST_F(ArenaSystems, AsteroidsAreToppedUpAFewPerTick) {
    game_->config.asteroids = 10;
    tick();
    EXPECT_EQ(asteroids().size(), 4U);
    tick(2);
    const auto all = asteroids();
    ASSERT_EQ(all.size(), 10U);
    for (const Asteroid& a : all) {
        EXPECT_EQ(a.size, 3);
    }
}

TEST_F(ArenaSystems, ClientsOwnTheirShipsAndNothingElse) {
    const Entity e = ship(1, Position{0.0F, 0.0F});
    const Entity stray = world_->create();
    world_->emplace<Owner>(stray, Owner{1});
    tick();
    EXPECT_FALSE(world_->valid(stray));
    EXPECT_TRUE(world_->valid(e));
}

TEST_F(ArenaSystems, APlayerWhoseShipWasDestroyedGetsANewOne) {
    std::vector<std::pair<std::uint32_t, Entity>> told;
    game_->on_new_ship = [&](std::uint32_t owner, Entity e) { told.emplace_back(owner, e); };
    const Entity old = arena::spawn_ship(*world_, *game_, 5);
    ASSERT_EQ(told.size(), 1U);
    world_->destroy(old);
    tick();
    ASSERT_EQ(told.size(), 2U);
    const Entity fresh = told[1].second;
    EXPECT_EQ(told[1].first, 5U);
    EXPECT_NE(fresh, old);
    EXPECT_EQ(game_->players.at(5), fresh);
    EXPECT_EQ(world_->get<Owner>(fresh).client, 5U);
    EXPECT_EQ(arena::find_ship(*world_, 5), fresh);
}

// ---- determinism: two bots, the same seed, the same game ------------------------------------

arena::own_ship seen_from(World& world, Entity e) {
    return arena::own_ship{world.get<Position>(e), world.get<Velocity>(e), world.get<Heading>(e),
                           world.get<Ship>(e).state(), world.get<Stats>(e).ammo};
}

// Every asteroid's position after `ticks` of two bots playing, then the bots' scores.
std::vector<float> play(std::uint64_t seed, int ticks) {
    auto world = World::make();
    Scheduler scheduler{dt};
    auto game = std::make_shared<arena::state>(
        arena::settings{.size = 2000.0F, .asteroids = 40, .seed = seed});
    arena::add_systems(scheduler, game);
    arena::top_up_asteroids(*world, *game, 40);
    arena::locate_bodies(*world, *game);
    const std::vector<Entity> bots{arena::spawn_ship(*world, *game, 1),
                                   arena::spawn_ship(*world, *game, 2)};
    std::vector<arena::sighting> around;
    for (int t = 0; t < ticks; ++t) {
        around.clear();
        world->view<const Asteroid, const Position, const Velocity>().each(
            [&](const Asteroid& a, const Position& p, const Velocity& v) {
                around.push_back(arena::sighting{p, v, rules::asteroid_radius(a.size)});
            });
        for (const Entity e : bots) {
            world->replace<Pilot>(e, arena::decide(seen_from(*world, e), around));
        }
        (void)scheduler.run(*world);
    }
    std::vector<float> out;
    world->view<const Asteroid, const Position>().each([&](const Asteroid&, const Position& p) {
        out.push_back(p.x);
        out.push_back(p.y);
    });
    for (const Entity e : bots) {
        out.push_back(static_cast<float>(world->get<Stats>(e).score));
    }
    return out;
}

TEST(ArenaDeterminism, TheSameSeedAndInputsPlayTheSameGame) {
    const auto first = play(5, 300);
    EXPECT_EQ(first, play(5, 300));
    EXPECT_NE(first, play(6, 300));
    ASSERT_GE(first.size(), 2U);
    EXPECT_GT(first[first.size() - 1] + first[first.size() - 2], 0.0F) << "the bots scored";
}

// ---- the bot --------------------------------------------------------------------------------

arena::own_ship at_origin() { return arena::own_ship{}; }  // heading +x, at rest, full ammo

TEST(ArenaBot, AWreckDoesNothing) {
    arena::own_ship self = at_origin();
    self.status = ship_status::wrecked;
    const std::vector<arena::sighting> around{{Position{300.0F, 0.0F}, Velocity{}, 40.0F}};
    EXPECT_EQ(arena::decide(self, around), Pilot{});
}

TEST(ArenaBot, TurnsTowardsTheNearestAsteroid) {
    const std::vector<arena::sighting> around{{Position{0.0F, 300.0F}, Velocity{}, 24.0F},
                                              {Position{0.0F, -500.0F}, Velocity{}, 24.0F}};
    const Pilot p = arena::decide(at_origin(), around);
    EXPECT_EQ(p.turn, 1.0F) << "counter-clockwise, towards +y";
    EXPECT_FALSE(p.fire) << "not aligned yet";
}

TEST(ArenaBot, FiresWhenAlignedAndInRangeWithAmmo) {
    const std::vector<arena::sighting> ahead{{Position{300.0F, 0.0F}, Velocity{}, 24.0F}};
    const Pilot p = arena::decide(at_origin(), ahead);
    EXPECT_TRUE(p.fire);
    EXPECT_EQ(p.turn, 0.0F);

    arena::own_ship empty = at_origin();
    empty.ammo = 0;
    EXPECT_FALSE(arena::decide(empty, ahead).fire);

    const std::vector<arena::sighting> far{{Position{3000.0F, 0.0F}, Velocity{}, 24.0F}};
    const Pilot chase = arena::decide(at_origin(), far);
    EXPECT_FALSE(chase.fire) << "out of range";
    EXPECT_EQ(chase.thrust, 1.0F) << "closes in";
}

TEST(ArenaBot, AimsAheadOfAMovingAsteroid) {
    const std::vector<arena::sighting> crossing{
        {Position{300.0F, 0.0F}, Velocity{0.0F, 200.0F}, 12.0F}};
    EXPECT_GT(arena::decide(at_origin(), crossing).turn, 0.0F);
}

TEST(ArenaBot, TurnsAwayFromAnAsteroidAboutToHitAndShootsIt) {
    const std::vector<arena::sighting> incoming{
        {Position{120.0F, 0.0F}, Velocity{-150.0F, 0.0F}, 40.0F},
        {Position{0.0F, 90.0F}, Velocity{}, 12.0F}};
    const Pilot p = arena::decide(at_origin(), incoming);
    EXPECT_EQ(std::abs(p.turn), 1.0F) << "the threat, not the nearest rock, decides";
    EXPECT_TRUE(p.fire) << "it faces the threat";
}

TEST(ArenaBot, CruisesWithNothingInView) {
    const Pilot p = arena::decide(at_origin(), {});
    EXPECT_GT(p.thrust, 0.0F);
    EXPECT_NE(p.turn, 0.0F);
    EXPECT_FALSE(p.fire);
}

// ---- the game on a real server --------------------------------------------------------------

ecsnet::server::server_config arena_config() {
    ecsnet::server::server_config c = ecsnet::test::local_server_config(30.0);
    c.reconnect_grace = 10s;
    c.client_budget = 0.0;  // unlimited: every view is complete at every tick
    return c;
}

std::unique_ptr<connection> join(std::uint16_t port, const std::string& name,
                                 std::vector<std::uint8_t> resume_key = {}) {
    connect_options options;
    options.port = port;
    options.name = name;
    options.timeout = 10s;
    options.resume_key = std::move(resume_key);
    options.expected_types = {protocol::describe<Position>(), protocol::describe<Pilot>(),
                              protocol::describe<Ship>(), protocol::describe<Stats>()};
    return std::make_unique<connection>(options);
}

// Polls every connection in turn until pred() holds, for at most `timeout`.
bool poll_all(const std::vector<connection*>& clients, const std::function<bool()>& pred,
              std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        for (connection* c : clients) {
            c->poll_for(5ms);
        }
    }
    return true;
}

Entity ship_of(const protocol::mirror& mirror, std::uint32_t client) {
    Entity found;
    mirror.each([&](Entity e) {
        const auto owner = mirror.get<Owner>(e);
        if (owner && owner->client == client && mirror.get<Ship>(e)) {
            found = e;
        }
    });
    return found;
}

// The largest distance on either axis from `centre` to an entity the mirror holds.
float farthest_from(const protocol::mirror& mirror, Position centre) {
    float farthest = 0.0F;
    mirror.each([&](Entity e) {
        if (const auto p = mirror.get<Position>(e)) {
            farthest = std::max({farthest, std::abs(p->x - centre.x), std::abs(p->y - centre.y)});
        }
    });
    return farthest;
}

TEST(ArenaServer, APlayerSteersItsShipAndSeesOnlyWhatIsAroundIt) {
    ecsnet::test::test_server server{
        arena_config(), arena::game(arena::settings{.size = 4000.0F, .asteroids = 300, .seed = 3})};
    auto c = join(server.port(), "pilot");
    const std::uint32_t me = c->welcome().client_id;
    EXPECT_EQ(c->welcome().interest_radius, arena::default_view_radius);
    arena::bot bot;
    ASSERT_TRUE(c->poll_until([&] { return bot.play(c->mirror(), me).has_value(); }, 5s));
    const Entity ship = bot.ship();
    const auto stats = c->mirror().get<Stats>(ship);
    ASSERT_TRUE(stats.has_value()) << "its owner receives its Stats";
    EXPECT_EQ(stats->ammo, rules::max_ammo);

    // Only what is around the ship: the cells within the view radius (plus a cell's slack).
    const float reach = arena::default_view_radius * 1.5F + 1.0F;
    const Position start = *c->mirror().get<Position>(ship);
    EXPECT_LE(farthest_from(c->mirror(), start), reach);
    const std::size_t world_entities =
        server.call([](ecsnet::server::server& s) { return s.world().alive(); });
    EXPECT_LT(c->mirror().size(), world_entities / 2) << "a 4000-unit arena does not fit a view";

    // Full thrust for 16 ticks, in one Input frame stamped ahead of the server.
    const std::uint64_t first = c->mirror().tick() + 3;
    protocol::input in{ship, first, {}};
    for (int i = 0; i < 16; ++i) {
        in.ticks.push_back(protocol::component_set{}.set(Pilot{1.0F, 0.0F, false, false}));
    }
    c->send(in);
    ASSERT_TRUE(c->poll_until(
        [&] { return c->last_input_ack() && c->last_input_ack()->applied_tick >= first + 15; }, 5s));
    ASSERT_TRUE(c->poll_until([&] { return c->mirror().tick() >= first + 16; }, 5s));
    EXPECT_FALSE(c->last_input_rejected().has_value());
    const Position moved = *c->mirror().get<Position>(ship);
    EXPECT_GT(distance(moved, start), 10.0F);
    EXPECT_GT(std::hypot(c->mirror().get<Velocity>(ship)->x, c->mirror().get<Velocity>(ship)->y),
              50.0F);

    // The client cannot look elsewhere: a Focus far away changes nothing.
    c->send(protocol::focus{start.x > 0 ? -1900.0F : 1900.0F, start.y > 0 ? -1900.0F : 1900.0F});
    const std::uint64_t after = c->mirror().tick() + 10;
    ASSERT_TRUE(c->poll_until([&] { return c->mirror().tick() >= after; }, 5s));
    EXPECT_LE(farthest_from(c->mirror(), *c->mirror().get<Position>(ship)), reach);

    // The bot plays: one input per tick it receives, and the server applies them.
    std::uint64_t sent_for = 0;
    const auto bot_played = [&] {
        if (c->mirror().tick() > sent_for) {
            sent_for = c->mirror().tick();
            if (const auto pilot = bot.play(c->mirror(), me)) {
                c->send(protocol::input{bot.ship(), sent_for + 2,
                                        {protocol::component_set{}.set(*pilot)}});
            }
        }
        return c->last_input_ack() && c->last_input_ack()->applied_tick >= after + 30;
    };
    ASSERT_TRUE(c->poll_until(bot_played, 5s));
    EXPECT_FALSE(c->last_input_rejected().has_value());
    EXPECT_EQ(bot.ship(), ship);
}

TEST(ArenaServer, OthersSeeAShipButNotItsStatsAndAResumedPlayerKeepsIt) {
    ecsnet::test::test_server server{
        arena_config(), arena::game(arena::settings{.size = 1000.0F, .asteroids = 4, .seed = 2})};
    auto alice = join(server.port(), "alice");
    auto bob = join(server.port(), "bob");
    const std::uint32_t alice_id = alice->welcome().client_id;
    const std::uint32_t bob_id = bob->welcome().client_id;
    // A 1000-unit arena fits in a view: each sees both ships.
    ASSERT_TRUE(poll_all({alice.get(), bob.get()}, [&] {
        return !ship_of(alice->mirror(), alice_id).is_null() &&
               !ship_of(alice->mirror(), bob_id).is_null() &&
               !ship_of(bob->mirror(), alice_id).is_null() &&
               !ship_of(bob->mirror(), bob_id).is_null();
    }, 5s));
    const Entity alices = ship_of(alice->mirror(), alice_id);
    const Entity bobs = ship_of(alice->mirror(), bob_id);
    EXPECT_TRUE(alice->mirror().get<Stats>(alices).has_value());
    EXPECT_TRUE(alice->mirror().get<Position>(bobs).has_value());
    EXPECT_FALSE(alice->mirror().get<Stats>(bobs).has_value()) << "Stats are its owner's only";
    EXPECT_FALSE(bob->mirror().get<Stats>(alices).has_value());
    EXPECT_TRUE(bob->mirror().get<Stats>(bobs).has_value());

    // Alice leaves and comes back with her resume key, within the grace: the same ship.
    const auto key = alice->welcome().resume_key;
    alice->close();
    alice.reset();
    ASSERT_TRUE(poll_all({bob.get()}, [&] { return server.clients() == 1; }, 5s));
    auto again = join(server.port(), "alice", key);
    ASSERT_EQ(again->welcome().client_id, alice_id);
    ASSERT_TRUE(again->poll_until([&] { return !ship_of(again->mirror(), alice_id).is_null(); }, 5s));
    EXPECT_EQ(ship_of(again->mirror(), alice_id), alices);
    const std::size_t ships = server.call([](ecsnet::server::server& s) {
        std::size_t n = 0;
        s.world().view<const Ship>().each([&](const Ship&) { ++n; });
        return n;
    });
    EXPECT_EQ(ships, 2U);
}

}  // namespace
