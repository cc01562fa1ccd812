// client_bench: what the game-client SDK costs a game, and how smooth it looks (issue 25,
// docs/BENCHMARKS.md "The game-client SDK").
//
// An arena-server runs in this process on its own thread (pin it with --server-core), with
// --asteroids drifting asteroids and a view that holds them all; one session (the game's
// thread, pinned to --client-core) plays a 60 fps loop for --seconds and measures:
//  - update(): the time of each call, separately for the frames that applied at least one
//    tick (with --asteroids entities moving, every tick updates all of them) and the others;
//  - sample(): the time of sample<Position>() per entity, over every entity in view;
//  - smoothness (--latency-ms, --jitter-ms: through tests/client's latency_proxy): for
//    --tracked asteroids, the largest distance, over every frame, between the interpolated
//    position at the render tick and the true one (the server's positions, recorded every
//    tick, between the two ticks around it), with the default render delay.
#include <pthread.h>
#include <sched.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "ecsnet/arena/game.hpp"
#include "ecsnet/client/session.hpp"
#include "ecsnet/server/server.hpp"
#include "latency_proxy.hpp"

namespace {

namespace arena = ecsnet::arena;
namespace client = ecsnet::client;
using ecsnet::ecs::Entity;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

void pin(int core) {
    if (core < 0) {
        return;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<unsigned>(core), &set);
    (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) {
        return 0.0;
    }
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double mean(const std::vector<double>& v) {
    double sum = 0.0;
    for (const double x : v) {
        sum += x;
    }
    return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

// The true path: the server's positions of the tracked entities, tick by tick.
struct truth {
    std::mutex mutex;
    std::map<std::uint64_t, std::map<Entity, arena::Position>> by_tick;

    std::optional<arena::Position> at(Entity e, double tick) {
        const auto t0 = static_cast<std::uint64_t>(std::floor(tick));
        std::lock_guard lock{mutex};
        const auto a = by_tick.find(t0);
        const auto b = by_tick.find(t0 + 1);
        if (a == by_tick.end() || b == by_tick.end() || !a->second.contains(e) ||
            !b->second.contains(e)) {
            return std::nullopt;
        }
        const auto f = static_cast<float>(tick - static_cast<double>(t0));
        const arena::Position p = a->second.at(e);
        const arena::Position q = b->second.at(e);
        if (std::hypot(q.x - p.x, q.y - p.y) > 50.0F) {
            return std::nullopt;  // a jump (a respawn): nothing to interpolate
        }
        return arena::Position{p.x + (q.x - p.x) * f, p.y + (q.y - p.y) * f};
    }
};

}  // namespace

int main(int argc, char** argv) {
    std::size_t asteroids = 10'000;
    double seconds = 10.0;
    int latency_ms = 100;
    int jitter_ms = 20;
    std::size_t tracked = 50;
    int server_core = 1;
    int client_core = 0;
    CLI::App app{"client_bench: the session SDK's update() and sample() costs, and smoothness"};
    app.add_option("--asteroids", asteroids, "Moving entities, all in view")->capture_default_str();
    app.add_option("--seconds", seconds, "Length of the 60 fps loop")->capture_default_str();
    app.add_option("--latency-ms", latency_ms, "One-way latency of the proxy")->capture_default_str();
    app.add_option("--jitter-ms", jitter_ms, "Its jitter (+-)")->capture_default_str();
    app.add_option("--tracked", tracked, "Asteroids whose smoothness is measured")->capture_default_str();
    app.add_option("--server-core", server_core, "CPU of the server thread (-1: any)")->capture_default_str();
    app.add_option("--client-core", client_core, "CPU of the game loop (-1: any)")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    spdlog::set_level(spdlog::level::warn);

    // The server: the arena, every asteroid in view, no byte budget.
    ecsnet::server::server_config config;
    config.bind = "127.0.0.1";
    config.port = 0;
    config.interest_radius = 100'000.0F;
    config.client_budget = 0;
    config.max_entities = asteroids * 4 + 1000;
    arena::settings rules;
    rules.size = 16'000.0F;
    rules.asteroids = asteroids;
    boost::asio::io_context io;
    std::optional<ecsnet::server::server> server;
    server.emplace(io, config, arena::game(rules));
    auto record = std::make_shared<truth>();
    std::vector<Entity> watched;
    server->world().view<const arena::Asteroid>().each([&](Entity e, const arena::Asteroid&) {
        if (watched.size() < tracked) {
            watched.push_back(e);
        }
        return false;
    });
    server->scheduler().add("bench-record", ecsnet::ecs::component_access{}.reads<arena::Position>(),
                            [&](ecsnet::ecs::SystemContext& ctx) {
                                std::map<Entity, arena::Position> now;
                                for (const Entity e : watched) {
                                    if (const auto* p = ctx.world.try_get<arena::Position>(e)) {
                                        now.emplace(e, *p);
                                    }
                                }
                                std::lock_guard lock{record->mutex};
                                record->by_tick[server->tick()] = std::move(now);
                            });
    server->start();
    std::thread server_thread{[&] {
        pin(server_core);
        io.run();
    }};
    pin(client_core);

    ecsnet::test::latency_proxy proxy{{.target_port = server->port(),
                                       .latency = std::chrono::milliseconds{latency_ms},
                                       .jitter = std::chrono::milliseconds{jitter_ms},
                                       .seed = 1,
                                       .buffer_limit = 64U << 20U}};
    client::session_options options;
    options.connect.port = proxy.port();
    options.connect.timeout = 60s;
    options.connect.max_frame_bytes = 64U << 20U;
    client::session session{options};

    std::vector<double> update_tick_us;
    std::vector<double> update_idle_us;
    std::vector<double> errors;
    std::vector<double> sample_ns;
    const auto frame = 16667us;
    auto next = clock_type::now();
    const auto joined_by = next + 120s;
    while (session.state() != client::session_state::joined && clock_type::now() < joined_by) {
        session.update();
        std::this_thread::sleep_for(5ms);
    }
    if (session.state() != client::session_state::joined) {
        std::fprintf(stderr, "client_bench: not joined: %s\n", session.closed_reason().c_str());
        return 1;
    }
    const auto end = clock_type::now() + std::chrono::duration<double>(seconds);
    std::vector<Entity> in_view;
    while (clock_type::now() < end) {
        const auto frames_before = session.stats().frames_received;
        const auto started = clock_type::now();
        session.update();
        const double us = std::chrono::duration<double, std::micro>(clock_type::now() - started).count();
        (session.stats().frames_received > frames_before ? update_tick_us : update_idle_us).push_back(us);

        const double r = session.render_tick();
        for (const Entity e : watched) {
            const auto shown = session.sample<arena::Position>(e);
            const auto real = record->at(e, r);
            if (shown && real) {
                errors.push_back(std::hypot(shown->x - real->x, shown->y - real->y));
            }
        }
        next += frame;
        std::this_thread::sleep_until(next);
    }
    // sample() over everything in view, 20 rounds.
    session.mirror().each([&](Entity e) { in_view.push_back(e); });
    double checksum = 0.0;
    for (int round = 0; round < 20; ++round) {
        const auto started = clock_type::now();
        for (const Entity e : in_view) {
            if (const auto p = session.sample<arena::Position>(e)) {
                checksum += static_cast<double>(p->x);
            }
        }
        sample_ns.push_back(std::chrono::duration<double, std::nano>(clock_type::now() - started).count() /
                            static_cast<double>(std::max<std::size_t>(in_view.size(), 1)));
    }

    std::printf("entities in view           %zu (asteroids %zu)\n", in_view.size(), asteroids);
    std::printf("update() with a tick       mean %.1f us  p50 %.1f  p99 %.1f  max %.1f  (%zu frames)\n",
                mean(update_tick_us), percentile(update_tick_us, 0.5), percentile(update_tick_us, 0.99),
                percentile(update_tick_us, 1.0), update_tick_us.size());
    std::printf("update() without           mean %.1f us  p50 %.1f  p99 %.1f  (%zu frames)\n",
                mean(update_idle_us), percentile(update_idle_us, 0.5), percentile(update_idle_us, 0.99),
                update_idle_us.size());
    std::printf("sample<Position>()         mean %.1f ns per entity  (best round %.1f)\n",
                mean(sample_ns), percentile(sample_ns, 0.0));
    std::printf("smoothness (%d +- %d ms)   error vs true path: max %.3f  p99 %.3f  mean %.3f units "
                "(%zu samples of %zu asteroids; render delay %.2f ticks, jitter %.2f ticks)\n",
                latency_ms, jitter_ms, percentile(errors, 1.0), percentile(errors, 0.99), mean(errors),
                errors.size(), watched.size(), session.server_time().render_delay(),
                session.server_time().jitter());
    std::printf("(checksum %.1f)\n", checksum);
    session.close();
    boost::asio::post(io, [&] { server->stop(); });
    server_thread.join();
    return 0;
}
