// Client-side prediction (shared/client/include/ecsnet/client/prediction.hpp) against a server
// world of the test's own: the same flight systems over the arena's components run on both
// sides, the server's states reach the client's mirror through the real encoder a few ticks
// late, as over a network with a round trip.
#include "ecsnet/client/prediction.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <stdexcept>
#include <vector>

#include "ecsnet/arena/components.hpp"
#include "ecsnet/arena/game.hpp"
#include "ecsnet/arena/predicted.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace prediction_test {

namespace protocol = ecsnet::protocol;
namespace ecs = ecsnet::ecs;
namespace rules = ecsnet::arena::rules;
using ecsnet::arena::Heading;
using ecsnet::arena::Pilot;
using ecsnet::arena::Position;
using ecsnet::arena::Velocity;
using ecsnet::client::misprediction;
using ecsnet::client::prediction;
using ecsnet::client::prediction_options;

constexpr double dt = 1.0 / 30.0;
constexpr float half = 2000.0F;

// The predicted systems, registered by the same function on both sides: a ship turns and
// thrusts by its Pilot, everything moves and bounces off the walls; with `quantize`, the state
// ends each tick on the wire's grid.
void add_flight(ecs::Scheduler& systems, bool quantize) {
    systems.add("steer", ecs::component_access{}.reads<Pilot>().writes<Heading, Velocity>(),
                [](ecs::SystemContext& ctx) {
                    const auto step = static_cast<float>(ctx.dt);
                    ctx.world.view<const Pilot, Heading, Velocity>().each(
                        [&](ecs::Entity, const Pilot& pilot, Heading& h, Velocity& v) {
                            const float a = pilot.turn * rules::ship_turn_rate * step;
                            const float x = h.x * std::cos(a) - h.y * std::sin(a);
                            const float y = h.x * std::sin(a) + h.y * std::cos(a);
                            const float length = std::hypot(x, y);
                            h = Heading{x / length, y / length};
                            v.x = (v.x + h.x * pilot.thrust * rules::ship_thrust * step) *
                                  (1.0F - rules::ship_drag * step);
                            v.y = (v.y + h.y * pilot.thrust * rules::ship_thrust * step) *
                                  (1.0F - rules::ship_drag * step);
                        });
                });
    systems.add("move", ecs::component_access{}.writes<Position, Velocity>(),
                [](ecs::SystemContext& ctx) {
                    const auto step = static_cast<float>(ctx.dt);
                    ctx.world.view<Position, Velocity>().each([&](ecs::Entity, Position& p, Velocity& v) {
                        p.x += v.x * step;
                        p.y += v.y * step;
                        if (std::abs(p.x) > half) {
                            p.x = std::clamp(p.x, -half, half);
                            v.x = -v.x;
                        }
                        if (std::abs(p.y) > half) {
                            p.y = std::clamp(p.y, -half, half);
                            v.y = -v.y;
                        }
                    });
                });
    if (quantize) {
        systems.add("quantize", ecs::component_access{}.writes<Position, Velocity, Heading>(),
                    [](ecs::SystemContext& ctx) {
                        ctx.world.view<Position, Velocity, Heading>().each(
                            [](ecs::Entity, Position& p, Velocity& v, Heading& h) {
                                p = protocol::quantized(p);
                                v = protocol::quantized(v);
                                h = protocol::quantized(h);
                            });
                    });
    }
}

// The input as the server gets it: through the wire's quantization.
protocol::component_set input_of(const Pilot& pilot) { return protocol::component_set{}.set(pilot); }

// A server of the test's own: one ship, the flight systems, a Delta per tick. With `gun`,
// the arena's own predicted systems (steer, gun, move, settle) and a ship that fires, its
// bullets gone after their lifetime (a server-side system the client does not run).
struct flight_server {
    explicit flight_server(bool quantize, Position start = {}, bool gun = false) {
        if (gun) {
            arena_gun(start);
            return;
        }
        types.add<Position>();
        types.add<Velocity>();
        types.add<Heading>();
        types.add<Pilot>();
        add_flight(systems, quantize);
        ship = world->create();
        world->emplace<Position>(ship, start);
        world->emplace<Velocity>(ship);
        world->emplace<Heading>(ship);
        world->emplace<Pilot>(ship);
        world->discard_changes();
    }

    void arena_gun(Position start) {
        namespace arena = ecsnet::arena;
        arena::register_components(types);
        arena::add_steer(systems);
        arena::add_gun(systems);
        arena::add_move(systems, 2 * half);
        arena::add_settle(systems);
        systems.add("expire", ecs::component_access{}.writes<arena::BulletLife>(), [](ecs::SystemContext& ctx) {
            ctx.world.view<arena::BulletLife>().each([&](ecs::Entity e, arena::BulletLife& life) {
                if ((life.left -= static_cast<float>(ctx.dt)) <= 0.0F) {
                    ctx.commands.destroy(e);
                }
            });
        });
        ship = world->create();
        world->emplace<Position>(ship, start);
        world->emplace<Velocity>(ship);
        world->emplace<Heading>(ship);
        world->emplace<Pilot>(ship);
        world->emplace<arena::Ship>(ship);
        world->emplace<protocol::Owner>(ship, protocol::Owner{7});
        world->emplace<arena::Stats>(ship, arena::Stats{0, rules::max_ammo, 0});
        world->emplace<arena::ShipTimers>(ship, arena::ShipTimers{0.0F, rules::reload_interval, 0.0F});
        world->discard_changes();
    }

    void join(protocol::mirror& mirror) {
        mirror.set_schema(types.types());
        for (const protocol::frame& f : encoder.encode_snapshot(*world, tick)) {
            ASSERT_TRUE(mirror.apply(*protocol::verify_server_frame(*f))) << mirror.error();
        }
        // The client plays owner 7 (the arena's ship): its owner-only Stats.
        if (const auto own = encoder.encode_owner_only_snapshot(*world, 7, tick)) {
            ASSERT_TRUE(mirror.apply(*protocol::verify_server_frame(**own))) << mirror.error();
        }
    }

    // The next tick: its input (the newest at or before it repeats), `before` (a change the
    // client cannot know), the systems, the delta into the mirror.
    void step(protocol::mirror& mirror, const std::function<void(ecs::World&)>& before = {}) {
        ++tick;
        if (const auto it = inputs.find(tick); it != inputs.end() && world->valid(ship)) {
            world->write<Pilot>(ship) = *it->second.get<Pilot>();
            applied_tick = tick;
        }
        if (before) {
            before(*world);
        }
        systems.set_tick(tick);
        (void)systems.run(*world);
        const auto changes = world->take_changes();
        const protocol::frame f = encoder.encode_delta(*world, changes, tick);
        ASSERT_TRUE(mirror.apply(*protocol::verify_server_frame(*f))) << mirror.error();
        for (const auto& own : encoder.encode_owner_only(*world, changes, tick)) {
            if (own.owner == 7) {
                ASSERT_TRUE(mirror.apply(*protocol::verify_server_frame(*own.bytes))) << mirror.error();
            }
        }
    }

    protocol::component_registry types;
    std::shared_ptr<ecs::World> world = ecs::World::make();
    ecs::Scheduler systems{dt};
    protocol::replication_encoder encoder{types};
    ecs::Entity ship;
    std::map<std::uint64_t, protocol::component_set> inputs;
    std::uint64_t tick = 0;
    std::uint64_t applied_tick = 0;  // the newest tick whose input was applied (InputAck)

    [[nodiscard]] protocol::input_ack ack() const { return {tick, applied_tick, 0, 0, 0}; }
};

void declare(prediction& p, bool quantize) {
    p.predict_smoothed<Position>().predict<Velocity>().predict<Heading>().input<Pilot>();
    add_flight(p.systems(), quantize);
}

// A recorded player: a new control every 5 to 40 ticks.
struct recorded_player {
    explicit recorded_player(std::uint64_t seed) : rng{seed} {}
    Pilot at(std::uint64_t) {
        if (left-- == 0) {
            left = std::uniform_int_distribution<int>{5, 40}(rng);
            const float thrusts[] = {0.0F, 0.5F, 1.0F, 1.0F};
            const float turns[] = {-1.0F, -0.5F, 0.0F, 0.0F, 0.25F, 1.0F};
            current = Pilot{thrusts[std::uniform_int_distribution<int>{0, 3}(rng)],
                            turns[std::uniform_int_distribution<int>{0, 5}(rng)], false, false};
        }
        return current;
    }
    std::mt19937_64 rng;
    int left = 0;
    Pilot current{};
};

// The replay's time budget depends on the machine's load: only the test of it keeps it.
prediction_options untimed(prediction_options options) {
    if (options.replay_budget_time == prediction_options{}.replay_budget_time) {
        options.replay_budget_time = std::chrono::hours{1};
    }
    return options;
}

// Client and server played tick by tick: the client predicts input tick t at once, the server
// runs t - latency and its state reaches the client in the same frame (a round trip of
// `latency` ticks).
struct match {
    match(prediction_options options, std::uint64_t latency_ticks, Position start = {},
          bool quantize = false, bool gun = false)
        : server{quantize, start, gun}, client{dt, untimed(options)}, latency{latency_ticks} {
        server.join(mirror);
        if (gun) {
            ecsnet::arena::predict(client, 2 * half);
        } else {
            declare(client, quantize);
        }
        (void)client.track(server.ship, mirror);
        client.on_misprediction = [this](const misprediction& m) { mispredicted.push_back(m); };
    }

    void frame(const Pilot& pilot, const std::function<void(ecs::World&)>& server_change = {}) {
        ++now;
        const protocol::component_set input = input_of(pilot);
        client.set_input(now, server.ship, input);
        client.advance_to(now);
        server.inputs[now] = input;
        if (now > latency) {
            server.step(mirror, server_change);
            if (acknowledged) {
                client.acknowledge(server.ack());  // the tick's last frame
            }
            client.reconcile(server.tick, mirror);
        }
        client.decay(std::chrono::duration<double>(dt));
    }

    flight_server server;
    protocol::mirror mirror;
    prediction client;
    std::uint64_t latency;
    std::uint64_t now = 0;
    std::vector<misprediction> mispredicted;
    bool acknowledged = false;  // the client hears the server's InputAcks
};

TEST(Prediction, RefusesNonsenseOptions) {
    EXPECT_THROW((prediction{dt, {.history_ticks = 1}}), std::invalid_argument);
    EXPECT_THROW((prediction{dt, {.replay_budget_ticks = 0}}), std::invalid_argument);
    EXPECT_THROW((prediction{dt, {.snap_distance = -1.0}}), std::invalid_argument);
    EXPECT_THROW((prediction{0.0}), std::invalid_argument) << "the scheduler's dt";
}

TEST(Prediction, TypesAreDeclaredBeforeTheFirstEntity) {
    flight_server server{false};
    protocol::mirror mirror;
    server.join(mirror);
    prediction p{dt};
    declare(p, false);
    const ecs::Entity local = p.track(server.ship, mirror);
    EXPECT_EQ(p.track(server.ship, mirror), local) << "tracking twice is the same entity";
    EXPECT_EQ(p.world().get<Pilot>(local), Pilot{}) << "an input type starts at rest";
    EXPECT_THROW(p.predict<Heading>(), std::logic_error);
    EXPECT_THROW(p.track(ecs::Entity{999, 1}, mirror), std::invalid_argument);
}

TEST(Prediction, RecordedInputsGiveTheServersStatesForTenThousandTicks) {
    // Compared exactly (no tolerance): what the client predicted for each of the server's
    // ticks is the server's state on the wire's grid, bit for bit: the same code, the same
    // (quantized) inputs, the same start.
    match m{{.tolerance_steps = 0}, 6};
    recorded_player player{7};
    double travelled = 0;
    for (int i = 0; i < 10'000; ++i) {
        m.frame(player.at(m.now + 1));
        const Velocity v = m.server.world->get<Velocity>(m.server.ship);
        travelled += std::hypot(v.x, v.y) * dt;
    }
    EXPECT_EQ(m.client.stats().checks, 10'000U - 6U) << "every server tick was compared";
    EXPECT_EQ(m.client.stats().mispredictions, 0U)
        << "first at tick " << (m.mispredicted.empty() ? 0 : m.mispredicted[0].tick);
    EXPECT_EQ(m.client.stats().ticks_replayed, 0U);
    EXPECT_EQ(m.client.stats().ticks_predicted, 10'000U);
    EXPECT_GT(travelled, 10'000.0) << "the ship flew: turns, thrust, drag, walls";
}

TEST(Prediction, QuantizationAloneIsNoMisprediction) {
    // The server starts at 0.3, the client from the wire's 0.3125: the same flight keeps them
    // 0.0125 apart, less than a step of 1/16. Compared exactly, the roundings disagree now and
    // then; within one step they never do.
    const Position start{0.3F, -0.3F};
    for (const std::uint32_t tolerance : {0U, 1U}) {
        match m{{.tolerance_steps = tolerance}, 4, start};
        recorded_player player{11};
        for (int i = 0; i < 2'000; ++i) {
            m.frame(player.at(m.now + 1));
        }
        if (tolerance == 0) {
            EXPECT_GT(m.client.stats().mispredictions, 0U);
        } else {
            EXPECT_EQ(m.client.stats().mispredictions, 0U);
        }
    }
}

TEST(Prediction, AServerSideChangeIsCorrectedWithoutASnapAndTheOffsetDecays) {
    // The flight quantizes its state each tick: restarting from the server's state restarts
    // from exactly what the server goes on from, so even an exact comparison holds after.
    match m{{.tolerance_steps = 0}, 6, {}, true};
    recorded_player player{3};
    for (int i = 0; i < 300; ++i) {
        m.frame(player.at(m.now + 1));
    }
    ASSERT_EQ(m.client.stats().mispredictions, 0U);
    // A collision the client cannot know: the server pushes the ship at its next tick.
    const std::uint64_t pushed_at = m.server.tick + 1;
    Position shown = *m.client.rendered<Position>(m.server.ship);
    m.frame(player.at(m.now + 1), [&](ecs::World& w) { w.write<Velocity>(m.server.ship).x += 60.0F; });
    ASSERT_EQ(m.client.stats().mispredictions, 1U);
    EXPECT_EQ(m.mispredicted.at(0).tick, pushed_at);
    EXPECT_EQ(m.mispredicted.at(0).type, "position");
    EXPECT_NEAR(m.mispredicted.at(0).error, 60.0 * dt, 0.1);
    EXPECT_EQ(m.client.stats().ticks_replayed, 6U) << "the ticks after the server's, up to now";
    EXPECT_EQ(m.client.stats().snaps, 0U);

    // What is rendered never jumps: each frame moves at most a frame at the top speed plus a
    // little; the offset decays under a tenth of a unit within a second.
    const double max_step = rules::ship_max_speed * dt + 1.0;
    double offset_at_correction = m.client.offset<Position>(m.server.ship);
    EXPECT_GT(offset_at_correction, 60.0 * dt) << "the correction moved the prediction";
    int frames = 0;
    for (; frames < 60; ++frames) {
        const Position now = *m.client.rendered<Position>(m.server.ship);
        EXPECT_LE(std::hypot(now.x - shown.x, now.y - shown.y), max_step) << "frame " << frames;
        shown = now;
        if (m.client.offset<Position>(m.server.ship) < 0.1) {
            break;
        }
        m.frame(player.at(m.now + 1));
    }
    EXPECT_LT(frames, 30) << "the offset decays with a 100 ms half-life";
    // The replay started from the server's state: the prediction holds again.
    for (int i = 0; i < 300; ++i) {
        m.frame(player.at(m.now + 1));
    }
    EXPECT_EQ(m.client.stats().mispredictions, 1U) << "the prediction holds again, exactly";
}

TEST(Prediction, WithoutAQuantizedStateAnExactComparisonMispredictsAgainAfterACorrection) {
    // The same correction, the flight not quantizing: the client restarts from the wire's
    // rounding of a state the server keeps exact, so compared exactly their roundings differ
    // again now and then, each time a (tiny) correction. docs/PREDICTION.md: why a predicted
    // game quantizes its state, and why the comparison has a tolerance.
    match m{{.tolerance_steps = 0}, 6};
    recorded_player player{3};
    for (int i = 0; i < 300; ++i) {
        m.frame(player.at(m.now + 1));
    }
    m.frame(player.at(m.now + 1), [&](ecs::World& w) { w.write<Velocity>(m.server.ship).x += 60.0F; });
    for (int i = 0; i < 600; ++i) {
        m.frame(player.at(m.now + 1));
    }
    EXPECT_GT(m.client.stats().mispredictions, 1U);
    for (std::size_t i = 1; i < m.mispredicted.size(); ++i) {
        EXPECT_LT(m.mispredicted[i].error, 0.2) << "a rounding, not a wrong prediction";
    }
    EXPECT_EQ(m.client.stats().snaps, 0U);
}

TEST(Prediction, AJumpPastTheSnapDistanceSnaps) {
    match m{{.snap_distance = 20.0}, 4};
    for (int i = 0; i < 50; ++i) {
        m.frame(Pilot{});
    }
    m.frame(Pilot{}, [&](ecs::World& w) { w.write<Position>(m.server.ship).x += 100.0F; });
    EXPECT_EQ(m.client.stats().mispredictions, 1U);
    EXPECT_EQ(m.client.stats().snaps, 1U);
    EXPECT_EQ(m.client.offset<Position>(m.server.ship), 0.0);
    EXPECT_NEAR(m.client.rendered<Position>(m.server.ship)->x, 100.0F, 0.1F);
}

TEST(Prediction, AReplayPastItsBudgetGoesOnInTheNextCalls) {
    match m{{.replay_budget_ticks = 4}, 10};
    recorded_player player{5};
    for (int i = 0; i < 100; ++i) {
        m.frame(player.at(m.now + 1));
    }
    m.frame(player.at(m.now + 1), [&](ecs::World& w) { w.write<Position>(m.server.ship).y += 5.0F; });
    // 10 ticks to replay, 4 per call: the world waits behind, what is shown is the previous
    // prediction.
    EXPECT_TRUE(m.client.replaying());
    EXPECT_EQ(m.client.stats().ticks_replayed, 4U);
    EXPECT_EQ(m.client.stats().replays_deferred, 1U);
    const Position shown = *m.client.predicted<Position>(m.server.ship);
    m.client.advance_to(m.now);  // a frame without a new tick: the replay goes on
    EXPECT_EQ(m.client.stats().ticks_replayed, 8U);
    m.client.advance_to(m.now);
    EXPECT_FALSE(m.client.replaying());
    EXPECT_EQ(m.client.world_tick(), m.client.tick());
    EXPECT_EQ(m.client.stats().ticks_replayed, 10U);
    const Position corrected = *m.client.predicted<Position>(m.server.ship);
    EXPECT_NEAR(corrected.y - shown.y, 5.0F, 0.2F) << "shown until then: the prediction before";
}

TEST(Prediction, AReplayPastItsTimeBudgetRunsOneTickPerCall) {
    // No time at all: every call still replays one tick, so a replay always ends.
    match m{{.replay_budget_time = std::chrono::microseconds{0}}, 5};
    for (int i = 0; i < 20; ++i) {
        m.frame(Pilot{1.0F, 0.0F, false, false});
    }
    m.frame(Pilot{}, [&](ecs::World& w) { w.write<Position>(m.server.ship).x += 3.0F; });
    EXPECT_EQ(m.client.stats().ticks_replayed, 1U);
    for (std::uint64_t calls = 2; calls <= 5; ++calls) {
        EXPECT_TRUE(m.client.replaying());
        m.client.advance_to(m.now);
        EXPECT_EQ(m.client.stats().ticks_replayed, calls);
    }
    EXPECT_FALSE(m.client.replaying());
}

TEST(Prediction, AServerStateOlderThanTheHistoryIsAdoptedAndPredictedAgain) {
    match m{{.history_ticks = 8}, 12};
    for (int i = 0; i < 40; ++i) {
        m.frame(Pilot{1.0F, 0.25F, false, false});
    }
    EXPECT_EQ(m.client.stats().checks, 0U) << "every server tick was older than the history";
    EXPECT_GT(m.client.stats().too_old, 0U);
    EXPECT_FALSE(m.client.replaying());
    EXPECT_EQ(m.client.world_tick(), m.now);
}

TEST(Prediction, AnEntityTheServerDestroyedIsNoLongerPredicted) {
    match m{{}, 3};
    for (int i = 0; i < 10; ++i) {
        m.frame(Pilot{});
    }
    const ecs::Entity local = m.client.local(m.server.ship);
    ASSERT_TRUE(m.client.world().valid(local));
    m.frame(Pilot{}, [&](ecs::World& w) { w.destroy(m.server.ship); });
    EXPECT_FALSE(m.client.tracks(m.server.ship));
    EXPECT_FALSE(m.client.world().valid(local));
    EXPECT_FALSE(m.client.predicted<Position>(m.server.ship).has_value());
    EXPECT_NO_THROW(m.frame(Pilot{}));
}

TEST(Prediction, InputForAPastTickIsRefused) {
    match m{{}, 3};
    m.frame(Pilot{});
    EXPECT_THROW(m.client.set_input(1, m.server.ship, input_of(Pilot{})), std::invalid_argument);
}

// ---- predicted spawns: the arena's gun on both sides -------------------------------------------

using ecsnet::arena::Bullet;
using ecsnet::client::predicted_spawn;
using ecsnet::client::spawn_refusal;

// Fire held 20 ticks in 30, the ship turning and thrusting now and then: a bullet every 6
// ticks while it fires, until the ammo runs out and reloads.
Pilot firing_at(std::uint64_t tick) {
    const bool fire = tick % 30 < 20;
    const float turn = (tick / 45) % 3 == 0 ? 0.5F : 0.0F;
    const float thrust = (tick / 70) % 2 == 0 ? 1.0F : 0.0F;
    return Pilot{thrust, turn, fire, false};
}

// The spawns' fates as the events tell them, and the checks made after every frame.
struct spawn_watch {
    explicit spawn_watch(match& m) : m{m} {
        m.client.on_spawn_matched = [this](const predicted_spawn& s) {
            EXPECT_FALSE(s.server.is_null());
            EXPECT_TRUE(matched.insert({s.server.index(), s.server.version()}).second)
                << "a server entity matched twice";
        };
        m.client.on_spawn_refused = [this](const predicted_spawn& s, spawn_refusal reason) {
            refused.push_back({s, reason});
        };
    }
    // Never duplicated: no two bullets of the prediction share a key, and a pending spawn's
    // key is not among the mirror's bullets (the server's entity replaced it as it came).
    void check() {
        std::vector<Bullet> keys;
        m.client.world().view<const Bullet>().each([&](ecs::Entity, const Bullet& b) { keys.push_back(b); });
        for (std::size_t i = 0; i < keys.size(); ++i) {
            for (std::size_t j = i + 1; j < keys.size(); ++j) {
                ASSERT_FALSE(keys[i] == keys[j]) << "tick " << m.now << ": a bullet predicted twice";
            }
        }
        for (const predicted_spawn& s : m.client.spawns_pending()) {
            const std::optional<Bullet> key = m.client.rendered<Bullet>(s);
            if (!key) {
                continue;  // a replay took it back: shown as before until it catches up
            }
            m.mirror.each([&](ecs::Entity e) {
                const std::optional<Bullet> b = m.mirror.get<Bullet>(e);
                EXPECT_FALSE(b && *b == *key) << "tick " << m.now << ": shown twice";
            });
        }
        m.server.world->view<const Bullet>().each([&](ecs::Entity, const Bullet& b) {
            server_bullets.insert({b.tick, b.sequence});
        });
    }
    match& m;
    std::set<std::pair<std::uint32_t, std::uint32_t>> matched;
    std::vector<std::pair<predicted_spawn, spawn_refusal>> refused;
    std::set<std::pair<std::uint32_t, std::uint16_t>> server_bullets;  // every one it fired
};

TEST(PredictedSpawns, BulletsAreMatchedWithTheServersOneToOneThroughCorrections) {
    // Compared exactly: the bullets end each tick on the wire's grid too (settle). The server
    // pushes the ship now and then (a collision the client cannot know): the replays that
    // follow make the bullets fired since again, as the same spawns.
    match m{{.tolerance_steps = 0}, 6, {}, false, true};
    spawn_watch watch{m};
    int pushes = 0;
    for (int i = 0; i < 1'200; ++i) {
        const bool push = i > 0 && i % 100 == 0;
        pushes += push ? 1 : 0;
        m.frame(firing_at(m.now + 1), [&](ecs::World& w) {
            if (push) {
                w.write<Velocity>(m.server.ship).x += 30.0F;
            }
        });
        watch.check();
        if (testing::Test::HasFatalFailure()) {
            return;
        }
    }
    for (int i = 0; i < 40; ++i) {  // the last ones arrive
        m.frame(Pilot{});
        watch.check();
    }
    const auto& stats = m.client.stats();
    EXPECT_GT(stats.spawns_predicted, 100U) << "the gun fired";
    EXPECT_EQ(stats.spawns_matched, stats.spawns_predicted) << "every one matched";
    EXPECT_EQ(stats.spawns_refused, 0U);
    EXPECT_EQ(watch.server_bullets.size(), stats.spawns_matched) << "one to one";
    EXPECT_EQ(watch.matched.size(), stats.spawns_matched);
    EXPECT_TRUE(m.client.spawns_pending().empty());
    EXPECT_EQ(stats.mispredictions, static_cast<std::uint64_t>(pushes))
        << "the pushes alone: the bullets agreed with the server's at every tick";
    EXPECT_GT(stats.ticks_replayed, 0U);
}

TEST(PredictedSpawns, ARefusedSpawnDisappearsWithACorrectionEvent) {
    // The server empties the gun and stops its reload (a rule the client cannot know): the
    // shots the client predicted after that are refused, and their bullets leave the
    // prediction. (The client's own reload clock goes on: it predicts a shot again each
    // reload, refused in turn.)
    match m{{}, 10, {}, false, true};
    spawn_watch watch{m};
    for (int i = 0; i < 60; ++i) {
        m.frame(Pilot{0.0F, 0.0F, true, false});
        watch.check();
    }
    const std::uint64_t predicted_before = m.client.stats().spawns_predicted;
    ASSERT_GT(predicted_before, 5U);
    m.frame(Pilot{0.0F, 0.0F, true, false}, [&](ecs::World& w) {
        w.write<ecsnet::arena::Stats>(m.server.ship).ammo = 0;
        w.write<ecsnet::arena::ShipTimers>(m.server.ship).reload = 100.0F;  // and no reload
    });
    for (int i = 0; i < 40; ++i) {
        m.frame(Pilot{0.0F, 0.0F, true, false});
        watch.check();
    }
    const auto& stats = m.client.stats();
    ASSERT_FALSE(watch.refused.empty());
    EXPECT_EQ(stats.spawns_refused, watch.refused.size());
    EXPECT_TRUE(std::any_of(watch.refused.begin(), watch.refused.end(),
                            [](const auto& r) { return r.second == spawn_refusal::undone; }))
        << "the replay after the correction did not fire them again";
    const std::size_t pending = m.client.spawns_pending().size();
    EXPECT_LE(pending, 2U) << "the latest, made within the round trip";
    EXPECT_EQ(stats.spawns_predicted, stats.spawns_matched + stats.spawns_refused + pending)
        << "each spawn matched, refused or still within its wait";
    std::size_t bullets = 0;
    m.client.world().view<const Bullet>().each([&](ecs::Entity, const Bullet&) { ++bullets; });
    std::size_t server_bullets = 0;
    m.server.world->view<const Bullet>().each([&](ecs::Entity, const Bullet&) { ++server_bullets; });
    EXPECT_EQ(server_bullets, 0U) << "the last ones the server fired have expired";
    EXPECT_EQ(bullets, pending) << "the refused ones left the prediction";
    EXPECT_EQ(to_string(spawn_refusal::undone), std::string{"undone"});
}

// The trigger's first four ticks reach the server late: it runs them on the input before (the
// server drops a late input and repeats the last one), and its gun starts four ticks after the
// prediction's. The ammo is compared, but the gun's cooldown and reload are kept types, never
// sent: a correction takes the server's ammo and keeps the client's clocks, four ticks out of
// step, so every shot mispredicts again, for good. The InputAcks tell which input each tick ran
// on: the prediction takes the server's and runs again from the tick before, clocks included.
TEST(PredictedSpawns, InputsThatReachedTheServerLateAreCorrectedFromItsAcksKeptClocksIncluded) {
    std::uint64_t undone = 0;
    const auto play = [&undone](bool acknowledged) {
        undone = 0;
        match m{{}, 6, {}, false, true};
        m.acknowledged = acknowledged;
        m.client.on_spawn_refused = [&undone](const predicted_spawn&, spawn_refusal why) {
            undone += why == spawn_refusal::undone ? 1 : 0;
        };
        for (int i = 0; i < 20; ++i) {
            m.frame(Pilot{});
        }
        const std::uint64_t pulled = m.now + 1;
        for (int i = 0; i < 150; ++i) {
            m.frame(Pilot{0.0F, 0.0F, true, false});
            if (m.now < pulled + 4) {
                m.server.inputs.erase(m.now);  // late at the server
            }
        }
        return m.client.stats();
    };
    const auto heard = play(true);
    EXPECT_EQ(heard.inputs_corrected, 4U) << "the four late ticks";
    EXPECT_EQ(heard.mispredictions, 0U) << "corrected before the ticks were compared";
    EXPECT_GT(heard.spawns_matched, 15U) << "the shots since are at the server's ticks";
    // Each ack tells of one late tick as the server runs it: the rerun then fires a tick later,
    // which the next ack may undo again. Only such shots are refused, two per tick at most.
    EXPECT_EQ(heard.spawns_refused, undone) << "all undone by a rerun";
    EXPECT_LE(heard.spawns_refused, 2 * heard.inputs_corrected);

    const auto deaf = play(false);
    EXPECT_EQ(deaf.inputs_corrected, 0U);
    EXPECT_GT(deaf.mispredictions, 15U) << "without the acks, the clocks stay out of step";
    EXPECT_LT(deaf.spawns_matched, 3U);
}

// A client tracks its ship at the mirror's tick 10 and first predicts at its input tick, 16,
// the trigger held from there. The server's tick 11 arrives next: the prediction holds records
// from tick 10 on (the state as tracked), so it compares; started at 16, it would have had no
// record of 11, adopted the server's state there and replayed on with the gun's clocks (kept
// types) as the tick-16 shot had left them, out of step with the server's for good.
TEST(PredictedSpawns, TheFirstPredictionRunsFromTheTrackedTickAndTheGunKeepsTheServersTime) {
    flight_server server{false, {}, true};
    protocol::mirror mirror;
    server.join(mirror);
    for (int i = 0; i < 10; ++i) {
        server.step(mirror);
    }
    prediction client{dt, untimed({})};
    ecsnet::arena::predict(client, 2 * half);
    (void)client.track(server.ship, mirror);
    constexpr std::uint64_t lead = 6;
    const protocol::component_set fire = input_of(Pilot{0.0F, 0.0F, true, false});
    for (std::uint64_t now = server.tick + lead; now < 170; ++now) {
        client.set_input(now, server.ship, fire);
        server.inputs[now] = fire;
        client.advance_to(now);
        server.step(mirror);
        client.reconcile(server.tick, mirror);
    }
    const auto& stats = client.stats();
    EXPECT_EQ(stats.too_old, 0U) << "the first server tick compared had a record";
    EXPECT_EQ(stats.mispredictions, 0U) << "the ammo agreed at every tick";
    EXPECT_GT(stats.spawns_matched, 15U);
    EXPECT_EQ(stats.spawns_refused, 0U) << "every shot at the server's tick";
}

// The client stalls while firing (a long frame, a tab in the background): the server runs 10
// ticks meanwhile, on the last input, and the first state the client hears after it is 4 ticks
// past its prediction. The prediction runs up to that tick on the last input, as the server
// did, and compares there; adopting the server's state instead would have left the gun's clocks
// (kept types) 4 ticks behind the server's for good.
TEST(PredictedSpawns, AServerAheadOfAStalledPredictionIsCaughtUpWithNotAdopted) {
    match m{{}, 6, {}, false, true};
    const Pilot fire{0.0F, 0.0F, true, false};
    for (int i = 0; i < 40; ++i) {
        m.frame(fire);
    }
    for (int i = 0; i < 10; ++i) {
        m.server.step(m.mirror);  // the client hears nothing, predicts nothing
    }
    ASSERT_GT(m.server.tick, m.client.tick());
    m.client.reconcile(m.server.tick, m.mirror);  // its next frame: what arrived first
    EXPECT_EQ(m.client.stats().adopted, 0U);
    EXPECT_EQ(m.client.tick(), m.server.tick);
    m.now = m.server.tick + m.latency - 1;
    for (int i = 0; i < 120; ++i) {
        m.frame(fire);
    }
    const auto& stats = m.client.stats();
    EXPECT_EQ(stats.mispredictions, 0U) << "the ammo agreed at every tick";
    EXPECT_EQ(stats.spawns_refused, 0U) << "every shot at the server's tick";
    EXPECT_GT(stats.spawns_matched, 20U);
}

// The first input (the trigger, at tick 20) reaches the server after tick 20 ran, the next one
// in time for tick 21. The server acks every tick from the first Input it got, so no ack names
// tick 20: the first, tick 21's, says 21 ran on its own input and that one input came late.
// Every input set for a tick before the first ack came late: tick 20 ran without the trigger.
TEST(PredictedSpawns, TheInputsBeforeTheFirstAckCameLateAndTheServerRanWithoutThem) {
    const auto play = [](bool first_ack_rule) {
        flight_server server{false, {}, true};
        protocol::mirror mirror;
        server.join(mirror);
        prediction client{dt, untimed({})};
        ecsnet::arena::predict(client, 2 * half);
        (void)client.track(server.ship, mirror);
        constexpr std::uint64_t lead = 6;
        constexpr std::uint64_t pulled = 20;
        const protocol::component_set fire = input_of(Pilot{0.0F, 0.0F, true, false});
        for (std::uint64_t now = 1; now < 200; ++now) {
            if (now >= pulled) {
                client.set_input(now, server.ship, fire);
                if (now > pulled) {
                    server.inputs[now] = fire;
                }
            }
            client.advance_to(now);
            if (now > lead) {
                server.step(mirror);
                if (server.tick > pulled) {
                    client.acknowledge(
                        {server.tick, server.applied_tick, 0, first_ack_rule ? 1U : 0U, 0});
                }
                client.reconcile(server.tick, mirror);
            }
        }
        return client.stats();
    };
    const auto stats = play(true);
    EXPECT_EQ(stats.inputs_corrected, 1U) << "tick 20's";
    // Tick 20 itself is compared before any ack tells of it (its frames have none); then the ack
    // of 21 corrects its input, and the gun keeps the server's time from there on.
    EXPECT_EQ(stats.mispredictions, 1U) << "tick 20 alone";
    EXPECT_LE(stats.spawns_refused, 2U) << "the shot at tick 20, and the one its correction made";
    EXPECT_GT(stats.spawns_matched, 20U);

    const auto unknown = play(false);  // an ack that counts no late input tells nothing of them
    EXPECT_EQ(unknown.inputs_corrected, 0U);
    EXPECT_GT(unknown.mispredictions, 20U) << "the gun a tick out of step with the server's";
}

}  // namespace prediction_test
