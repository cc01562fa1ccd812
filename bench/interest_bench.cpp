// Interest management at scale, in one process and without sockets (docs/BENCHMARKS.md): the
// server's tick as ecsnet-server runs it (movement system, interest update, replicator) for K
// clients whose areas of interest move across a big world, and what each client receives. A
// few clients' frames are applied to real mirrors, whose checksums must all match.
//
//   interest_bench                      the big world: 16,384^2, 100,000 moving entities,
//                                       K = 100, 500, 1000, radius 256, 64 KiB/s per client
//   interest_bench --clients 100 --entities 1000000 --world 51810   same density, 10x world
//   interest_bench --scenario rebuild   5,000 entities, 100 clients: policy + plans only
//   interest_bench --scenario everything   radius covering the world against no interest
//                                          management at all, interleaved, same run
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/replication/client_view.hpp"
#include "ecsnet/server/replication/interest.hpp"
#include "ecsnet/server/replication/replicator.hpp"

namespace {

namespace ecs = ecsnet::ecs;
namespace protocol = ecsnet::protocol;
namespace server = ecsnet::server;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using clock_type = std::chrono::steady_clock;

struct options {
    std::size_t entities = 100'000;
    std::vector<std::size_t> clients{100, 500, 1000};
    float world = 16'384.0F;
    float radius = 256.0F;
    float cell = 0.0F;  // 0: radius / 2
    double budget = 64.0 * 1024;
    double tick_rate = 30.0;
    float focus_speed = 30.0F;
    std::size_t ticks = 300;
    std::size_t warmup = 60;
    std::size_t mirrors = 8;  // clients whose frames a real mirror applies
    std::string scenario = "big";
};

double ms_since(clock_type::time_point start) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

double percentile(std::vector<double> values, double p) {
    if (values.empty()) {
        return 0.0;
    }
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

double rss_mib() {
    std::ifstream status{"/proc/self/status"};
    std::string key;
    while (status >> key) {
        if (key == "VmRSS:") {
            double kib = 0;
            status >> kib;
            return kib / 1024.0;
        }
        status.ignore(1 << 20, '\n');
    }
    return 0.0;
}

// A world of moving entities with the demo's components, bouncing inside [0, size).
struct moving_world {
    std::shared_ptr<ecs::World> world = ecs::World::make();
    protocol::component_registry types;
    float size;

    moving_world(std::size_t n, float world_size, std::uint64_t seed) : size{world_size} {
        ecsnet::demo::register_components(types);
        std::mt19937_64 rng{seed};
        std::uniform_real_distribution<float> where(0.0F, world_size);
        std::uniform_real_distribution<float> speed(-20.0F, 20.0F);
        for (std::size_t i = 0; i < n; ++i) {
            const ecs::Entity e = world->create();
            world->emplace<Position>(e, where(rng), where(rng));
            world->emplace<Velocity>(e, speed(rng), speed(rng));
        }
    }

    void move(float dt) {
        const float limit = size;
        world->view<Position, Velocity>().each([&](Position& p, Velocity& v) {
            p.x += v.x * dt;
            p.y += v.y * dt;
            if (p.x < 0.0F || p.x >= limit) {
                v.x = -v.x;
                p.x = std::clamp(p.x, 0.0F, std::nextafter(limit, 0.0F));
            }
            if (p.y < 0.0F || p.y >= limit) {
                v.y = -v.y;
                p.y = std::clamp(p.y, 0.0F, std::nextafter(limit, 0.0F));
            }
        });
    }
};

struct focus_walker {
    server::point at;
    server::point velocity;
};

struct run_result {
    std::vector<double> tick_ms;      // the whole tick: systems, interest update, replicator
    std::vector<double> update_ms;    // interest_manager::update (the grid)
    std::vector<double> serve_ms;     // replicator::tick: every client's frames
    std::uint64_t bytes{0};           // all clients, measured ticks
    std::vector<std::uint64_t> client_bytes;
    std::uint64_t entered{0};
    std::uint64_t left{0};
    std::uint64_t deferred{0};
    double in_view{0};                // mean entities held per client
    std::uint64_t checksums_matched{0};
    std::uint64_t checksums_mismatched{0};
    std::uint64_t mirror_inconsistencies{0};
};

// Runs the tick loop for `k` clients; interest management off when radius <= 0.
run_result run(const options& o, std::size_t k, float radius, std::uint64_t seed) {
    moving_world w{o.entities, o.world, seed};
    server::interest_manager interest;
    if (radius > 0.0F) {
        interest.set_defaults({radius, o.budget});
        interest.use_grid<Position>(o.cell > 0.0F ? o.cell : radius / 2.0F,
                                    [](const Position& p) { return server::point{p.x, p.y}; });
    }
    interest.update(*w.world, w.world->take_changes());
    server::replicator replicator{w.types, interest,
                                  server::replicator_options{o.tick_rate, 30, 65'536}};

    std::mt19937_64 rng{seed + 1};
    std::uniform_real_distribution<float> where(0.0F, o.world);
    std::uniform_real_distribution<float> angle(0.0F, 6.2831853F);
    std::vector<focus_walker> walkers(k);
    std::uint64_t tick = 0;
    std::vector<protocol::mirror> mirrors;
    for (std::size_t i = 0; i < k; ++i) {
        const auto owner = static_cast<std::uint32_t>(i + 1);
        const float a = angle(rng);
        walkers[i] = focus_walker{{where(rng), where(rng)},
                                  {o.focus_speed * std::cos(a), o.focus_speed * std::sin(a)}};
        if (radius > 0.0F) {
            interest.set_focus(owner, walkers[i].at);
        }
        replicator.add_client(i + 1, owner);
    }
    for (std::size_t i = 0; i < std::min(o.mirrors, k); ++i) {
        mirrors.emplace_back(w.types.types());
        for (const auto& f : replicator.start_frames(*w.world, i + 1, tick)) {
            (void)mirrors.back().apply(*protocol::verify_server_frame(*f));
        }
    }

    run_result r;
    r.client_bytes.assign(k, 0);
    const float dt = static_cast<float>(1.0 / o.tick_rate);
    const auto apply = [&](std::size_t i, const protocol::frame& f) {
        if (!mirrors[i].apply(*protocol::verify_server_frame(*f))) {
            ++r.mirror_inconsistencies;
        }
    };
    for (std::size_t t = 0; t < o.warmup + o.ticks; ++t) {
        const bool measured = t >= o.warmup;
        const auto tick_start = clock_type::now();
        ++tick;
        w.move(dt);
        for (std::size_t i = 0; radius > 0.0F && i < k; ++i) {
            auto& f = walkers[i];
            f.at.x += f.velocity.x * dt;
            f.at.y += f.velocity.y * dt;
            if (f.at.x < 0.0F || f.at.x >= o.world) {
                f.velocity.x = -f.velocity.x;
            }
            if (f.at.y < 0.0F || f.at.y >= o.world) {
                f.velocity.y = -f.velocity.y;
            }
            interest.set_focus(static_cast<std::uint32_t>(i + 1), f.at);
        }
        const auto changes = w.world->take_changes();
        const auto update_start = clock_type::now();
        interest.update(*w.world, changes);
        const double update_ms = ms_since(update_start);
        const auto serve_start = clock_type::now();
        replicator.tick(*w.world, changes, tick,
                        [&](std::uint64_t id, const protocol::frame& delta,
                            const protocol::frame* checksum, const protocol::frame* owner_only) {
                            std::size_t bytes = delta->size();
                            bytes += checksum == nullptr ? 0 : (*checksum)->size();
                            bytes += owner_only == nullptr ? 0 : (*owner_only)->size();
                            if (measured) {
                                r.client_bytes[id - 1] += bytes;
                                r.bytes += bytes;
                            }
                            const std::size_t i = id - 1;
                            if (i < mirrors.size()) {
                                apply(i, delta);
                                if (owner_only != nullptr) {
                                    apply(i, *owner_only);
                                }
                                if (checksum != nullptr) {
                                    apply(i, *checksum);
                                }
                            }
                        });
        const double serve_ms = ms_since(serve_start);
        if (measured) {
            r.tick_ms.push_back(ms_since(tick_start));
            r.update_ms.push_back(update_ms);
            r.serve_ms.push_back(serve_ms);
        }
        if (t + 1 == o.warmup) {
            r.entered = replicator.stats().view_entered;
            r.left = replicator.stats().view_left;
            r.deferred = replicator.stats().view_deferred;
        }
    }
    r.entered = replicator.stats().view_entered - r.entered;
    r.left = replicator.stats().view_left - r.left;
    r.deferred = replicator.stats().view_deferred - r.deferred;
    double held = 0;
    for (std::size_t i = 0; i < k; ++i) {
        const server::client_view* v = replicator.view(i + 1);
        held += v == nullptr ? static_cast<double>(w.world->alive())
                             : (v->whole_world() ? static_cast<double>(w.world->alive())
                                                 : static_cast<double>(v->held()));
    }
    r.in_view = held / static_cast<double>(k);
    for (const auto& m : mirrors) {
        r.checksums_matched += m.statistics().checksums_matched;
        r.checksums_mismatched += m.statistics().checksums_mismatched;
    }
    return r;
}

void print_header() {
    std::printf(
        "%-10s %5s %8s %7s %7s | %8s %8s %8s %8s | %9s %9s %9s | %8s %8s %8s | %6s %7s %6s\n",
        "scenario", "K", "entities", "world", "radius", "tick p50", "tick p99", "update",
        "serve p99", "B/cli/s", "B/cli p99", "budget%", "enter/s", "leave/s", "in view",
        "sums ok", "sums bad", "RSS MB");
}

void print(const char* scenario, const options& o, std::size_t k, float radius, const run_result& r) {
    const double seconds = static_cast<double>(o.ticks) / o.tick_rate;
    std::vector<double> per_client;
    for (const auto b : r.client_bytes) {
        per_client.push_back(static_cast<double>(b) / seconds);
    }
    const double mean = static_cast<double>(r.bytes) / seconds / static_cast<double>(k);
    std::printf(
        "%-10s %5zu %8zu %7.0f %7.0f | %8.3f %8.3f %8.3f %8.3f | %9.0f %9.0f %8.1f%% | %8.2f %8.2f "
        "%8.1f | %6llu %7llu %6.0f\n",
        scenario, k, o.entities, o.world, radius, percentile(r.tick_ms, 0.5),
        percentile(r.tick_ms, 0.99), percentile(r.update_ms, 0.5), percentile(r.serve_ms, 0.99),
        mean, percentile(per_client, 0.99), o.budget > 0 ? 100.0 * mean / o.budget : 0.0,
        static_cast<double>(r.entered) / seconds / static_cast<double>(k),
        static_cast<double>(r.left) / seconds / static_cast<double>(k), r.in_view,
        static_cast<unsigned long long>(r.checksums_matched),
        static_cast<unsigned long long>(r.checksums_mismatched + r.mirror_inconsistencies),
        rss_mib());
    std::fflush(stdout);
}

// The interest rebuild alone: the policy's update and, per client, what it should see and
// the plan against what it holds (no encoding), over moving entities and foci.
void rebuild(const options& o) {
    for (const std::size_t k : o.clients) {
        moving_world w{o.entities, o.world, 7};
        server::interest_manager interest;
        interest.set_defaults({o.radius, 0.0});
        interest.use_grid<Position>(o.cell > 0.0F ? o.cell : o.radius / 2.0F,
                                    [](const Position& p) { return server::point{p.x, p.y}; });
        interest.update(*w.world, w.world->take_changes());
        std::mt19937_64 rng{9};
        std::uniform_real_distribution<float> where(0.0F, o.world);
        std::vector<server::client_view> views;
        for (std::size_t i = 0; i < k; ++i) {
            interest.set_focus(static_cast<std::uint32_t>(i + 1), {where(rng), where(rng)});
            views.emplace_back(static_cast<std::uint32_t>(i + 1));
        }
        server::tick_changes changes_by_entity;
        server::client_view::scratch scratch;
        std::vector<ecs::Entity> desired;
        std::vector<double> ms;
        double in_view = 0;
        for (std::size_t t = 0; t < o.warmup + o.ticks; ++t) {
            w.move(static_cast<float>(1.0 / o.tick_rate));
            const auto changes = w.world->take_changes();
            const auto start = clock_type::now();
            interest.update(*w.world, changes);
            changes_by_entity.build(*w.world, changes, w.types);
            const server::client_view::context ctx{*w.world, w.types, changes_by_entity, interest,
                                                   t + 1, o.tick_rate, scratch};
            for (std::size_t i = 0; i < k; ++i) {
                desired.clear();
                const auto owner = static_cast<std::uint32_t>(i + 1);
                interest.policy()->collect(*w.world, owner, interest.player(owner), desired);
                (void)views[i].plan(ctx, desired);
                in_view += t >= o.warmup ? static_cast<double>(desired.size()) : 0.0;
            }
            if (t >= o.warmup) {
                ms.push_back(ms_since(start));
            }
        }
        std::printf("rebuild: %zu entities, %zu clients, world %.0f, radius %.0f: p50 %.3f ms, p99 "
                    "%.3f ms per tick, %.1f entities in view per client\n",
                    o.entities, k, o.world, o.radius, percentile(ms, 0.5), percentile(ms, 0.99),
                    in_view / static_cast<double>(o.ticks * k));
        std::fflush(stdout);
    }
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    CLI::App app{"Interest management at scale, without sockets (docs/BENCHMARKS.md)"};
    app.add_option("--scenario", o.scenario, "big, rebuild or everything")
        ->check(CLI::IsMember({"big", "rebuild", "everything"}));
    app.add_option("--entities", o.entities, "Moving entities")->check(CLI::PositiveNumber);
    app.add_option("--clients", o.clients, "Client counts, one run each");
    app.add_option("--world", o.world, "World side (units)")->check(CLI::PositiveNumber);
    app.add_option("--radius", o.radius, "Radius of each area of interest")->check(CLI::PositiveNumber);
    app.add_option("--cell", o.cell, "Grid cell size (0: radius / 2)");
    app.add_option("--budget", o.budget, "Bytes per second per client (0: unlimited)");
    app.add_option("--ticks", o.ticks, "Measured ticks")->check(CLI::PositiveNumber);
    app.add_option("--warmup", o.warmup, "Ticks before measuring (joins settle)");
    app.add_option("--mirrors", o.mirrors, "Clients whose frames real mirrors apply");
    app.add_option("--focus-speed", o.focus_speed, "Units per second each focus moves");
    CLI11_PARSE(app, argc, argv);

    if (o.scenario == "rebuild") {
        if (app.count("--entities") == 0) {
            o.entities = 5'000;
        }
        if (app.count("--clients") == 0) {
            o.clients = {100};
        }
        if (app.count("--world") == 0) {
            o.world = 2'048.0F;
        }
        rebuild(o);
        return 0;
    }
    print_header();
    if (o.scenario == "everything") {
        // Every client sees everything: interest management (whole-world mode) against none,
        // alternated so that both meet the same machine state.
        if (app.count("--clients") == 0) {
            o.clients = {10};
        }
        if (app.count("--budget") == 0) {
            o.budget = 0;
        }
        for (const std::size_t k : o.clients) {
            for (int round = 0; round < 3; ++round) {
                print("none", o, k, 0.0F, run(o, k, 0.0F, 11));
                print("all", o, k, o.world * 2.0F, run(o, k, o.world * 2.0F, 11));
            }
        }
        return 0;
    }
    for (const std::size_t k : o.clients) {
        print("big", o, k, o.radius, run(o, k, o.radius, 5));
    }
    return 0;
}
