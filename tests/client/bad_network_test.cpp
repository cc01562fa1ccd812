// The session SDK playing the arena through a bad network: a latency_proxy delays every byte by
// 100 ms +- 20 ms each way (a 200 ms round trip) between the sessions and an in-process
// arena-server. Bots fly the ships; the game loop runs at 60 frames per second, as a game's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "test_server.hpp"
#include "ecsnet/arena/bot.hpp"
#include "ecsnet/arena/game.hpp"
#include "ecsnet/client/session.hpp"
#include "latency_proxy.hpp"

namespace bad_network_test {

namespace arena = ecsnet::arena;
namespace client = ecsnet::client;
using ecsnet::ecs::Entity;
using ecsnet::test::latency_proxy;
using ecsnet::test::test_server;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr double tick_rate = 30.0;
constexpr auto frame_time = 16ms;  // about 60 frames per second
// A move larger than this within one server tick is a jump (a respawn), not a flight: the
// interpolation snaps instead of sweeping the ship across the map.
constexpr float snap_distance = 100.0F;

ecsnet::server::server_config arena_config() {
    ecsnet::server::server_config c = ecsnet::test::local_server_config(tick_rate);
    c.reconnect_grace = 30s;
    return c;
}

arena::settings small_arena() {
    arena::settings s;
    s.size = 1600.0F;  // a view of 700 units sees most of it: many asteroids to watch
    s.asteroids = 40;
    s.seed = 5;
    return s;
}

// A player: its session through the proxy and the bot that flies its ship.
struct player {
    explicit player(std::uint16_t port, bool network_thread = false) {
        client::session_options o;
        o.connect.port = port;
        o.connect.name = "bot";
        o.connect.timeout = 10s;
        o.network_thread = network_thread;
        o.interpolation_options.snap_distance = snap_distance;
        session = std::make_unique<client::session>(o);
    }
    // One frame of the game loop: what arrived, then the bot's controls.
    void frame() {
        session->update();
        if (flying && session->state() == client::session_state::joined) {
            if (const auto input = pilot.play(session->mirror(), session->client_id())) {
                session->set_input(pilot.ship(), *input);
            }
        }
    }
    std::unique_ptr<client::session> session;
    arena::bot pilot;
    bool flying = true;  // the bot sets the controls each frame
};

// Runs the game loop of `players` for `duration` at most, until done() holds; fn after each
// frame. Returns done().
bool play(std::vector<player*> players, std::chrono::milliseconds duration,
          const std::function<bool()>& done = [] { return false; },
          const std::function<void()>& after_frame = [] {}) {
    const auto deadline = clock_type::now() + duration;
    while (clock_type::now() < deadline) {
        for (player* p : players) {
            p->frame();
        }
        after_frame();
        if (done()) {
            return true;
        }
        std::this_thread::sleep_for(frame_time);
    }
    return done();
}

class BadNetwork : public testing::Test {
protected:
    BadNetwork()
        : server_{arena_config(), arena::game(small_arena())},
          proxy_{{.target_port = server_.port(), .latency = 100ms, .jitter = 20ms, .seed = 3}} {}

    bool joined_with_ship(player& p, std::chrono::milliseconds within = 15s) {
        return play({&p}, within, [&] {
            return p.session->state() == client::session_state::joined && !p.pilot.ship().is_null();
        });
    }

    test_server server_;
    latency_proxy proxy_;
};

TEST_F(BadNetwork, EveryInputTickIsAppliedOrCountedLateAndTheAckAdvances) {
    player alice{proxy_.port()};
    ASSERT_TRUE(joined_with_ship(alice)) << alice.session->closed_reason();
    const Entity ship = alice.pilot.ship();
    const auto start = alice.session->mirror().get<arena::Position>(ship);
    ASSERT_TRUE(start.has_value());

    play({&alice}, 1s);
    const std::uint64_t first_ack = alice.session->acked_input_tick();
    play({&alice}, 3s);
    EXPECT_GT(alice.session->acked_input_tick(), first_ack + 30) << "the ack did not advance";
    const auto later = alice.session->mirror().get<arena::Position>(ship);
    ASSERT_TRUE(later.has_value());
    EXPECT_NE(*later, *start) << "the bot's input did not move the ship";

    // Stop sending; once the server has run a second past the last stamped tick (the last
    // Input has arrived by then, 120 ms at most after it left), every tick sent was either
    // applied at its tick or counted late: none was lost or applied twice.
    alice.flying = false;
    alice.session->clear_input();
    const std::uint64_t last = alice.session->last_input_tick();
    ASSERT_TRUE(play({&alice}, 10s, [&] { return server_.tick() > last + 30; }));
    EXPECT_EQ(alice.session->last_input_tick(), last) << "input went on after clear_input()";
    const auto stats = server_.stats();
    const auto sent = alice.session->stats().input_ticks_sent;
    EXPECT_EQ(stats.inputs_applied + stats.inputs_late, sent)
        << "applied " << stats.inputs_applied << ", late " << stats.inputs_late << ", repeated "
        << stats.inputs_repeated << ", frames sent " << alice.session->stats().input_frames_sent
        << ", last stamped " << last << ", server tick " << server_.tick() << ", acked "
        << alice.session->acked_input_tick();
    EXPECT_GT(stats.inputs_applied, sent / 2) << "most inputs must arrive in time";
    EXPECT_EQ(stats.inputs_refused, 0U);
}

TEST_F(BadNetwork, InterpolatedPositionsNeverJumpFurtherThanTheirSpeedExceptOnASnap) {
    player alice{proxy_.port()};
    player bob{proxy_.port(), /*network_thread=*/true};
    ASSERT_TRUE(joined_with_ship(alice)) << alice.session->closed_reason();
    ASSERT_TRUE(joined_with_ship(bob)) << bob.session->closed_reason();

    struct seen {
        arena::Position at;
        double render_tick;
    };
    std::unordered_map<std::uint32_t, seen> last;  // by entity index
    auto& s = *alice.session;
    s.events().spawned = [&](Entity e) { last.erase(e.index()); };
    s.events().entered = [&](Entity e) { last.erase(e.index()); };
    std::size_t samples = 0;
    std::size_t snaps = 0;
    float worst_excess = 0.0F;
    std::string worst;
    const auto check = [&] {
        const double r = s.render_tick();
        s.mirror().each([&](Entity e) {
            const auto at = s.sample<arena::Position>(e);
            if (!at) {
                return;
            }
            const auto it = last.find(e.index());
            if (it != last.end()) {
                const double ticks = r - it->second.render_tick;
                const float speed = s.mirror().get<arena::Ship>(e)
                                        ? arena::rules::ship_max_speed
                                        : [&] {
                                              const auto v = s.mirror().get<arena::Velocity>(e);
                                              return v ? std::hypot(v->x, v->y) : 0.0F;
                                          }();
                // Quantized to 1/16: two roundings, and float arithmetic, are allowed.
                const float bound = speed * static_cast<float>(ticks / tick_rate) + 0.25F;
                const float moved =
                    std::hypot(at->x - it->second.at.x, at->y - it->second.at.y);
                ++samples;
                if (moved > snap_distance - bound) {
                    ++snaps;  // a jump: the interpolation snapped
                } else if (moved - bound > worst_excess) {
                    worst_excess = moved - bound;
                    worst = "entity " + std::to_string(e.index()) + " moved " +
                            std::to_string(moved) + " in " + std::to_string(ticks) +
                            " ticks at speed " + std::to_string(speed);
                }
            }
            last[e.index()] = seen{*at, r};
        });
    };
    play({&alice, &bob}, 6s, [] { return false; }, check);
    EXPECT_GT(samples, 1000U) << "too little was watched to say anything";
    EXPECT_EQ(worst_excess, 0.0F) << worst;
    EXPECT_LT(snaps, samples / 100) << "snaps are for respawns, not for flights";
    // Bob's ship is a remote entity Alice watched move, not only her own and the rocks.
    EXPECT_TRUE(s.mirror().contains(bob.pilot.ship()));
}

TEST_F(BadNetwork, TheSessionRidesOutATwoSecondStall) {
    player alice{proxy_.port()};
    ASSERT_TRUE(joined_with_ship(alice)) << alice.session->closed_reason();
    int disconnects = 0;
    alice.session->events().disconnected = [&](const std::string&, bool) { ++disconnects; };
    play({&alice}, 1s);
    const std::uint64_t before = alice.session->acked_input_tick();
    proxy_.stall(2s);
    play({&alice}, 2s);
    ASSERT_TRUE(play({&alice}, 10s, [&] {
        return alice.session->acked_input_tick() > before + 30;
    })) << "the input stream did not recover after the stall";
    EXPECT_EQ(disconnects, 0);
    EXPECT_EQ(alice.session->state(), client::session_state::joined);
    EXPECT_EQ(alice.session->stats().reconnects, 0U);
}

TEST_F(BadNetwork, AReconnectKeepsTheShip) {
    player alice{proxy_.port()};
    ASSERT_TRUE(joined_with_ship(alice)) << alice.session->closed_reason();
    const Entity ship = alice.pilot.ship();
    const std::uint32_t id = alice.session->client_id();
    int reconnected = 0;
    alice.session->events().reconnected = [&](const ecsnet::protocol::welcome&) { ++reconnected; };
    play({&alice}, 1s);

    proxy_.drop();
    ASSERT_TRUE(play({&alice}, 15s, [&] { return reconnected == 1; }))
        << "no reconnect: " << alice.session->closed_reason();
    EXPECT_EQ(alice.session->client_id(), id);
    // Under interest management the new snapshot holds the view as the byte budget allows:
    // the ship enters with it or in the next ticks.
    EXPECT_TRUE(play({&alice}, 5s, [&] { return alice.session->mirror().contains(ship); }))
        << "the ship was lost with the connection";
    const std::uint64_t ack = alice.session->acked_input_tick();
    ASSERT_TRUE(play({&alice}, 10s, [&] { return alice.session->acked_input_tick() > ack + 30; }))
        << "inputs did not flow again after the reconnect";
    EXPECT_EQ(alice.pilot.ship(), ship) << "the bot flies another ship";
}

}  // namespace bad_network_test
