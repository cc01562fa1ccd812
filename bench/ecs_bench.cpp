// Per-entity costs of the ECS core, over the operations of EnTT 3.16's benchmark list.
//
// One benchmark iteration processes all N entities (N = $ECSNET_BENCH_N, default 1,000,000);
// the figure to read is the counter ns_per_entity (CPU time of one iteration / N). The
// per-iteration setup that an operation consumes (a fresh world for create, live entities for
// destroy) runs under PauseTiming once per iteration, i.e. once per N entities, so its own
// overhead is negligible. Where change tracking would accumulate across iterations, each
// iteration starts a new tick (discard_changes, O(1)) inside the timed loop.
//
// Unless a benchmark says otherwise the world tracks changes (the default, which replication
// needs), and every write happens in a tick after the entities were created: writes to
// entities created in the same tick take a shortcut and would flatter the figures.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "ecsnet/ecs/world.hpp"

namespace {

using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;

struct Position {
    float x;
    float y;
};

struct Velocity {
    float x;
    float y;
};

std::size_t entity_count() {
    static const std::size_t n = [] {
        const char* text = std::getenv("ECSNET_BENCH_N");
        if (text == nullptr || *text == '\0') {
            return std::size_t{1'000'000};
        }
        const auto parsed = std::strtoull(text, nullptr, 10);
        return parsed == 0 ? std::size_t{1'000'000} : static_cast<std::size_t>(parsed);
    }();
    return n;
}

// Reports ns_per_entity = time of one iteration / N (an inverted per-entity rate).
void report_per_entity(benchmark::State& state, std::size_t n) {
    state.counters["ns_per_entity"] =
        benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                            static_cast<std::int64_t>(n));
}

world_options untracked() {
    world_options options;
    options.track_changes = false;
    return options;
}

// A world with n entities, each with Position and Velocity, in a tick after their creation.
std::shared_ptr<World> populated(std::size_t n, world_options options = {}) {
    auto w = World::make(options);
    for (std::size_t i = 0; i < n; ++i) {
        const Entity e = w->create();
        w->emplace<Position>(e, static_cast<float>(i), 0.0F);
        w->emplace<Velocity>(e, 1.0F, 2.0F);
    }
    w->discard_changes();
    return w;
}

std::vector<Entity> live_entities(const World& w) {
    std::vector<Entity> out;
    out.reserve(w.alive());
    w.each([&](Entity e) { out.push_back(e); });
    return out;
}

std::vector<Entity> shuffled(std::vector<Entity> entities) {
    std::mt19937_64 rng{42};
    std::shuffle(entities.begin(), entities.end(), rng);
    return entities;
}

// ---- entities ---------------------------------------------------------------------------

// create() into a fresh world each iteration (like EnTT's: growth included).
void BM_Create(benchmark::State& state, world_options options) {
    const std::size_t n = entity_count();
    std::shared_ptr<World> w;
    for (auto _ : state) {
        state.PauseTiming();
        w.reset();
        w = World::make(options);
        state.ResumeTiming();
        for (std::size_t i = 0; i < n; ++i) {
            benchmark::DoNotOptimize(w->create());
        }
    }
    report_per_entity(state, n);
}
BENCHMARK_CAPTURE(BM_Create, tracked, world_options{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Create, untracked, untracked())->Unit(benchmark::kMillisecond);

// destroy() of N entities without components, created in an earlier tick (so each destroy
// is recorded in the change set). The entities are re-created, untimed, every iteration.
void BM_Destroy(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = World::make();
    std::vector<Entity> entities(n);
    for (auto _ : state) {
        state.PauseTiming();
        for (auto& e : entities) {
            e = w->create();
        }
        w->discard_changes();
        state.ResumeTiming();
        for (const Entity e : entities) {
            w->destroy(e);
        }
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_Destroy)->Unit(benchmark::kMillisecond);

// create() + emplace<Position> + emplace<Velocity> into a fresh world each iteration.
void BM_CreateWith2Components(benchmark::State& state) {
    const std::size_t n = entity_count();
    std::shared_ptr<World> w;
    for (auto _ : state) {
        state.PauseTiming();
        w.reset();
        w = World::make();
        state.ResumeTiming();
        for (std::size_t i = 0; i < n; ++i) {
            const Entity e = w->create();
            w->emplace<Position>(e, 1.0F, 2.0F);
            w->emplace<Velocity>(e, 3.0F, 4.0F);
        }
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_CreateWith2Components)->Unit(benchmark::kMillisecond);

// ---- components -------------------------------------------------------------------------

// emplace<Velocity> on every entity, then erase<Velocity> from every entity: one add and one
// remove per entity. The world returns to its starting state, so iterations are identical.
void BM_AddRemove(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = World::make();
    std::vector<Entity> entities(n);
    for (std::size_t i = 0; i < n; ++i) {
        entities[i] = w->create();
        w->emplace<Position>(entities[i], 0.0F, 0.0F);
    }
    w->register_component<Velocity>();
    for (auto _ : state) {
        w->discard_changes();  // a new tick: the add is recorded in full each time
        for (const Entity e : entities) {
            w->emplace<Velocity>(e, 1.0F, 1.0F);
        }
        for (const Entity e : entities) {
            w->erase<Velocity>(e);
        }
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_AddRemove)->Unit(benchmark::kMillisecond);

// storage<Position>().get(e) in random order: the fastest lookup.
void BM_GetStorageRandom(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    const auto order = shuffled(live_entities(*w));
    const auto& positions = w->storage<Position>();
    for (auto _ : state) {
        float sum = 0.0F;
        for (const Entity e : order) {
            sum += positions.get(e).x;
        }
        benchmark::DoNotOptimize(sum);
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_GetStorageRandom)->Unit(benchmark::kMillisecond);

// world.get<Position>(e) in random order: type lookup + checks + storage lookup.
void BM_GetWorldRandom(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    const auto order = shuffled(live_entities(*w));
    const World& cw = *w;
    for (auto _ : state) {
        float sum = 0.0F;
        for (const Entity e : order) {
            sum += cw.get<Position>(e).x;
        }
        benchmark::DoNotOptimize(sum);
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_GetWorldRandom)->Unit(benchmark::kMillisecond);

// Two storages, Position and Velocity, in random order.
void BM_Get2StorageRandom(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    const auto order = shuffled(live_entities(*w));
    const auto& positions = w->storage<Position>();
    const auto& velocities = w->storage<Velocity>();
    for (auto _ : state) {
        float sum = 0.0F;
        for (const Entity e : order) {
            sum += positions.get(e).x + velocities.get(e).y;
        }
        benchmark::DoNotOptimize(sum);
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_Get2StorageRandom)->Unit(benchmark::kMillisecond);

// world.get<Position, Velocity>(e) in random order.
void BM_Get2WorldRandom(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    const auto order = shuffled(live_entities(*w));
    const World& cw = *w;
    for (auto _ : state) {
        float sum = 0.0F;
        for (const Entity e : order) {
            const auto [pos, vel] = cw.get<Position, Velocity>(e);
            sum += pos.x + vel.y;
        }
        benchmark::DoNotOptimize(sum);
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_Get2WorldRandom)->Unit(benchmark::kMillisecond);

// ---- iteration --------------------------------------------------------------------------

// view<const Position>: plain read iteration, nothing recorded.
void BM_Iterate1Read(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    for (auto _ : state) {
        std::size_t hits = 0;  // an integer count: a float sum would time the adder's latency
        w->view<const Position>().each([&](const Position& pos) { hits += pos.x > 0.5F; });
        benchmark::DoNotOptimize(hits);
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_Iterate1Read)->Unit(benchmark::kMillisecond);

// view<Position> writing pos.x: every entity is marked updated. Each iteration is a new tick,
// as in a game loop where a system writes every entity every tick.
void BM_Iterate1Write(benchmark::State& state, world_options options) {
    const std::size_t n = entity_count();
    auto w = populated(n, options);
    for (auto _ : state) {
        w->discard_changes();
        w->view<Position>().each([](Position& pos) { pos.x = 0.0F; });
    }
    benchmark::DoNotOptimize(w->get<Position>(w->current(0)).x);
    report_per_entity(state, n);
}
BENCHMARK_CAPTURE(BM_Iterate1Write, tracked, world_options{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Iterate1Write, untracked, untracked())->Unit(benchmark::kMillisecond);

// view<const Position, const Velocity>: read-only, nothing recorded.
void BM_Iterate2Read(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    for (auto _ : state) {
        std::size_t hits = 0;
        w->view<const Position, const Velocity>().each(
            [&](const Position& pos, const Velocity& vel) { hits += pos.x > vel.x; });
        benchmark::DoNotOptimize(hits);
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_Iterate2Read)->Unit(benchmark::kMillisecond);

// view<Position, const Velocity>: pos += vel; Position marked updated on every entity.
void BM_Iterate2Write(benchmark::State& state, world_options options) {
    const std::size_t n = entity_count();
    auto w = populated(n, options);
    for (auto _ : state) {
        w->discard_changes();
        w->view<Position, const Velocity>().each([](Position& pos, const Velocity& vel) {
            pos.x += vel.x;
            pos.y += vel.y;
        });
    }
    benchmark::DoNotOptimize(w->get<Position>(w->current(0)).x);
    report_per_entity(state, n);
}
BENCHMARK_CAPTURE(BM_Iterate2Write, tracked, world_options{})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Iterate2Write, untracked, untracked())->Unit(benchmark::kMillisecond);

// patch<Position> on every entity of a read view, with an on_update listener connected: the
// write is recorded and the listener runs for every entity.
void BM_IteratePatchWithListener(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    std::size_t updates = 0;
    w->on_update<Position>().connect([&](World&, Entity) { ++updates; });
    for (auto _ : state) {
        w->discard_changes();
        w->view<const Position>().each([&](Entity e, const Position&) {
            w->patch<Position>(e, [](Position& p) { p.x = 0; });
        });
    }
    benchmark::DoNotOptimize(updates);
    report_per_entity(state, n);
}
BENCHMARK(BM_IteratePatchWithListener)->Unit(benchmark::kMillisecond);

// ---- change tracking --------------------------------------------------------------------

// take_changes() after patch<Position> on all N entities (untimed): the cost of turning a
// tick's marks into a change set, per changed entity.
void BM_TakeChangesAfterPatch(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto w = populated(n);
    const auto entities = live_entities(*w);
    std::size_t updated = 0;
    for (auto _ : state) {
        state.PauseTiming();
        for (const Entity e : entities) {
            w->patch<Position>(e, [](Position& p) { p.y += 1.0F; });
        }
        state.ResumeTiming();
        const auto changes = w->take_changes();
        updated = changes.components.empty() ? 0 : changes.components.front().updated.size();
        benchmark::DoNotOptimize(changes);
    }
    if (updated != n) {
        state.SkipWithError("take_changes did not report every patched entity");
    }
    report_per_entity(state, n);
}
BENCHMARK(BM_TakeChangesAfterPatch)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
