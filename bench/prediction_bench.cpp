// prediction_bench: client-side prediction's figures (issue 40, docs/BENCHMARKS.md
// "Prediction"), in one run.
//
// Over the network: an arena-server in this process (its own thread), two sessions through
// tests/client's latency_proxy (--latency-ms +- --jitter-ms each way), one predicting its ship
// and one not, side by side, each a 60 fps loop on the game's thread:
//  - input to visible: the ship at rest, a turn key pressed; frames until what the game draws
//    (session::rendered<Heading>) has turned, for each session (--presses times);
//  - pure movement: a scripted pilot (thrust and turn, no gun) in an arena without asteroids
//    for --seconds: mispredictions per 1,000 server ticks compared, correction sizes;
//  - the full arena: the bot (it fires; asteroids wreck ships) with --asteroids: the same;
//  - the laser: a shooter fires only at what it sees hit, against --laser-targets players on
//    random courses, with lag compensation and without (two servers): the share of those
//    shots the server agrees with (--laser-only: this part alone).
// Without a network: the cost of reconcile() when it replays 12 ticks for one ship and 64
// bullets, and a replay at the default budget (32 ticks); one lag-compensated hitscan shot
// (server::lag_history::raycast) against 200 ships; the arena's systems with 200 ships all
// firing the laser, with and without lag compensation.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "ecsnet/arena/bot.hpp"
#include "ecsnet/arena/game.hpp"
#include "ecsnet/arena/predicted.hpp"
#include "ecsnet/client/session.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/server/server.hpp"
#include "ecsnet/server/simulation/lag_history.hpp"
#include "latency_proxy.hpp"

namespace {

namespace arena = ecsnet::arena;
namespace client = ecsnet::client;
namespace protocol = ecsnet::protocol;
namespace ecs = ecsnet::ecs;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

double percentile(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0.0;
    }
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

// An arena-server on its own thread.
struct arena_server {
    arena_server(std::size_t asteroids, float size, bool lag_compensation = true) {
        ecsnet::server::server_config config;
        config.bind = "127.0.0.1";
        config.port = 0;
        arena::settings rules;
        rules.size = size;
        rules.asteroids = asteroids;
        rules.lag_compensation = lag_compensation;
        server.emplace(io, config, arena::game(rules));
        server->start();
        thread = std::thread{[this] { io.run(); }};
    }
    ~arena_server() {
        boost::asio::post(io, [this] { server->stop(); });
        thread.join();
    }
    boost::asio::io_context io;
    std::optional<ecsnet::server::server> server;
    std::thread thread;
};

struct player {
    player(std::uint16_t port, bool predict, float size) : s{options(port, predict, size)} {
        s.events().owned = [this](ecs::Entity e) { ship = e; };
    }
    static client::session_options options(std::uint16_t port, bool predict, float size) {
        client::session_options o;
        o.connect.port = port;
        o.connect.name = predict ? "predicting" : "plain";
        o.connect.timeout = 30s;
        if (predict) {
            o.predict = [size](client::prediction& p) { arena::predict(p, size); };
        }
        return o;
    }
    void hook() {
        if (client::prediction* p = s.predictor(); p != nullptr && p != hooked) {
            hooked = p;
            p->on_misprediction = [this](const client::misprediction& m) { errors.push_back(m.error); };
        }
    }
    client::session s;
    ecs::Entity ship;
    const client::prediction* hooked = nullptr;
    std::vector<double> errors;
};

// 60 fps frames for the players until after() says stop or the limit passes: each frame
// updates every player, then calls after(frame number).
void frames(const std::vector<player*>& players, std::chrono::milliseconds limit,
            const std::function<bool(int)>& after) {
    const auto deadline = clock_type::now() + limit;
    auto next = clock_type::now();
    for (int frame = 1; clock_type::now() < deadline; ++frame) {
        for (player* p : players) {
            p->s.update();
            p->hook();
        }
        if (after && after(frame)) {
            return;
        }
        next += 16667us;
        std::this_thread::sleep_until(next);
    }
}

double angle_of(const arena::Heading& h) { return std::atan2(h.y, h.x); }

bool have_ships(const std::vector<player*>& players) {
    frames(players, 30s, [&](int) {
        return std::all_of(players.begin(), players.end(), [](player* p) {
            return !p->ship.is_null() && p->s.rendered<arena::Heading>(p->ship).has_value();
        });
    });
    for (player* p : players) {
        if (p->ship.is_null()) {
            std::fprintf(stderr, "prediction_bench: %s has no ship: %s\n",
                         p->s.predictor() != nullptr ? "the predicting player" : "the plain player",
                         p->s.closed_reason().c_str());
            return false;
        }
    }
    return true;
}

// Frames from a turn key pressed (between two frames) to a turned heading drawn.
void input_to_visible(std::uint16_t port, float size, int presses) {
    player predicted{port, true, size};
    player plain{port, false, size};
    const std::vector<player*> both{&predicted, &plain};
    if (!have_ships(both)) {
        return;
    }
    std::vector<double> counts[2];
    for (int press = 0; press < presses; ++press) {
        for (player* p : both) {
            p->s.set_input(p->ship, arena::Pilot{});  // at rest, for a second
        }
        frames(both, 1000ms, {});
        double start[2];
        for (int i = 0; i < 2; ++i) {
            start[i] = angle_of(*both[i]->s.rendered<arena::Heading>(both[i]->ship));
        }
        for (player* p : both) {
            p->s.set_input(p->ship, arena::Pilot{0.0F, 1.0F, false, false});
        }
        int seen[2] = {0, 0};
        frames(both, 3000ms, [&](int frame) {
            for (int i = 0; i < 2; ++i) {
                if (seen[i] == 0) {
                    const auto h = both[i]->s.rendered<arena::Heading>(both[i]->ship);
                    if (h && std::abs(angle_of(*h) - start[i]) > 1e-4) {
                        seen[i] = frame;
                    }
                }
            }
            return seen[0] > 0 && seen[1] > 0;
        });
        for (int i = 0; i < 2; ++i) {
            counts[i].push_back(seen[i] > 0 ? seen[i] : 999);
        }
    }
    for (int i = 0; i < 2; ++i) {
        std::printf("input to visible, %-13s frames at 60 fps: p50 %.0f  max %.0f  (%zu presses)\n",
                    i == 0 ? "predicted:" : "not predicted:", percentile(counts[i], 0.5),
                    percentile(counts[i], 1.0), counts[i].size());
    }
}

// Mispredictions per 1,000 server ticks compared, and the corrections' sizes, since `base`.
void report(const char* what, const player& p, const client::prediction_stats& base) {
    client::prediction_stats s = p.s.predictor()->stats();
    s.checks -= base.checks;
    s.mispredictions -= base.mispredictions;
    s.ticks_replayed -= base.ticks_replayed;
    s.replays_deferred -= base.replays_deferred;
    s.snaps -= base.snaps;
    s.spawns_predicted -= base.spawns_predicted;
    s.spawns_matched -= base.spawns_matched;
    s.spawns_refused -= base.spawns_refused;
    std::printf("%-14s %llu ticks compared, %llu mispredicted = %.2f per 1,000; correction size "
                "p50 %.3f p99 %.3f max %.3f; %llu ticks replayed, %llu deferred, %llu snaps; "
                "bullets %llu predicted, %llu matched, %llu refused\n",
                what, static_cast<unsigned long long>(s.checks),
                static_cast<unsigned long long>(s.mispredictions),
                s.checks > 0 ? 1000.0 * static_cast<double>(s.mispredictions) / static_cast<double>(s.checks) : 0.0,
                percentile(p.errors, 0.5), percentile(p.errors, 0.99), percentile(p.errors, 1.0),
                static_cast<unsigned long long>(s.ticks_replayed),
                static_cast<unsigned long long>(s.replays_deferred),
                static_cast<unsigned long long>(s.snaps),
                static_cast<unsigned long long>(s.spawns_predicted),
                static_cast<unsigned long long>(s.spawns_matched),
                static_cast<unsigned long long>(s.spawns_refused));
}

// What the server said of this player's input: ticks applied, late (the server repeated the
// input before: a misprediction the client cannot avoid), repeated.
void print_late(const player& p, std::uint32_t late_before) {
    if (const auto& ack = p.s.last_input_ack()) {
        std::printf("               the server's InputAck: late %u (%u in the warm-up), repeated %u, "
                    "lead %d ticks\n",
                    ack->late - late_before, late_before, ack->repeated, static_cast<int>(ack->lead));
    }
}

// Plays `warmup` (the server clock settles: the first inputs arrive late), then `seconds`;
// reports what the second part mispredicted.
void play(const char* what, player& p, std::chrono::milliseconds warmup, double seconds,
          const std::function<void()>& steer) {
    const std::vector<player*> one{&p};
    frames(one, warmup, [&](int) {
        steer();
        return false;
    });
    const client::prediction_stats base = p.s.predictor()->stats();
    const std::uint32_t late_before = p.s.last_input_ack() ? p.s.last_input_ack()->late : 0U;
    p.errors.clear();
    frames(one, std::chrono::milliseconds{static_cast<long>(seconds * 1000)}, [&](int) {
        steer();
        return false;
    });
    report(what, p, base);
    print_late(p, late_before);
}

void pure_movement(std::uint16_t port, float size, double seconds, std::chrono::milliseconds warmup) {
    player predicted{port, true, size};
    if (!have_ships({&predicted})) {
        return;
    }
    std::mt19937_64 rng{42};
    int hold = 0;
    play("pure movement:", predicted, warmup, seconds, [&] {
        if (--hold <= 0) {
            hold = std::uniform_int_distribution<int>{10, 60}(rng);
            const float thrusts[] = {0.0F, 0.5F, 1.0F};
            const float turns[] = {-1.0F, -0.25F, 0.0F, 0.0F, 0.5F, 1.0F};
            predicted.s.set_input(predicted.ship,
                                  arena::Pilot{thrusts[std::uniform_int_distribution<int>{0, 2}(rng)],
                                               turns[std::uniform_int_distribution<int>{0, 5}(rng)], false, false});
        }
    });
}

void full_arena(std::uint16_t port, float size, double seconds, std::chrono::milliseconds warmup) {
    player predicted{port, true, size};
    if (!have_ships({&predicted})) {
        return;
    }
    arena::bot pilot;
    play("full arena:", predicted, warmup, seconds, [&] {
        if (const auto input = pilot.play(predicted.s.mirror(), predicted.s.client_id())) {
            predicted.s.set_input(pilot.ship(), *input);
        }
    });
}

// Lag compensation's agreement: a shooter at rest turns towards the nearest flying ship and
// fires the laser only when its beam, from its own ship as drawn, enters that ship as drawn
// (interpolated at the render tick); `targets` players fly scripted random courses at arena
// speeds. Each shot is one the shooter saw hit: the share the server's verdict (Laser.target)
// agrees with, for `seconds` after `warmup`.
void laser_agreement(std::uint16_t port, float size, int targets, double seconds,
                     std::chrono::milliseconds warmup, const char* what) {
    player shooter{port, true, size};
    std::vector<std::unique_ptr<player>> others;
    std::vector<player*> all{&shooter};
    for (int i = 0; i < targets; ++i) {
        others.push_back(std::make_unique<player>(port, false, size));
        all.push_back(others.back().get());
    }
    if (!have_ships(all)) {
        return;
    }
    std::mt19937_64 rng{7};
    std::vector<int> hold(others.size(), 0);
    const auto steer_targets = [&] {
        for (std::size_t i = 0; i < others.size(); ++i) {
            if (--hold[i] <= 0) {
                hold[i] = std::uniform_int_distribution<int>{20, 90}(rng);
                const float turns[] = {-1.0F, -0.3F, 0.0F, 0.0F, 0.3F, 1.0F};
                others[i]->s.set_input(
                    others[i]->ship,
                    arena::Pilot{std::uniform_real_distribution<float>{0.5F, 1.0F}(rng),
                                 turns[std::uniform_int_distribution<int>{0, 5}(rng)], false,
                                 false});
            }
        }
    };
    // When each ship was last seen other than flying: a ship's shield, as the latest state
    // says, may still be up at the render tick, and the server's history has no shielded ships.
    std::unordered_map<std::uint32_t, clock_type::time_point> unsafe;
    struct shot {
        std::uint32_t target;  // index + 1
        std::uint64_t input_tick;
    };
    std::deque<shot> pending;
    int shots = 0;
    int agreed = 0;
    int other_target = 0;
    int missed = 0;
    bool counting = false;
    auto last_shot = clock_type::now();
    std::uint32_t last_verdict = 0;
    std::uint64_t held_until = 0;
    std::vector<double> rewinds;  // ticks  // the laser is held until an Input for this tick is sent
    const auto shoot = [&] {
        const client::session& s = shooter.s;
        // The server's verdicts, in order.
        if (const auto beam = s.mirror().get<arena::Laser>(shooter.ship);
            beam && beam->tick != 0 && beam->tick != last_verdict) {
            last_verdict = beam->tick;
            if (!pending.empty()) {
                const shot expected = pending.front();
                pending.pop_front();
                if (counting) {
                    ++shots;
                    if (beam->target == expected.target) {
                        ++agreed;
                    } else if (beam->target != 0) {
                        ++other_target;
                    } else {
                        ++missed;
                    }
                }
            }
        }
        const auto now = clock_type::now();
        const auto me = s.rendered<arena::Position>(shooter.ship);
        const auto heading = s.rendered<arena::Heading>(shooter.ship);
        if (!me || !heading) {
            return;
        }
        const float norm = std::hypot(heading->x, heading->y);
        const float dx = heading->x / norm;
        const float dy = heading->y / norm;
        const float mx = me->x + dx * arena::rules::muzzle;
        const float my = me->y + dy * arena::rules::muzzle;
        // The ship to turn to (the nearest safe one), and the first flying ship the beam
        // enters as drawn: the one the server should hit.
        ecs::Entity nearest;
        arena::Position at{};
        float best = 1e9F;
        ecs::Entity first;
        bool first_safe = false;
        float first_distance = 1e9F;
        s.mirror().each([&](ecs::Entity e) {
            const auto status = s.mirror().get<arena::Ship>(e);
            if (e == shooter.ship || !status) {
                return;
            }
            if (status->state() != arena::ship_status::flying) {
                unsafe[e.index()] = now;
                return;
            }
            const auto p = s.rendered<arena::Position>(e);
            if (!p) {
                return;
            }
            const auto it = unsafe.find(e.index());
            const bool safe = it == unsafe.end() || now - it->second >= 1s;
            const ecsnet::server::hit_shape drawn{e, p->x, p->y, arena::rules::ship_radius};
            if (const auto enter = ecsnet::server::ray_enters(drawn, mx, my, dx, dy,
                                                              arena::rules::laser_range);
                enter && *enter < first_distance) {
                first_distance = *enter;
                first = e;
                first_safe = safe;
            }
            const float d = std::hypot(p->x - me->x, p->y - me->y);
            if (safe && d < best) {
                best = d;
                nearest = e;
                at = *p;
            }
        });
        arena::Pilot pilot{};
        if (!nearest.is_null()) {
            const float want = std::atan2(at.y - me->y, at.x - me->x);
            float turn = std::remainder(want - static_cast<float>(angle_of(*heading)),
                                        2.0F * std::numbers::pi_v<float>);
            pilot.turn = std::clamp(turn * 4.0F, -1.0F, 1.0F);
            // A ship whose shield may still be up at the render tick is not shot at.
            const bool sees_hit = !first.is_null() && first_safe;
            if (sees_hit && now - last_shot > 1500ms) {
                last_shot = now;
                pending.push_back(shot{first.index() + 1, s.last_input_tick() + 1});
                if (counting) {  // how far back the server rewinds it, at least
                    rewinds.push_back(static_cast<double>(s.last_input_tick() + 1) - s.render_tick());
                }
                held_until = s.last_input_tick() + 1;
            }
        }
        if (held_until != 0) {
            // Held still until an Input carries it: a press shorter than a tick is not sent.
            if (s.last_input_tick() < held_until) {
                shooter.s.set_input(shooter.ship, arena::Pilot{0.0F, 0.0F, false, true});
                return;
            }
            held_until = 0;
        }
        shooter.s.set_input(shooter.ship, pilot);
    };
    frames(all, warmup, [&](int) {
        steer_targets();
        shoot();
        return false;
    });
    counting = true;
    frames(all, std::chrono::milliseconds{static_cast<long>(seconds * 1000)}, [&](int) {
        steer_targets();
        shoot();
        return false;
    });
    std::printf("laser, %s: %d shots the shooter saw hit, the server agreed with %d (%.1f %%), "
                "hit another ship %d, missed %d; rewound from the shot's input tick p50 %.1f "
                "max %.1f ticks\n",
                what, shots, agreed, shots > 0 ? 100.0 * agreed / shots : 0.0, other_target, missed,
                percentile(rewinds, 0.5), percentile(rewinds, 1.0));
}

// reconcile() when it replays `ticks` ticks, one ship and `bullets` other moving entities
// predicted; no network: a server world of this function's own.
double replay_cost_us(std::size_t ticks, std::size_t bullets, int rounds) {
    protocol::component_registry types;
    arena::register_components(types);
    auto world = ecs::World::make();
    const auto make = [&](bool ship) {
        const ecs::Entity e = world->create();
        world->emplace<arena::Position>(e);
        world->emplace<arena::Velocity>(e, arena::Velocity{ship ? 0.0F : 500.0F, ship ? 0.0F : 100.0F});
        if (ship) {  // as the arena makes one: its gun is predicted too
            world->emplace<arena::Heading>(e);
            world->emplace<arena::Ship>(e);
            world->emplace<arena::Pilot>(e, arena::Pilot{1.0F, 0.5F, false, false});
            world->emplace<protocol::Owner>(e, protocol::Owner{1});
            world->emplace<arena::Stats>(e, arena::Stats{0, arena::rules::max_ammo, 0});
        }
        return e;
    };
    std::vector<ecs::Entity> entities{make(true)};
    for (std::size_t i = 0; i < bullets; ++i) {
        entities.push_back(make(false));
    }
    world->discard_changes();
    protocol::replication_encoder encoder{types};
    protocol::mirror mirror{types.types()};
    for (const protocol::frame& f : encoder.encode_snapshot(*world, 1)) {
        if (!mirror.apply(*protocol::verify_server_frame(*f))) {
            std::fprintf(stderr, "prediction_bench: snapshot: %s\n", mirror.error().c_str());
            return -1.0;
        }
    }
    if (const auto own = encoder.encode_owner_only_snapshot(*world, 1, 1);  // the ship's Stats
        !own || !mirror.apply(*protocol::verify_server_frame(**own))) {
        std::fprintf(stderr, "prediction_bench: the owner's snapshot: %s\n", mirror.error().c_str());
        return -1.0;
    }
    client::prediction p{1.0 / 30.0, client::prediction_options{.history_ticks = 64,
                                                                .replay_budget_ticks = 64,
                                                                .replay_budget_time = 1h}};
    arena::predict(p, 4000.0F);
    for (const ecs::Entity e : entities) {
        (void)p.track(e, mirror);
    }
    p.reconcile(1, mirror);
    const protocol::component_set input = protocol::component_set{}.set(arena::Pilot{1.0F, 0.5F, false, false});
    std::uint64_t tick = 1;
    std::uint64_t server_tick = 1;
    std::vector<double> us;
    for (std::size_t i = 0; i < ticks; ++i) {  // the server `ticks` ticks behind from now on
        ++tick;
        p.set_input(tick, entities[0], input);
        p.advance_to(tick);
    }
    for (int round = 0; round < rounds; ++round) {
        for (std::size_t i = 0; i < ticks; ++i) {
            ++tick;
            p.set_input(tick, entities[0], input);
            p.advance_to(tick);
        }
        // The server's state for the oldest of those ticks disagrees: the ship was pushed. Its
        // deltas up to there (the mirror takes them in order), the last one with the push.
        for (; server_tick < tick - ticks; ) {
            ++server_tick;
            if (server_tick == tick - ticks) {
                world->write<arena::Position>(entities[0]).x += 1.0F + static_cast<float>(round);
            }
            const protocol::frame f = encoder.encode_delta(*world, world->take_changes(), server_tick);
            if (!mirror.apply(*protocol::verify_server_frame(*f))) {
                std::fprintf(stderr, "prediction_bench: delta: %s\n", mirror.error().c_str());
                return -1.0;
            }
        }
        const auto started = clock_type::now();
        p.reconcile(server_tick, mirror);
        us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - started).count());
        if (p.stats().system_failures != 0) {
            std::fprintf(stderr, "prediction_bench: a predicted system failed: the replay measures nothing\n");
            return -1.0;
        }
        if (p.stats().ticks_replayed != static_cast<std::uint64_t>(round + 1) * ticks) {
            std::fprintf(stderr, "prediction_bench: the replay ran %llu ticks, not %zu\n",
                         static_cast<unsigned long long>(p.stats().ticks_replayed), ticks);
            return -1.0;
        }
    }
    return percentile(us, 0.5);
}

// The arena's systems (no network) with `ships` ships flying and every one holding the
// laser (one shot a second each), with lag compensation (each shot rewound 4.5 ticks) or
// without: the tick's p50 and p99 in microseconds.
std::pair<double, double> arena_tick_us(std::size_t ships, bool compensated, int ticks) {
    auto world = ecs::World::make();
    ecs::Scheduler scheduler{1.0 / 30.0};
    auto game = std::make_shared<arena::state>(
        arena::settings{.size = 4000.0F, .asteroids = 0, .seed = 3, .lag_compensation = compensated});
    std::uint64_t tick = 0;
    game->server_tick = [&tick] { return tick; };
    game->view_of = [&tick](std::uint32_t) { return std::optional<double>{static_cast<double>(tick) - 4.5}; };
    arena::add_systems(scheduler, game);
    std::mt19937_64 rng{11};
    for (std::size_t i = 0; i < ships; ++i) {
        const ecs::Entity e = arena::spawn_ship(*world, *game, static_cast<std::uint32_t>(i + 1));
        world->replace<arena::Pilot>(
            e, arena::Pilot{std::uniform_real_distribution<float>{0.2F, 1.0F}(rng),
                            std::uniform_real_distribution<float>{-1.0F, 1.0F}(rng), false, true});
    }
    std::vector<double> us;
    for (int i = 0; i < ticks + 90; ++i) {
        ++tick;
        const auto started = clock_type::now();
        (void)scheduler.run(*world);
        if (i >= 90) {  // after the shields are down and the first respawns
            us.push_back(std::chrono::duration<double, std::micro>(clock_type::now() - started).count());
        }
        world->discard_changes();
    }
    return {percentile(us, 0.5), percentile(us, 0.99)};
}

// One rewound hitscan shot against `ships` recorded ships, at a render tick between two ticks.
double rewound_shot_ns(std::size_t ships, int shots) {
    ecsnet::server::lag_history history{30.0};
    std::mt19937_64 rng{9};
    std::uniform_real_distribution<float> where{-2000.0F, 2000.0F};
    std::vector<ecsnet::server::hit_shape> shapes(ships);
    for (std::size_t i = 0; i < ships; ++i) {
        shapes[i] = ecsnet::server::hit_shape{ecs::Entity{static_cast<std::uint32_t>(i), 1}, where(rng),
                                              where(rng), arena::rules::ship_radius};
    }
    for (std::uint64_t tick = 1; tick <= 8; ++tick) {
        for (auto& s : shapes) {
            s.x += 12.0F;
        }
        history.record(tick, shapes);
    }
    std::uniform_real_distribution<float> angle{0.0F, 6.2831853F};
    std::size_t hits = 0;
    const auto started = clock_type::now();
    for (int i = 0; i < shots; ++i) {
        const float a = angle(rng);
        const auto& from = shapes[static_cast<std::size_t>(i) % ships];
        if (history.raycast(4.5, from.x, from.y, std::cos(a), std::sin(a), 1500.0F, from.entity)) {
            ++hits;
        }
    }
    const double ns = std::chrono::duration<double, std::nano>(clock_type::now() - started).count() /
                      static_cast<double>(shots);
    std::printf("(%zu of %d shots hit)\n", hits, shots);
    return ns;
}

}  // namespace

int main(int argc, char** argv) {
    int latency_ms = 75;
    int jitter_ms = 10;
    int presses = 10;
    double seconds = 30.0;
    double warmup = 3.0;
    std::size_t asteroids = 120;
    float size = 4000.0F;
    bool network = true;
    float laser_arena = 900.0F;
    int laser_targets = 4;
    CLI::App app{"prediction_bench: client-side prediction's figures (docs/BENCHMARKS.md)"};
    app.add_option("--latency-ms", latency_ms, "One-way latency of the proxy")->capture_default_str();
    app.add_option("--jitter-ms", jitter_ms, "Its jitter (+-)")->capture_default_str();
    app.add_option("--presses", presses, "Key presses for input to visible")->capture_default_str();
    app.add_option("--seconds", seconds, "Length of each play (pure movement, full arena)")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    app.add_option("--warmup", warmup, "Seconds played before counting (the server clock settles)")
        ->check(CLI::NonNegativeNumber)
        ->capture_default_str();
    app.add_option("--asteroids", asteroids, "Asteroids in the full arena")->capture_default_str();
    app.add_option("--laser-arena", laser_arena, "Arena size of the laser's play")->capture_default_str();
    app.add_option("--laser-targets", laser_targets, "Players the laser's shooter aims at")
        ->check(CLI::Range(1, 32))
        ->capture_default_str();
    app.add_flag("!--no-network", network, "Only the replay costs");
    bool laser_only = false;
    app.add_flag("--laser-only", laser_only, "Over the network, only the laser's agreement");
    CLI11_PARSE(app, argc, argv);
    spdlog::set_level(spdlog::level::warn);

    std::printf("replay of 12 ticks, 1 ship + 64 bullets: p50 %.1f us\n", replay_cost_us(12, 64, 200));
    std::printf("replay of 32 ticks (the budget), 1 ship + 64 bullets: p50 %.1f us\n",
                replay_cost_us(32, 64, 200));
    std::printf("replay of 12 ticks, 1 ship alone: p50 %.1f us\n", replay_cost_us(12, 0, 200));
    std::printf("one rewound hitscan shot, 200 ships: %.2f us\n", rewound_shot_ns(200, 20000) / 1000.0);
    for (const bool compensated : {true, false}) {
        const auto [p50, p99] = arena_tick_us(200, compensated, 900);
        std::printf("the arena's systems, 200 ships all holding the laser, %s: tick p50 %.0f us  p99 %.0f us\n",
                    compensated ? "lag-compensated" : "not compensated", p50, p99);
    }
    if (!network) {
        return 0;
    }
    const auto proxied = [&](arena_server& server) {
        return std::make_unique<ecsnet::test::latency_proxy>(ecsnet::test::latency_proxy_config{
            .target_port = server.server->port(),
            .latency = std::chrono::milliseconds{latency_ms},
            .jitter = std::chrono::milliseconds{jitter_ms}});
    };
    std::printf("through the latency proxy: %d +- %d ms each way\n", latency_ms, jitter_ms);
    if (!laser_only) {
        arena_server empty{0, size};
        auto proxy = proxied(empty);
        input_to_visible(proxy->port(), size, presses);
        pure_movement(proxy->port(), size, seconds, std::chrono::milliseconds{static_cast<long>(warmup * 1000)});
    }
    if (!laser_only) {
        arena_server full{asteroids, size};
        auto proxy = proxied(full);
        full_arena(proxy->port(), size, seconds, std::chrono::milliseconds{static_cast<long>(warmup * 1000)});
    }
    for (const bool compensated : {true, false}) {
        arena_server open{0, laser_arena, compensated};
        auto proxy = proxied(open);
        laser_agreement(proxy->port(), laser_arena, laser_targets, seconds,
                        std::chrono::milliseconds{static_cast<long>(warmup * 1000)},
                        compensated ? "lag-compensated" : "not compensated");
    }
    return 0;
}
