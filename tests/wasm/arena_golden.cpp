// The golden replay across builds (docs/PREDICTION.md, "Same results in every build"), native
// side.
//
//   arena_golden record FILE [--ticks N]  writes a recording: a server world running the arena's
//       flight systems with a recorded player, its frames as a client receives them two ticks
//       late, and every call a client makes to the prediction module (prediction_module.h)
//   arena_golden replay FILE [--time]     makes those calls on this build of the module and prints
//       one line per update: the input tick, and a digest of what the module reports; --time:
//       the update calls' times instead (bench/prediction_wasm.mjs)
//   arena_golden bench FILE               writes the bench's recording: one ship and 64 bullets,
//       300 updates that each replay 12 ticks (the server pushed the ship), then 300 that
//       predict one tick
//
// tests/wasm/golden.mjs replays the same file on the WebAssembly module (Node and chromium) and
// must print the same lines.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/arena/components.hpp"
#include "ecsnet/arena/flight.hpp"
#include "ecsnet/arena/game.hpp"
#include "ecsnet/client/prediction_module.h"
#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace {

namespace arena = ecsnet::arena;
namespace protocol = ecsnet::protocol;
namespace ecs = ecsnet::ecs;

enum op : std::uint8_t { end = 0, configure = 1, frame = 2, track = 3, input = 4, update = 5 };

constexpr std::uint32_t owner_id = 7;
constexpr double tick_rate = 30.0;
constexpr std::uint64_t input_lead = 4;  // the client's input runs this many ticks ahead
constexpr std::uint64_t delivery = 2;    // the server's frames reach it this many ticks later

class writer {
public:
    void u8(std::uint8_t v) { out_.push_back(v); }
    void u32(std::uint32_t v) { raw(&v, sizeof v); }
    void f64(double v) { raw(&v, sizeof v); }
    void bytes(std::span<const std::uint8_t> b) {
        u32(static_cast<std::uint32_t>(b.size()));
        out_.insert(out_.end(), b.begin(), b.end());
    }
    [[nodiscard]] const std::vector<std::uint8_t>& data() const noexcept { return out_; }

private:
    void raw(const void* p, std::size_t n) {
        const auto* b = static_cast<const std::uint8_t*>(p);
        out_.insert(out_.end(), b, b + n);
    }
    std::vector<std::uint8_t> out_;
};

class reader {
public:
    explicit reader(std::vector<std::uint8_t> in) : in_{std::move(in)} {}
    std::uint8_t u8() { return *take(1); }
    std::uint32_t u32() { return get<std::uint32_t>(); }
    double f64() { return get<double>(); }
    std::span<const std::uint8_t> bytes() {
        const std::uint32_t n = u32();
        return {take(n), n};
    }

private:
    template <typename T>
    T get() {
        T v;
        std::memcpy(&v, take(sizeof v), sizeof v);
        return v;
    }
    const std::uint8_t* take(std::size_t n) {
        if (at_ + n > in_.size()) {
            throw std::runtime_error("the recording ends in the middle of a record");
        }
        at_ += n;
        return in_.data() + at_ - n;
    }
    std::vector<std::uint8_t> in_;
    std::size_t at_{0};
};

// A player: a new stick every 5 to 40 ticks, the gun in bursts, the laser now and then. The
// stick takes any value of the wire's grid (1/64 steps): over 10,000 ticks every turn the
// game can receive, so every angle the steer system gives cos and sin, is played.
struct recorded_player {
    std::mt19937_64 rng{20261203};
    int left = 0;
    std::uint64_t changes = 0;
    arena::Pilot current{};

    arena::Pilot next() {
        if (left-- == 0) {
            left = std::uniform_int_distribution<int>{5, 40}(rng);
            const int thrust = std::uniform_int_distribution<int>{-32, 64}(rng);  // at rest a third of the time
            // Every one of the 129 turns in the first 129 changes (37 and 129 are coprime).
            const int turn = static_cast<int>((changes++ * 37) % 129) - 64;
            current = arena::Pilot{static_cast<float>(std::max(thrust, 0)) / 64.0F, static_cast<float>(turn) / 64.0F,
                                   std::uniform_int_distribution<int>{0, 2}(rng) == 0,
                                   std::uniform_int_distribution<int>{0, 9}(rng) == 0};
        }
        return current;
    }
};

// The server side of a recording: the arena's registry, the predicted systems (the same code)
// on a world with the player's ship, its encoder; and the recording's first calls.
struct recording_server {
    recording_server() {
        arena::register_components(types);
        pilot_type = types.types().find("pilot");
        if (pilot_type == nullptr) {
            throw std::runtime_error("the arena registers no pilot type");
        }
        arena::add_steer(systems);
        arena::add_gun(systems);
        arena::add_move(systems, arena::default_arena_size);
        arena::add_settle(systems);
        ship = world->create();
        world->emplace<arena::Position>(ship, arena::Position{100.0F, -50.0F});
        world->emplace<arena::Velocity>(ship);
        world->emplace<arena::Heading>(ship);
        world->emplace<arena::Pilot>(ship);
        world->emplace<arena::Ship>(ship);
        world->emplace<protocol::Owner>(ship, protocol::Owner{owner_id});
        world->emplace<arena::Stats>(ship, arena::Stats{0, arena::rules::max_ammo, 0});
        world->emplace<arena::ShipTimers>(ship, arena::ShipTimers{0.0F, arena::rules::reload_interval, 0.0F});
    }

    void send(const protocol::frame& f) {
        out.u8(frame);
        out.bytes(*f);
    }

    // configure (no time budget: a replay's length must not depend on how fast the machine
    // runs), Welcome, the snapshot, and track() of each entity given.
    void start(const std::string& config, const std::vector<ecs::Entity>& tracked) {
        world->discard_changes();
        out.u8(configure);
        out.bytes({reinterpret_cast<const std::uint8_t*>(config.data()), config.size()});
        out.u32(ecsnet_option_count);
        for (int i = 0; i < ecsnet_option_count; ++i) {
            out.f64(i == ecsnet_option_replay_budget_ms ? 1e9 : std::numeric_limits<double>::quiet_NaN());
        }
        send(protocol::encode(protocol::server_control{protocol::welcome{
            owner_id, protocol::protocol_version, static_cast<float>(tick_rate), 0, 0, {}, {}, types.types()}}));
        for (const protocol::frame& f : encoder.encode_snapshot(*world, 0)) {
            send(f);
        }
        if (const auto own = encoder.encode_owner_only_snapshot(*world, owner_id, 0)) {
            send(*own);
        }
        for (const ecs::Entity e : tracked) {
            out.u8(track);
            out.u32(e.index());
            out.u32(e.version());
        }
    }

    // The player's input for `tick`: sent, and given to the prediction.
    void input_for(std::uint64_t tick, const arena::Pilot& pilot) {
        const auto value = protocol::pack(pilot);
        out.u8(input);
        out.f64(static_cast<double>(tick));
        out.u32(ship.index());
        out.u32(ship.version());
        out.u32(1);
        out.u32(pilot_type->id);
        out.bytes({reinterpret_cast<const std::uint8_t*>(value.data()), value.size()});
    }

    void update_to(std::uint64_t tick) {
        out.u8(update);
        out.f64(static_cast<double>(tick));
        out.f64(1.0 / tick_rate);
    }

    // The server's tick `now`: its frames, the owner's included.
    std::vector<protocol::frame> run(std::uint64_t now) {
        systems.set_tick(now);
        (void)systems.run(*world);
        const auto changes = world->take_changes();
        std::vector<protocol::frame> frames{encoder.encode_delta(*world, changes, now)};
        for (const auto& own : encoder.encode_owner_only(*world, changes, now)) {
            if (own.owner == owner_id) {
                frames.push_back(own.bytes);
            }
        }
        return frames;
    }

    int save(const std::string& path) {
        out.u8(end);
        std::ofstream file{path, std::ios::binary};
        file.write(reinterpret_cast<const char*>(out.data().data()), static_cast<std::streamsize>(out.data().size()));
        if (!file) {
            throw std::runtime_error("cannot write " + path);
        }
        std::cerr << "arena_golden: " << out.data().size() << " bytes in " << path << "\n";
        return 0;
    }

    protocol::component_registry types;
    const protocol::component_info* pilot_type = nullptr;
    std::shared_ptr<ecs::World> world = ecs::World::make();
    ecs::Scheduler systems{1.0 / tick_rate};
    protocol::replication_encoder encoder{types};
    ecs::Entity ship;
    writer out;
};

int record(const std::string& path, std::uint64_t ticks) {
    recording_server server;
    // Bullets expire on the server (the client's prediction does not run this).
    server.systems.add("expire", ecs::component_access{}.writes<arena::BulletLife>(), [](ecs::SystemContext& ctx) {
        ctx.world.view<arena::BulletLife>().each([&](ecs::Entity e, arena::BulletLife& life) {
            if ((life.left -= static_cast<float>(ctx.dt)) <= 0.0F) {
                ctx.commands.destroy(e);
            }
        });
    });
    server.start("size=" + std::to_string(static_cast<int>(arena::default_arena_size)), {server.ship});

    recorded_player player;
    std::vector<arena::Pilot> inputs(ticks + input_lead + 1);
    std::deque<std::vector<protocol::frame>> in_flight;
    std::mt19937_64 pushes{7};
    for (std::uint64_t now = 1; now <= ticks; ++now) {
        if (in_flight.size() == delivery) {
            for (const protocol::frame& f : in_flight.front()) {
                server.send(f);
            }
            in_flight.pop_front();
        }
        // The client's input for now + lead: sent, and predicted at once.
        const std::uint64_t input_tick = now + input_lead;
        inputs[input_tick] = player.next();
        server.input_for(input_tick, inputs[input_tick]);
        server.update_to(input_tick);

        // The server's tick `now`, with the input the client sent for it. Now and then something
        // the client cannot know pushes the ship: a misprediction, a replay, a smoothed correction.
        server.world->write<arena::Pilot>(server.ship) = inputs[now];
        if (now % 97 == 0) {
            auto& v = server.world->write<arena::Velocity>(server.ship);
            v.x += std::uniform_real_distribution<float>{-150.0F, 150.0F}(pushes);
            v.y += std::uniform_real_distribution<float>{-150.0F, 150.0F}(pushes);
        }
        in_flight.push_back(server.run(now));
    }
    return server.save(path);
}

// The bench (docs/BENCHMARKS.md, "Prediction in the browser"): the prediction 12 ticks ahead of
// the server, which pushes the ship every tick, so that every reconcile replays 12 ticks of one
// ship and 64 bullets; then the server goes quiet and each update predicts one tick.
int record_bench(const std::string& path) {
    constexpr std::uint64_t lead = 12;
    constexpr std::uint64_t replays = 300;
    constexpr std::uint64_t steps = 300;
    constexpr int bullets = 64;
    recording_server server;
    std::vector<ecs::Entity> tracked{server.ship};
    for (int i = 0; i < bullets; ++i) {
        const ecs::Entity b = server.world->create();
        const float a = static_cast<float>(i) * 0.098F;
        server.world->emplace<arena::Position>(b, arena::Position{std::cos(a) * 100.0F, std::sin(a) * 100.0F});
        server.world->emplace<arena::Velocity>(b, arena::Velocity{std::cos(a) * 300.0F, std::sin(a) * 300.0F});
        server.world->emplace<arena::Bullet>(b, arena::Bullet{owner_id, static_cast<std::uint32_t>(i), 0});
        tracked.push_back(b);
    }
    server.start("", tracked);
    const arena::Pilot pilot{0.5F, 0.25F, false, false};
    for (std::uint64_t t = 1; t <= lead; ++t) {
        server.input_for(t, pilot);
    }
    server.update_to(lead);
    for (std::uint64_t now = 1; now <= replays + steps; ++now) {
        if (now <= replays) {
            server.world->write<arena::Pilot>(server.ship) = pilot;
            server.world->write<arena::Velocity>(server.ship).x += 5.0F;  // a push the client cannot know
            for (const protocol::frame& f : server.run(now)) {
                server.send(f);
            }
        }
        server.input_for(now + lead, pilot);
        server.update_to(now + lead);
    }
    return server.save(path);
}

// FNV-1a, 32 bits, over the bytes of the doubles: golden.mjs computes the same.
std::uint32_t digest(const double* values, std::size_t count, std::uint32_t h) {
    const auto* b = reinterpret_cast<const std::uint8_t*>(values);
    for (std::size_t i = 0; i < count * sizeof(double); ++i) {
        h = (h ^ b[i]) * 16777619U;
    }
    return h;
}

int replay(const std::string& path, bool timed) {
    std::ifstream file{path, std::ios::binary};
    if (!file) {
        throw std::runtime_error("cannot read " + path);
    }
    reader in{std::vector<std::uint8_t>{std::istreambuf_iterator<char>{file}, {}}};
    const char* dump = std::getenv("ECSNET_GOLDEN_DUMP");
    const double dump_tick = dump == nullptr ? -1.0 : std::atof(dump);
    std::vector<double> replay_times;  // updates with a misprediction: they replayed
    std::vector<double> step_times;
    const auto check = [](int ok, const char* what) {
        if (ok == 0) {
            throw std::runtime_error(std::string{what} + ": " + ecsnet_error());
        }
    };
    for (std::uint8_t kind = in.u8(); kind != end; kind = in.u8()) {
        switch (kind) {
            case configure: {
                const auto text = in.bytes();
                std::vector<double> options(in.u32());
                for (double& o : options) {
                    o = in.f64();
                }
                check(ecsnet_configure(std::string{text.begin(), text.end()}.c_str(), options.data(), options.size()),
                      "configure");
                break;
            }
            case frame: {
                const auto bytes = in.bytes();
                std::memcpy(ecsnet_frame_buffer(bytes.size()), bytes.data(), bytes.size());
                check(ecsnet_receive(bytes.size()), "receive");
                break;
            }
            case track: {
                const std::uint32_t index = in.u32();
                check(ecsnet_track(index, in.u32()), "track");
                break;
            }
            case input: {
                const double tick = in.f64();
                const std::uint32_t index = in.u32();
                const std::uint32_t version = in.u32();
                for (std::uint32_t n = in.u32(); n > 0; --n) {
                    const std::uint32_t type = in.u32();
                    const auto bytes = in.bytes();
                    check(ecsnet_input_value(type, bytes.data(), bytes.size()), "input value");
                }
                check(ecsnet_set_input(tick, index, version), "set input");
                break;
            }
            case update: {
                const double tick = in.f64();
                const double elapsed = in.f64();
                const auto started = std::chrono::steady_clock::now();
                check(ecsnet_update(tick, elapsed), "update");
                if (timed) {
                    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - started;
                    std::size_t n = 0;
                    (void)ecsnet_events(&n);
                    (n > 0 ? replay_times : step_times).push_back(took.count());
                    break;
                }
                std::size_t views = 0;
                std::size_t events = 0;
                const double* view = ecsnet_view(&views);
                const double* event = ecsnet_events(&events);
                const std::uint32_t h = digest(event, events, digest(view, views, 2166136261U));
                std::printf("%.0f %zu %zu %08x\n", tick, views, events, h);
                if (dump_tick == tick) {  // ECSNET_GOLDEN_DUMP=<input tick>: the view's numbers
                    for (std::size_t i = 0; i < views; ++i) {
                        std::fprintf(stderr, "%zu %.9g %a\n", i, view[i], view[i]);
                    }
                }
                break;
            }
            default: throw std::runtime_error("unknown record " + std::to_string(kind));
        }
    }
    if (timed) {
        const auto median = [](std::vector<double> v) {
            if (v.empty()) {
                return 0.0;
            }
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        std::printf("native: replay of 12 ticks p50 %.1f us (%zu), one predicted tick p50 %.1f us (%zu)\n",
                    median(replay_times), replay_times.size(), median(step_times), step_times.size());
        return 0;
    }
    const double* stats = ecsnet_stats();
    // Mispredictions, ticks replayed, spawns predicted, matched and refused, and a digest of all.
    std::printf("stats %.0f %.0f %.0f %.0f %.0f %08x\n", stats[2], stats[3], stats[10], stats[11],
                stats[12], digest(stats, 17, 2166136261U));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        if (args.size() >= 2 && args[0] == "record") {
            std::uint64_t ticks = 10'000;
            if (args.size() == 4 && args[2] == "--ticks") {
                ticks = std::stoull(args[3]);
            } else if (args.size() != 2) {
                throw std::invalid_argument("record FILE [--ticks N]");
            }
            return record(args[1], ticks);
        }
        if ((args.size() == 2 || (args.size() == 3 && args[2] == "--time")) && args[0] == "replay") {
            return replay(args[1], args.size() == 3);
        }
        if (args.size() == 2 && args[0] == "bench") {
            return record_bench(args[1]);
        }
        std::cerr << "usage: arena_golden record FILE [--ticks N] | arena_golden replay FILE [--time] | "
                     "arena_golden bench FILE\n";
        return args.size() == 1 && (args[0] == "--help" || args[0] == "-h") ? 0 : 2;
    } catch (const std::exception& e) {
        std::cerr << "arena_golden: " << e.what() << "\n";
        return 1;
    }
}
