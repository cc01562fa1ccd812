// Costs of replication (docs/BENCHMARKS.md): encoding a tick's delta, building a snapshot,
// applying deltas in a mirror, the world checksum. Entity count from ECSNET_BENCH_N (default
// 100,000).
//
// BM_EncodeDelta ... BM_WorldChecksum: the demo game's Position and Velocity on a freshly
// spawned world, as measured before issue 13 (bench/compare.sh compares them across revisions).
// BM_Moving*<T>/{fresh,churned}: the figures issue 13 asks for, every entity moving each tick,
// for the demo's Position {float x, y} and a QuantizedPosition (1/64 unit over 4096 units)
// defined here, on a fresh world and on a churned one (spawn N, destroy a random half, respawn,
// four times: storage order no longer follows index order). Counters:
//   bytes_per_entity   wire bytes per moving entity per tick (delta) or per entity (snapshot)
//   per_entity         encode / apply time per changed entity
//   in_order           share of the position storage whose next entry has the next index
// BM_MirrorReplay{Deltas,Snapshot}, with ECSNET_BENCH_RECORDING=<file>: the C++ mirror on the
// stream the TypeScript SDK's decode bench recorded (sdk/ts/bench/decode.mjs --keep DIR), the
// same bytes; registered only when the variable is set.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "bench_generated.h"  // flatc, from bench.fbs
#include "ecsnet/demo/components.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace ecsnet::bench {

// 1/64 unit over a 4096-unit world (issue 13's target: <= 6 bytes per moving entity per tick).
struct QuantizedPosition {
    float x{};
    float y{};
};

}  // namespace ecsnet::bench

template <>
struct ecsnet::protocol::replicated<ecsnet::bench::QuantizedPosition>
    : ecsnet::protocol::replicate<ecsnet::bench::wire::QuantizedPosition, "quantized_position",
                                  ecsnet::protocol::replicate_options{
                                      .quantized = {.min = 0, .max = 4096, .step = 1.0 / 64}}> {};

namespace {

namespace ecs = ecsnet::ecs;
namespace protocol = ecsnet::protocol;
using ecsnet::bench::QuantizedPosition;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;

constexpr float world_size = 4096.0F;

std::size_t entity_count() {
    const char* n = std::getenv("ECSNET_BENCH_N");
    return n != nullptr ? static_cast<std::size_t>(std::strtoull(n, nullptr, 10)) : 100'000;
}

// The demo's types and the quantized position, as a server registers them.
const protocol::component_registry& types() {
    static const protocol::component_registry registry = [] {
        protocol::component_registry r;
        ecsnet::demo::register_components(r);
        r.add<QuantizedPosition>();
        return r;
    }();
    return registry;
}

template <typename P>
void add_moving(ecs::World& world, ecs::Entity e, std::size_t i) {
    world.emplace<P>(e, static_cast<float>(i % 4000), static_cast<float>(i / 4000 % 4000));
    world.emplace<Velocity>(e, 1.0F, 0.5F);
}

std::shared_ptr<ecs::World> moving_world(std::size_t n) {
    auto world = ecs::World::make();
    for (std::size_t i = 0; i < n; ++i) {
        add_moving<Position>(*world, world->create(), i);
    }
    world->discard_changes();
    return world;
}

// n moving entities with P; churned: then four times, a random half destroyed and as many
// spawned again (recycled indices, appended to the storages).
template <typename P>
std::shared_ptr<ecs::World> moving_world(std::size_t n, bool churned) {
    auto world = ecs::World::make();
    std::vector<ecs::Entity> alive;
    alive.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        alive.push_back(world->create());
        add_moving<P>(*world, alive.back(), i);
    }
    if (churned) {
        std::mt19937_64 rng{13};
        for (int round = 0; round < 4; ++round) {
            std::shuffle(alive.begin(), alive.end(), rng);
            const std::size_t half = alive.size() / 2;
            for (std::size_t i = 0; i < half; ++i) {
                world->destroy(alive[i]);
            }
            alive.erase(alive.begin(), alive.begin() + static_cast<std::ptrdiff_t>(half));
            for (std::size_t i = 0; i < half; ++i) {
                alive.push_back(world->create());
                add_moving<P>(*world, alive.back(), i * 7 + static_cast<std::size_t>(round));
            }
        }
    }
    world->discard_changes();
    return world;
}

// Every entity moves: what one tick of the movement system produces.
template <typename P>
void move_all(ecs::World& world) {
    world.view<P, const Velocity>().each([](P& p, const Velocity& v) {
        p.x += v.x;
        p.y += v.y;
        if constexpr (std::is_same_v<P, QuantizedPosition>) {
            p.x = p.x >= world_size ? p.x - world_size : p.x;  // stay in the quantized range
            p.y = p.y >= world_size ? p.y - world_size : p.y;
        }
    });
}

void move_all(ecs::World& world) {
    move_all<Position>(world);
}

// Seconds per entity, printed with an SI prefix: "5.2n" is 5.2 ns per entity.
void per_entity(benchmark::State& state, std::size_t n) {
    state.counters["per_entity"] = benchmark::Counter(
        static_cast<double>(n),
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// How much of P's storage lists entities in index order (1 on a fresh world).
template <typename P>
double in_order(const ecs::World& world) {
    const auto* storage = world.find_storage<P>();
    const auto entities = storage->entities();
    std::size_t next = 0;
    for (std::size_t i = 1; i < entities.size(); ++i) {
        next += entities[i].index() == entities[i - 1].index() + 1 ? 1 : 0;
    }
    return entities.size() < 2 ? 1.0
                               : static_cast<double>(next) / static_cast<double>(entities.size() - 1);
}

// ---- the figures from before issue 13 (same names, same work) -------------------------------

void BM_EncodeDelta(benchmark::State& state) {
    const std::size_t n = entity_count();
    auto world = moving_world(n);
    protocol::replication_encoder encoder{types()};
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
    protocol::replication_encoder encoder{types()};
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
    protocol::replication_encoder encoder{types()};
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
    protocol::replication_encoder encoder{types()};
    protocol::mirror mirror{types().types()};
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
        benchmark::DoNotOptimize(protocol::checksum::of_world(*world, types()));
    }
    per_entity(state, n);
}
BENCHMARK(BM_WorldChecksum)->Unit(benchmark::kMillisecond);

// ---- issue 13: plain and quantized positions, fresh and churned worlds ----------------------

// One tick's delta when every entity moved: bytes per moving entity, ns per changed entity.
template <typename P>
void BM_MovingDelta(benchmark::State& state, bool churned) {
    const std::size_t n = entity_count();
    auto world = moving_world<P>(n, churned);
    protocol::replication_encoder encoder{types()};
    std::uint64_t tick = 0;
    std::size_t bytes = 0;
    for (auto _ : state) {
        state.PauseTiming();
        move_all<P>(*world);
        auto changes = world->take_changes();
        state.ResumeTiming();
        const auto frame = encoder.encode_delta(*world, changes, ++tick);
        bytes = frame->size();
        benchmark::DoNotOptimize(frame);
    }
    per_entity(state, n);
    state.counters["bytes_per_entity"] = static_cast<double>(bytes) / static_cast<double>(n);
    state.counters["in_order"] = in_order<P>(*world);
}

// The whole world for a joining client: bytes per entity (P and Velocity), ns per entity.
template <typename P>
void BM_MovingSnapshot(benchmark::State& state, bool churned) {
    const std::size_t n = entity_count();
    auto world = moving_world<P>(n, churned);
    protocol::replication_encoder encoder{types()};
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
    state.counters["in_order"] = in_order<P>(*world);
}

// A client applying one tick's delta (verification included): ns per changed entity.
template <typename P>
void BM_MovingMirrorApply(benchmark::State& state, bool churned) {
    const std::size_t n = entity_count();
    auto world = moving_world<P>(n, churned);
    protocol::replication_encoder encoder{types()};
    protocol::mirror mirror{types().types()};
    for (const auto& f : encoder.encode_snapshot(*world, 0)) {
        mirror.apply(*protocol::verify_server_frame(*f));
    }
    std::uint64_t tick = 0;
    for (auto _ : state) {
        state.PauseTiming();
        move_all<P>(*world);
        auto changes = world->take_changes();
        const auto frame = encoder.encode_delta(*world, changes, ++tick);
        state.ResumeTiming();
        const auto* message = protocol::verify_server_frame(*frame);
        if (message == nullptr || !mirror.apply(*message)) {
            state.SkipWithError(("mirror refused a delta: " + mirror.error()).c_str());
            break;
        }
    }
    per_entity(state, n);
    if (mirror.checksum() != protocol::checksum::of_world(*world, types())) {
        state.SkipWithError("the mirror differs from the world");
    }
}

// Named BM_Moving<kind>/<type>/<world>, e.g. BM_MovingDelta/QuantizedPosition/churned.
template <typename P>
void register_moving(const std::string& kind, void (*fn)(benchmark::State&, bool),
                     const char* type) {
    for (const bool churned : {false, true}) {
        const std::string name = kind + "/" + type + (churned ? "/churned" : "/fresh");
        benchmark::RegisterBenchmark(name.c_str(), fn, churned)->Unit(benchmark::kMillisecond);
    }
}

const bool moving_registered = [] {
    register_moving<Position>("BM_MovingDelta", BM_MovingDelta<Position>, "Position");
    register_moving<QuantizedPosition>("BM_MovingDelta", BM_MovingDelta<QuantizedPosition>,
                                       "QuantizedPosition");
    register_moving<Position>("BM_MovingSnapshot", BM_MovingSnapshot<Position>, "Position");
    register_moving<QuantizedPosition>("BM_MovingSnapshot", BM_MovingSnapshot<QuantizedPosition>,
                                       "QuantizedPosition");
    register_moving<Position>("BM_MovingMirrorApply", BM_MovingMirrorApply<Position>, "Position");
    register_moving<QuantizedPosition>("BM_MovingMirrorApply",
                                       BM_MovingMirrorApply<QuantizedPosition>,
                                       "QuantizedPosition");
    return true;
}();

// A stream the TypeScript SDK's decode bench recorded (sdk/ts/bench/decode.mjs --keep DIR):
// Welcome, the Snapshot, Deltas and Checksums, each frame with its length prefix. The same bytes
// the SDK replays, so the two mirrors' times per entity compare on one stream.
struct recording {
    protocol::schema types;
    std::vector<std::vector<std::uint8_t>> snapshot;  // its frames, in order
    std::vector<std::vector<std::uint8_t>> deltas;
    std::size_t entities = 0;
};

const recording& recorded_stream() {
    static const recording r = [] {
        recording out;
        const char* path = std::getenv("ECSNET_BENCH_RECORDING");
        std::ifstream in{path, std::ios::binary};
        const std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>{in}, {}};
        if (!in.eof() && !in.good()) {
            throw std::runtime_error(std::string{"cannot read "} + path);
        }
        for (std::size_t at = 0; at + protocol::frame_prefix_bytes <= bytes.size();) {
            std::uint32_t length = 0;
            std::memcpy(&length, bytes.data() + at, sizeof length);  // little-endian, as x86
            const std::size_t end = at + protocol::frame_prefix_bytes + length;
            if (end > bytes.size()) {
                throw std::runtime_error("the recording ends inside a frame");
            }
            std::vector<std::uint8_t> frame(bytes.begin() + static_cast<std::ptrdiff_t>(at),
                                            bytes.begin() + static_cast<std::ptrdiff_t>(end));
            at = end;
            const auto* message = protocol::verify_server_frame(frame);
            if (message == nullptr) {
                throw std::runtime_error("the recording holds a malformed frame");
            }
            switch (message->body_type()) {
                case ecsnet::wire::ServerBody::Welcome:
                    out.types = std::get<protocol::welcome>(*protocol::decode_server_control(*message)).components;
                    break;
                case ecsnet::wire::ServerBody::Snapshot:
                    out.snapshot.push_back(std::move(frame));
                    break;
                case ecsnet::wire::ServerBody::Delta:
                    out.deltas.push_back(std::move(frame));
                    break;
                default:
                    break;  // Checksums: the SDK's bench checks them once, outside its timing
            }
        }
        protocol::mirror check{out.types};
        for (const auto& f : out.snapshot) {
            (void)check.apply(*protocol::verify_server_frame(f));
        }
        if (!check.ready() || out.deltas.empty()) {
            throw std::runtime_error("the recording has no whole Snapshot, or no Delta");
        }
        out.entities = check.size();
        return out;
    }();
    return r;
}

std::unique_ptr<protocol::mirror> joined_mirror(const recording& r) {
    auto m = std::make_unique<protocol::mirror>(r.types);
    for (const auto& f : r.snapshot) {
        (void)m->apply(*protocol::verify_server_frame(f));
    }
    return m;
}

// Every Delta of the recording verified and applied, as the SDK's "decode + apply"; per_entity
// is per entity of the world (the demo moves every one each tick).
void BM_MirrorReplayDeltas(benchmark::State& state) {
    const recording& r = recorded_stream();
    for (auto _ : state) {
        state.PauseTiming();
        const auto m = joined_mirror(r);
        state.ResumeTiming();
        for (const auto& f : r.deltas) {
            const auto* message = protocol::verify_server_frame(f);
            if (message == nullptr || !m->apply(*message)) {
                state.SkipWithError("the mirror refused a Delta of the recording");
                return;
            }
        }
    }
    state.counters["per_delta"] = benchmark::Counter(
        static_cast<double>(r.deltas.size()),
        benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
    per_entity(state, r.entities * r.deltas.size());
}

// The Snapshot's frames verified and applied to a new mirror.
void BM_MirrorReplaySnapshot(benchmark::State& state) {
    const recording& r = recorded_stream();
    for (auto _ : state) {
        benchmark::DoNotOptimize(joined_mirror(r));
    }
    per_entity(state, r.entities);
}

const bool replay_registered = [] {
    if (std::getenv("ECSNET_BENCH_RECORDING") != nullptr) {
        benchmark::RegisterBenchmark("BM_MirrorReplayDeltas", BM_MirrorReplayDeltas)->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark("BM_MirrorReplaySnapshot", BM_MirrorReplaySnapshot)->Unit(benchmark::kMicrosecond);
    }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
