// THE property of replication: whatever a server does to its world, a mirror that follows the
// stream (from the start, or joining late from a snapshot) ends every tick equal to the world.
//
// A server world is driven by random operations (spawn with random component sets, destroy
// with quick index reuse, add / replace / patch / remove / clear, moves through a writing
// view, changes undone within the tick) over many ticks. After every tick the delta goes
// through the real encoder, the frame verifier and every mirror; each mirror's checksum must
// equal checksum::of_world every tick, and the full content (index:version set, every
// component value) is compared every few ticks and whenever a client joins or leaves.
//
// The seed is fixed and printed with every failure; ECSNET_CONVERGENCE_SEED=<n> replays or
// explores another one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using proto::Health;
using proto::Lifetime;
using proto::Name;
using proto::Owner;
using proto::Position;
using proto::Velocity;
using rng_type = std::mt19937_64;

std::uint64_t seed_or(std::uint64_t fallback) {
    const char* text = std::getenv("ECSNET_CONVERGENCE_SEED");
    return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 0) : fallback;
}

// ---- comparing a mirror with the world --------------------------------------------------

template <typename T>
std::string describe(const T* value) {
    if (value == nullptr) {
        return "absent";
    }
    if constexpr (std::is_same_v<T, Position> || std::is_same_v<T, Velocity>) {
        return "{" + std::to_string(value->x) + ", " + std::to_string(value->y) + "}";
    } else if constexpr (std::is_same_v<T, Health>) {
        return std::to_string(value->value);
    } else if constexpr (std::is_same_v<T, Lifetime>) {
        return std::to_string(value->ticks);
    } else if constexpr (std::is_same_v<T, Owner>) {
        return std::to_string(value->client);
    } else {
        return "\"" + value->value + "\"";
    }
}

// The first difference between mirror and world, or an empty string.
std::string difference(const proto::mirror& mirror, const World& world) {
    std::string out;
    if (mirror.size() != world.alive()) {
        return "mirror holds " + std::to_string(mirror.size()) + " entities, world " +
               std::to_string(world.alive());
    }
    world.each([&](Entity e) {
        if (!out.empty()) {
            return;
        }
        if (mirror.find(e.index()) != e) {
            out = "world has " + ecsnet::ecs::to_string(e) + ", mirror has " +
                  ecsnet::ecs::to_string(mirror.find(e.index()));
            return;
        }
        proto::for_each_component([&]<typename T>() {
            const T* expected = world.try_get<T>(e);
            const T* actual = mirror.get<T>(e);
            const bool equal =
                expected == nullptr ? actual == nullptr : actual != nullptr && *actual == *expected;
            if (out.empty() && !equal) {
                out = std::string{proto::column<T>::name} + " of " + ecsnet::ecs::to_string(e) +
                      ": world " + describe(expected) + ", mirror " + describe(actual);
            }
        });
    });
    mirror.each([&](Entity e) {
        if (out.empty() && !world.valid(e)) {
            out = "mirror has " + ecsnet::ecs::to_string(e) + ", the world has not";
        }
    });
    return out;
}

// ---- random server operations ------------------------------------------------------------

template <typename Fn>
void with_random_type(rng_type& rng, Fn&& fn) {
    switch (rng() % proto::replicated_count) {
        case 0:
            fn.template operator()<Position>();
            break;
        case 1:
            fn.template operator()<Velocity>();
            break;
        case 2:
            fn.template operator()<Health>();
            break;
        case 3:
            fn.template operator()<Lifetime>();
            break;
        case 4:
            fn.template operator()<Owner>();
            break;
        default:
            fn.template operator()<Name>();
            break;
    }
}
static_assert(proto::replicated_count == 6, "with_random_type() lists every replicated type");

float coordinate(rng_type& rng) {
    return std::uniform_real_distribution<float>(-1000.0F, 1000.0F)(rng);
}

// UTF-8 of at most max_name_bytes, NUL and two-byte characters included.
std::string random_name(rng_type& rng) {
    static constexpr std::string_view pieces[] = {
        "a", "b", "z", "0", "9", " ", "_", "\xc3\xa9", std::string_view{"\0", 1}};
    const std::size_t target = rng() % (proto::max_name_bytes + 1);
    std::string out;
    while (true) {
        const std::string_view piece = pieces[rng() % std::size(pieces)];
        if (out.size() + piece.size() > target) {
            return out;
        }
        out += piece;
    }
}

template <typename T>
T random_value(rng_type& rng) {
    if constexpr (std::is_same_v<T, Position> || std::is_same_v<T, Velocity>) {
        return T{coordinate(rng), coordinate(rng)};
    } else if constexpr (std::is_same_v<T, Health>) {
        return Health{static_cast<std::int32_t>(rng())};
    } else if constexpr (std::is_same_v<T, Lifetime>) {
        return Lifetime{static_cast<std::uint32_t>(rng())};
    } else if constexpr (std::is_same_v<T, Owner>) {
        return Owner{static_cast<std::uint32_t>(rng() % 16)};
    } else {
        return Name{random_name(rng)};
    }
}

// An in-place change of a value (patch).
template <typename T>
void nudge(T& value, rng_type& rng) {
    if constexpr (std::is_same_v<T, Position> || std::is_same_v<T, Velocity>) {
        value.x += static_cast<float>(rng() % 7) - 3.0F;
    } else if constexpr (std::is_same_v<T, Health>) {
        value.value = static_cast<std::int32_t>(static_cast<std::uint32_t>(value.value) - 1U);
    } else if constexpr (std::is_same_v<T, Lifetime>) {
        --value.ticks;
    } else if constexpr (std::is_same_v<T, Owner>) {
        value.client ^= 1U;
    } else if (value.value.size() < proto::max_name_bytes && rng() % 2 == 0) {
        value.value += 'x';
    } else if (!value.value.empty()) {
        value.value.pop_back();
    }
}

struct scenario {
    std::uint64_t seed;
    std::size_t operations;
    std::size_t min_ops_per_tick;
    std::size_t max_ops_per_tick;
    std::size_t target_alive;  // spawns thin out above this many entities
    std::size_t full_compare_every;
    std::size_t late_joiners;  // kept alive at once
    // Freed indices wait in a queue of this size before reuse; random in 0..8 if not given.
    std::optional<std::size_t> min_free_indices{};
};

// The server: a world and the live entities, which the random operations pick from.
class random_server {
public:
    explicit random_server(const scenario& s)
        : rng_{s.seed},
          world_{World::make(world_options{
              .entities = {.min_free_indices = s.min_free_indices.value_or(rng_() % 9)}})},
          target_alive_{s.target_alive} {}

    World& world() { return *world_; }
    rng_type& rng() { return rng_; }
    std::size_t min_free_indices() const { return world_->entities().options().min_free_indices; }

    void random_operation() {
        const auto roll = rng_() % 100;
        const bool crowded = live_.size() >= target_alive_;
        if (live_.empty() || roll < (crowded ? 8U : 25U)) {
            spawn();
        } else if (roll < 40) {
            destroy(pick());
        } else if (roll < 52) {
            add(pick());
        } else if (roll < 62) {
            replace(pick());
        } else if (roll < 77) {
            patch(pick());
        } else if (roll < 87) {
            remove(pick());
        } else if (roll < 90) {
            world_->clear(live_[pick()]);
        } else if (roll < 93) {
            undone_within_the_tick(pick());
        } else if (roll < 96) {
            spawn();
            destroy(live_.size() - 1);  // created and destroyed in one tick: never on the wire
        } else if (roll < 97) {
            move_all();
        } else {
            emplace_or_replace(pick());
        }
    }

private:
    std::size_t pick() { return static_cast<std::size_t>(rng_() % live_.size()); }

    void spawn() {
        const Entity e = world_->create();
        with_each_random_type([&]<typename T>() { world_->emplace<T>(e, random_value<T>(rng_)); });
        live_.push_back(e);
    }

    // fn<T>() for a random subset of the replicated types.
    template <typename Fn>
    void with_each_random_type(Fn&& fn) {
        const auto mask = rng_();
        std::size_t bit = 0;
        proto::for_each_component([&]<typename T>() {
            if (((mask >> bit++) & 1U) != 0) {
                fn.template operator()<T>();
            }
        });
    }

    void destroy(std::size_t slot) {
        world_->destroy(live_[slot]);
        live_[slot] = live_.back();
        live_.pop_back();
    }

    void add(std::size_t slot) {
        with_random_type(rng_, [&]<typename T>() {
            if (!world_->has<T>(live_[slot])) {
                world_->emplace<T>(live_[slot], random_value<T>(rng_));
            }
        });
    }

    void replace(std::size_t slot) {
        with_random_type(rng_, [&]<typename T>() {
            if (world_->has<T>(live_[slot])) {
                world_->replace<T>(live_[slot], random_value<T>(rng_));
            }
        });
    }

    void emplace_or_replace(std::size_t slot) {
        with_random_type(rng_, [&]<typename T>() {
            world_->emplace_or_replace<T>(live_[slot], random_value<T>(rng_));
        });
    }

    void patch(std::size_t slot) {
        with_random_type(rng_, [&]<typename T>() {
            if (world_->has<T>(live_[slot])) {
                world_->patch<T>(live_[slot], [&](T& value) { nudge(value, rng_); });
            }
        });
    }

    void remove(std::size_t slot) {
        with_random_type(rng_, [&]<typename T>() { world_->remove_if_present<T>(live_[slot]); });
    }

    // Changes that cancel out or come back within the tick: add then remove, remove then add.
    void undone_within_the_tick(std::size_t slot) {
        const Entity e = live_[slot];
        with_random_type(rng_, [&]<typename T>() {
            if (world_->has<T>(e)) {
                const T before = world_->get<T>(e);
                world_->remove<T>(e);
                world_->emplace<T>(e, rng_() % 2 == 0 ? before : random_value<T>(rng_));
            } else {
                world_->emplace<T>(e, random_value<T>(rng_));
                world_->remove<T>(e);
            }
        });
    }

    // Every moving entity moves, through a writing view (each() or iterators).
    void move_all() {
        if (rng_() % 2 == 0) {
            world_->view<Position, const Velocity>().each([](Position& p, const Velocity& v) {
                p.x += v.x / 64.0F;
                p.y += v.y / 64.0F;
            });
        } else {
            for (auto [e, p, v] : world_->view<Position, const Velocity>()) {
                p.x -= v.x / 64.0F;
                static_cast<void>(e);
            }
        }
    }

    rng_type rng_;
    std::shared_ptr<World> world_;
    std::size_t target_alive_;
    std::vector<Entity> live_;
};

// A client following the stream.
struct client {
    std::string name;
    proto::mirror mirror;
    std::uint64_t leaves_at{};
};

// Verifies the frame and applies it to the client's mirror.
::testing::AssertionResult deliver(client& c, const proto::frame& frame) {
    std::string why;
    const wire::ServerMessage* message = proto::verify_server_frame(*frame, &why);
    if (message == nullptr) {
        return ::testing::AssertionFailure() << "frame does not verify: " << why;
    }
    if (!c.mirror.apply(*message)) {
        return ::testing::AssertionFailure() << c.name << " refused a frame: " << c.mirror.error();
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult equal(const client& c, const World& world) {
    const std::string diff = difference(c.mirror, world);
    if (!diff.empty()) {
        return ::testing::AssertionFailure() << c.name << ": " << diff;
    }
    if (c.mirror.checksum() != proto::checksum::of_world(world)) {
        return ::testing::AssertionFailure() << c.name << ": same content, other checksum";
    }
    return ::testing::AssertionSuccess();
}

void run(const scenario& s) {
    SCOPED_TRACE("seed " + std::to_string(s.seed) +
                 " (replay with ECSNET_CONVERGENCE_SEED=" + std::to_string(s.seed) + ")");
    random_server server(s);
    World& world = server.world();
    rng_type& rng = server.rng();
    proto::replication_encoder encoder;
    std::uint64_t tick = 0;

    // The first client is there from tick 0 (an empty snapshot); the others join late.
    std::vector<std::unique_ptr<client>> clients;
    clients.push_back(std::make_unique<client>(
        client{"client from tick 0", {}, std::numeric_limits<std::uint64_t>::max()}));
    for (const auto& chunk : encoder.encode_snapshot(world, tick)) {
        ASSERT_TRUE(deliver(*clients[0], chunk));
    }

    std::size_t done = 0;
    std::size_t joined = 0;
    std::size_t largest_world = 0;
    std::size_t checksum_messages = 0;
    while (done < s.operations) {
        // A few ticks are idle; the others do a random number of operations.
        std::size_t ops = 0;
        if (rng() % 20 != 0) {
            ops = s.min_ops_per_tick + rng() % (s.max_ops_per_tick - s.min_ops_per_tick + 1);
        }
        for (std::size_t i = 0; i < ops; ++i) {
            server.random_operation();
        }
        done += ops;
        largest_world = std::max(largest_world, world.alive());

        ++tick;
        const proto::frame delta = encoder.encode_delta(world, world.take_changes(), tick);
        const std::uint64_t expected = proto::checksum::of_world(world);
        const bool full = tick % s.full_compare_every == 0 || done >= s.operations;
        for (const auto& c : clients) {
            ASSERT_TRUE(deliver(*c, delta)) << "tick " << tick;
            ASSERT_EQ(c->mirror.tick(), tick) << c->name;
            if (full) {
                ASSERT_TRUE(equal(*c, world)) << "tick " << tick;
            } else {
                ASSERT_EQ(c->mirror.checksum(), expected)
                    << c->name << ", tick " << tick << ": " << difference(c->mirror, world);
            }
        }

        // The server's periodic Checksum message, as the clients receive it.
        if (tick % 30 == 0) {
            ++checksum_messages;
            const proto::frame report = proto::encode(proto::server_control{
                proto::checksum_report{tick, expected, static_cast<std::uint32_t>(world.alive())}});
            for (const auto& c : clients) {
                ASSERT_TRUE(deliver(*c, report)) << "tick " << tick;
            }
        }

        // Late joiners leave (equal to the end) and join (from a multi-chunk snapshot).
        for (auto it = clients.begin(); it != clients.end();) {
            if ((*it)->leaves_at <= tick) {
                ASSERT_TRUE(equal(**it, world)) << "tick " << tick;
                it = clients.erase(it);
            } else {
                ++it;
            }
        }
        if (clients.size() <= s.late_joiners && rng() % 16 == 0) {
            auto late = std::make_unique<client>();
            late->name =
                "client " + std::to_string(++joined) + " joined at tick " + std::to_string(tick);
            late->leaves_at = tick + 10 + rng() % 300;
            const std::size_t chunk_bytes = 512 + rng() % 4096;
            const auto chunks =
                encoder.encode_snapshot(world, tick, {.max_chunk_bytes = chunk_bytes});
            for (const auto& chunk : chunks) {
                ASSERT_TRUE(deliver(*late, chunk)) << "tick " << tick;
            }
            ASSERT_TRUE(late->mirror.ready()) << late->name;
            ASSERT_TRUE(equal(*late, world)) << "tick " << tick;
            clients.push_back(std::move(late));
        }
    }

    for (const auto& c : clients) {
        EXPECT_TRUE(equal(*c, world));
        EXPECT_EQ(c->mirror.statistics().inconsistencies, 0U) << c->name;
        EXPECT_EQ(c->mirror.take_resync_reason(), std::nullopt) << c->name;
    }
    EXPECT_EQ(clients[0]->mirror.statistics().deltas, tick);
    EXPECT_EQ(clients[0]->mirror.statistics().checksums_matched, checksum_messages);
    EXPECT_GT(joined, 2U) << "the scenario should exercise late joiners";
    std::cout << "[ measure  ] seed " << s.seed << ": " << done << " operations over " << tick
              << " ticks, min_free_indices " << server.min_free_indices() << ", up to "
              << largest_world << " entities, " << joined << " late joiners\n";
}

TEST(Convergence, HundredThousandRandomOperations) {
    run(scenario{.seed = seed_or(20240611),
                 .operations = 100'000,
                 .min_ops_per_tick = 50,
                 .max_ops_per_tick = 200,
                 .target_alive = 1000,
                 .full_compare_every = 10,
                 .late_joiners = 3});
}

TEST(Convergence, SmallWorldWithConstantIndexReuse) {
    // Few entities and many destroys: indices come back at new versions all the time, often
    // within the tick that freed them.
    run(scenario{.seed = seed_or(7),
                 .operations = 30'000,
                 .min_ops_per_tick = 5,
                 .max_ops_per_tick = 60,
                 .target_alive = 24,
                 .full_compare_every = 1,
                 .late_joiners = 3,
                 .min_free_indices = 0});
}

}  // namespace
