// Costs of replication (docs/BENCHMARKS.md): encoding a tick's delta, building a snapshot,
// applying deltas in a mirror. Entity count from ECSNET_BENCH_N (default 100,000).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace {

namespace ecs = ecsnet::ecs;
namespace protocol = ecsnet::protocol;
using protocol::Position;
using protocol::Velocity;

std::size_t entity_count() {
    const char* n = std::getenv("ECSNET_BENCH_N");
    return n != nullptr ? static_cast<std::size_t>(std::strtoull(n, nullptr, 10)) : 100'000;
}

std::shared_ptr<ecs::World> moving_world(std::size_t n) {
    auto world = ecs::World::make();
    for (std::size_t i = 0; i < n; ++i) {
        const auto e = world->create();
        world->emplace<Position>(e, static_cast<float>(i), 0.0F);
        world->emplace<Velocity>(e, 1.0F, 0.5F);
    }
    world->discard_changes();
    return world;
}

// Every entity moves: what one tick of the movement system produces.
void move_all(ecs::World& world) {
    world.view<Position, const Velocity>().each([](Position& p, const Velocity& v) {
        p.x += v.x;
        p.y += v.y;
    });
}

// Seconds per entity, printed with an SI prefix: "5.2n" is 5.2 ns per entity.
void per_entity(benchmark::State& state, std::size_t n) {
    state.counters["per_entity"] = benchmark::Counter(
        static_cast<double>(n),
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_EncodeDelta(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto world = moving_world(n);
    protocol::replication_encoder encoder;
    std::uint64_t tick = 0;
    std::size_t bytes = 0;
    for (auto _ : state) {
        state.PauseTiming();  // once per N entities: its cost is amortised
        move_all(*world);
        auto changes = world->take_changes();
        state.ResumeTiming();
        const auto frame = encoder.encode_delta(*world, changes, ++tick);
        bytes = frame->size();
        benchmark::DoNotOptimize(frame);
    }
    per_entity(state, n);
    state.counters["bytes_per_entity"] = static_cast<double>(bytes) / static_cast<double>(n);
}
BENCHMARK(BM_EncodeDelta)->Unit(benchmark::kMillisecond);

void BM_TakeChangesAndEncode(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto world = moving_world(n);
    protocol::replication_encoder encoder;
    std::uint64_t tick = 0;
    for (auto _ : state) {
        state.PauseTiming();
        move_all(*world);
        state.ResumeTiming();
        auto changes = world->take_changes();
        benchmark::DoNotOptimize(encoder.encode_delta(*world, changes, ++tick));
    }
    per_entity(state, n);
}
BENCHMARK(BM_TakeChangesAndEncode)->Unit(benchmark::kMillisecond);

void BM_EncodeSnapshot(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto world = moving_world(n);
    protocol::replication_encoder encoder;
    std::size_t bytes = 0;
    for (auto _ : state) {
        const auto frames = encoder.encode_snapshot(*world, 1);
        bytes = 0;
        for (const auto& f : frames) {
            bytes += f->size();
        }
        benchmark::DoNotOptimize(frames);
    }
    per_entity(state, n);
    state.counters["bytes_per_entity"] = static_cast<double>(bytes) / static_cast<double>(n);
}
BENCHMARK(BM_EncodeSnapshot)->Unit(benchmark::kMillisecond);

void BM_MirrorApplyDelta(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto world = moving_world(n);
    protocol::replication_encoder encoder;
    protocol::mirror mirror;
    for (const auto& f : encoder.encode_snapshot(*world, 0)) {
        mirror.apply(*protocol::verify_server_frame(*f));
    }
    std::uint64_t tick = 0;
    for (auto _ : state) {
        state.PauseTiming();
        move_all(*world);
        auto changes = world->take_changes();
        const auto frame = encoder.encode_delta(*world, changes, ++tick);
        state.ResumeTiming();
        // Verification included: a client must verify every frame it applies.
        const auto* message = protocol::verify_server_frame(*frame);
        if (message == nullptr || !mirror.apply(*message)) {
            state.SkipWithError("mirror refused a delta");
            break;
        }
    }
    per_entity(state, n);
}
BENCHMARK(BM_MirrorApplyDelta)->Unit(benchmark::kMillisecond);

void BM_WorldChecksum(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto world = moving_world(n);
    for (auto _ : state) {
        benchmark::DoNotOptimize(protocol::checksum::of_world(*world));
    }
    per_entity(state, n);
}
BENCHMARK(BM_WorldChecksum)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
