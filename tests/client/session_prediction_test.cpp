// The session predicting (session_options::predict) against the server in this process through
// the latency proxy (75 ms each way): a game of the test's own whose one predicted system is
// registered by the same function on the server and in the client.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "ecsnet/client/session.hpp"
#include "ecsnet/protocol/components.hpp"
#include "latency_proxy.hpp"
#include "test_server.hpp"
#include "test_types.hpp"

namespace session_prediction_test {

namespace protocol = ecsnet::protocol;
using ecsnet::client::prediction;
using ecsnet::client::session;
using ecsnet::client::session_options;
using ecsnet::client::session_state;
using ecsnet::ecs::Entity;
using ecsnet::testing::Glide;
using ecsnet::testing::Stick;
using namespace std::chrono_literals;

// The predicted system: a ship glides by its Stick, 30 units per second at full tilt.
void add_predicted_systems(ecsnet::ecs::Scheduler& systems) {
    systems.add("glide", ecsnet::ecs::component_access{}.reads<Stick>().writes<Glide>(),
                [](ecsnet::ecs::SystemContext& ctx) {
                    const auto dt = static_cast<float>(ctx.dt);
                    ctx.world.view<const Stick, Glide>().each([&](Entity, const Stick& s, Glide& g) {
                        if (s.x != 0.0F || s.y != 0.0F) {
                            g.x += s.x * 30.0F * dt;
                            g.y += s.y * 30.0F * dt;
                        }
                    });
                });
}

ecsnet::server::game predicted_game() {
    ecsnet::server::game g;
    g.name = "prediction-test";
    g.register_components = [](protocol::component_registry& types) {
        types.add<Glide>();
        types.add<Stick>();
    };
    g.setup = [](ecsnet::server::server& s) {
        add_predicted_systems(s.scheduler());
        s.on_player_joined = [&s](std::uint32_t owner, bool resumed) {
            if (!resumed) {
                const Entity ship = s.world().create();
                s.world().emplace<protocol::Owner>(ship, owner);
                s.world().emplace<Glide>(ship);
                s.world().emplace<Stick>(ship);
            }
        };
    };
    return g;
}

ecsnet::server::server_config config() {
    ecsnet::server::server_config c = ecsnet::test::local_server_config(30.0);
    return c;
}

struct predicting_player {
    explicit predicting_player(std::uint16_t port, bool predict) : s{options(port, predict)} {
        s.events().owned = [this](Entity e) { ship = e; };
    }
    static session_options options(std::uint16_t port, bool predict) {
        session_options o;
        o.connect.port = port;
        o.connect.name = "predicting";
        if (predict) {
            o.predict = [](prediction& p) {
                p.predict_smoothed<Glide>().input<Stick>();
                add_predicted_systems(p.systems());
            };
        }
        return o;
    }
    // Frames of 5 ms until pred() or the timeout.
    bool pump_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 15s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!pred() && std::chrono::steady_clock::now() < deadline) {
            s.update();
            std::this_thread::sleep_for(5ms);
        }
        return pred();
    }
    session s;
    Entity ship;
};

TEST(SessionPrediction, TheOwnShipMovesAtTheNextTickNotARoundTripLaterAndAgreesWithTheServer) {
    ecsnet::test::test_server server{config(), predicted_game()};
    ecsnet::test::latency_proxy proxy{{.target_port = server.port(), .latency = 75ms, .jitter = 5ms}};
    predicting_player predicted{proxy.port(), true};
    predicting_player plain{proxy.port(), false};
    for (predicting_player* p : {&predicted, &plain}) {
        ASSERT_TRUE(p->pump_until([&] { return !p->ship.is_null(); })) << p->s.closed_reason();
        ASSERT_TRUE(p->pump_until([&] { return p->s.server_time().synchronized(); }));
    }
    ASSERT_NE(predicted.s.predictor(), nullptr);
    EXPECT_EQ(plain.s.predictor(), nullptr) << "no predict, no prediction";
    EXPECT_TRUE(predicted.s.predictor()->tracks(predicted.ship)) << "its own entity, by default";
    // At rest: a game sets its input every frame.
    for (predicting_player* p : {&predicted, &plain}) {
        p->s.set_input(p->ship, Stick{});
        p->pump_until([] { return false; }, 300ms);
    }
    ASSERT_GT(predicted.s.last_input_tick(), 0U);
    const Glide at_rest = *predicted.s.rendered<Glide>(predicted.ship);

    // The key press: both players push right; one input tick later the predicting player's
    // ship has moved, the other's has not (its news is a round trip of 150 ms away).
    for (predicting_player* p : {&predicted, &plain}) {
        p->s.set_input(p->ship, Stick{1.0F, 0.0F, 0});
    }
    const std::uint64_t pressed_at = predicted.s.last_input_tick();
    const Glide plain_before = *plain.s.rendered<Glide>(plain.ship);
    ASSERT_TRUE(predicted.pump_until([&] { return predicted.s.last_input_tick() >= pressed_at + 2; }));
    plain.s.update();
    EXPECT_GT(predicted.s.rendered<Glide>(predicted.ship)->x, at_rest.x + 0.5F)
        << "moved at the input ticks after the press";
    EXPECT_EQ(plain.s.rendered<Glide>(plain.ship)->x, plain_before.x) << "still a round trip away";

    // A second of steady input: the server's ticks agree with what was predicted for them.
    const auto pump_both = [&](std::chrono::milliseconds d) {
        const auto end = std::chrono::steady_clock::now() + d;
        while (std::chrono::steady_clock::now() < end) {
            predicted.s.update();
            plain.s.update();
            std::this_thread::sleep_for(5ms);
        }
    };
    pump_both(1000ms);
    // Protocol 5: each Input says what the player was shown; the server knows it per player.
    const std::uint32_t id = predicted.s.client_id();
    const auto [view, server_tick] = server.call([id](ecsnet::server::server& s) {
        return std::make_pair(s.input_view(id), s.tick());
    });
    ASSERT_TRUE(view.has_value());
    EXPECT_LT(*view, static_cast<double>(server_tick)) << "behind the server";
    EXPECT_GT(*view, static_cast<double>(server_tick) - 30.0)
        << "by about the round trip and the interpolation delay, not by a second";
    predicted.s.set_input(predicted.ship, Stick{});
    pump_both(600ms);
    const auto& stats = predicted.s.predictor()->stats();
    EXPECT_GT(stats.checks, 20U);
    EXPECT_LE(stats.mispredictions, 2U) << "an input late at the server now and then, at most";
    // At rest again, the prediction is where the server says.
    const Glide server_says = *predicted.s.mirror().get<Glide>(predicted.ship);
    const Glide shown = *predicted.s.rendered<Glide>(predicted.ship);
    EXPECT_NEAR(shown.x, server_says.x, 0.01F);
    EXPECT_GT(server_says.x, at_rest.x + 20.0F) << "the server moved it too";
}

}  // namespace session_prediction_test
