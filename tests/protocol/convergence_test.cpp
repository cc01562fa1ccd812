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
// The world uses the demo's types and test-only ones that exist nowhere but here
// (test_types.hpp): a quantized 2-D float bit-packed across bytes, one of mixed field types and
// a short string. A quantized value is compared as the wire carries it: the mirror must hold
// exactly the canonical bytes of the world's value, and get<T>() its dequantized value. Some
// late joiners receive a frame twice, refuse it and resync from a new snapshot.
//
// The seed is fixed and printed with every failure; ECSNET_CONVERGENCE_SEED=<n> replays or
// explores another one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
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
#include "printers.hpp"
#include "test_types.hpp"

namespace {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::testing::Mixed;
using ecsnet::testing::Spot;
using ecsnet::testing::Tag;
using proto::Owner;
using rng_type = std::mt19937_64;

std::uint64_t seed_or(std::uint64_t fallback) {
    const char* text = std::getenv("ECSNET_CONVERGENCE_SEED");
    return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 0) : fallback;
}

// The server's types: the demo's and the test-only ones.
const proto::component_registry& types() {
    static const proto::component_registry registry = ecsnet::testing::test_types();
    return registry;
}

constexpr std::size_t type_count = 9;

// ---- comparing a mirror with the world --------------------------------------------------

std::string hex(std::span<const std::byte> bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const std::byte b : bytes) {
        out += digits[std::to_integer<unsigned>(b) >> 4U];
        out += digits[std::to_integer<unsigned>(b) & 15U];
    }
    return out;
}

template <typename T>
std::string describe(const std::optional<T>& value) {
    return value ? ::testing::PrintToString(*value) : "absent";
}

// The first difference in T between the world's e and the mirror's, or an empty string:
// the canonical bytes (or text) exactly, and the value the mirror's get<T>() gives, which is
// the world's value as the wire rounds it.
template <typename T>
std::string difference_in(const proto::mirror& mirror, const World& world, Entity e) {
    const std::uint16_t id = *types().id_of<T>();
    const std::string what = std::string{proto::replicated<T>::name} + " of " +
                             ecsnet::ecs::to_string(e);
    const T* in_world = world.try_get<T>(e);
    if ((in_world != nullptr) != mirror.has(e, id)) {
        return what + ": world " + (in_world != nullptr ? "has it" : "has not") + ", mirror " +
               (mirror.has(e, id) ? "has it" : "has not");
    }
    if (in_world == nullptr) {
        return mirror.get<T>(e) ? what + ": get() finds a value the world has not" : "";
    }
    std::optional<T> expected;
    if constexpr (proto::detail::is_string_v<T>) {
        const std::string* text = mirror.text(e, id);
        if (text == nullptr || *text != proto::text_of(*in_world)) {
            return what + ": world \"" + proto::text_of(*in_world) + "\", mirror " +
                   (text == nullptr ? "no text" : "\"" + *text + "\"");
        }
        expected = *in_world;
    } else {
        const auto packed = proto::pack(*in_world);
        const auto held = mirror.value(e, id);
        if (!std::equal(packed.begin(), packed.end(), held.begin(), held.end())) {
            return what + ": world " + ::testing::PrintToString(*in_world) + " packs to " +
                   hex(packed) + ", mirror holds " + hex(held);
        }
        expected = proto::unpack<T>(packed.data());  // dequantized, for a quantized type
    }
    const std::optional<T> actual = mirror.get<T>(e);
    if (actual != expected) {
        return what + ": get() gives " + describe(actual) + ", expected " + describe(expected);
    }
    return "";
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
        ecsnet::testing::for_each_test_type([&]<typename T>() {
            if (out.empty()) {
                out = difference_in<T>(mirror, world, e);
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
    const std::size_t chosen = rng() % type_count;
    std::size_t i = 0;
    ecsnet::testing::for_each_test_type([&]<typename T>() {
        if (i++ == chosen) {
            fn.template operator()<T>();
        }
    });
}

float coordinate(rng_type& rng) {
    return std::uniform_real_distribution<float>(-1000.0F, 1000.0F)(rng);
}

// UTF-8 of at most max_bytes, NUL and two-byte characters included.
std::string random_name(rng_type& rng, std::size_t max_bytes = ecsnet::demo::max_name_bytes) {
    static constexpr std::string_view pieces[] = {
        "a", "b", "z", "0", "9", " ", "_", "\xc3\xa9", std::string_view{"\0", 1}};
    const std::size_t target = rng() % (max_bytes + 1);
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
    } else if constexpr (std::is_same_v<T, Spot>) {
        // On the grid, off it, and outside [0, 4096] (clamped on the wire).
        if (rng() % 2 == 0) {
            return Spot{static_cast<float>(rng() % 262'145) / 64.0F,
                        static_cast<float>(rng() % 262'145) / 64.0F};
        }
        std::uniform_real_distribution<float> anywhere(-100.0F, 4200.0F);
        return Spot{anywhere(rng), anywhere(rng)};
    } else if constexpr (std::is_same_v<T, Mixed>) {
        const auto bits = rng();
        return Mixed{(bits & 1U) != 0, static_cast<std::int8_t>(bits >> 8U),
                     static_cast<std::uint16_t>(bits >> 16U), static_cast<std::int64_t>(rng()),
                     std::ldexp(std::uniform_real_distribution<double>(-1.0, 1.0)(rng),
                                static_cast<int>(rng() % 2000) - 1000)};
    } else if constexpr (std::is_same_v<T, Tag>) {
        return Tag{random_name(rng, ecsnet::testing::max_tag_bytes)};
    } else {
        return Name{random_name(rng)};
    }
}

// Grows or shrinks a string of at most max_bytes by one byte.
void nudge_text(std::string& text, std::size_t max_bytes, rng_type& rng) {
    if (text.size() < max_bytes && rng() % 2 == 0) {
        text += 'x';
    } else if (!text.empty() && static_cast<unsigned char>(text.back()) < 0x80) {
        text.pop_back();
    } else if (!text.empty()) {
        text.clear();  // never cut a two-byte character in half
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
    } else if constexpr (std::is_same_v<T, Spot>) {
        // A step or less: often the same q, so an update that changes no wire byte.
        value.x += (static_cast<float>(rng() % 5) - 2.0F) / 128.0F;
        value.y += 1.0F / 64.0F;
    } else if constexpr (std::is_same_v<T, Mixed>) {
        value.flag = !value.flag;
        value.big ^= std::int64_t{1} << (rng() % 63);
        ++value.medium;
    } else if constexpr (std::is_same_v<T, Tag>) {
        nudge_text(value.text, ecsnet::testing::max_tag_bytes, rng);
    } else {
        nudge_text(value.value, ecsnet::demo::max_name_bytes, rng);
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
        ecsnet::testing::for_each_test_type([&]<typename T>() {
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
        with_random_type(rng_, [&]<typename T>() { world_->remove<T>(live_[slot]); });
    }

    // Changes that cancel out or come back within the tick: add then remove, remove then add.
    void undone_within_the_tick(std::size_t slot) {
        const Entity e = live_[slot];
        with_random_type(rng_, [&]<typename T>() {
            if (world_->has<T>(e)) {
                const T before = world_->get<T>(e);
                world_->erase<T>(e);
                world_->emplace<T>(e, rng_() % 2 == 0 ? before : random_value<T>(rng_));
            } else {
                world_->emplace<T>(e, random_value<T>(rng_));
                world_->erase<T>(e);
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
    proto::mirror mirror{types().types()};
    std::uint64_t leaves_at{};
    std::uint64_t resyncs{};
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
    if (c.mirror.checksum() != proto::checksum::of_world(world, types())) {
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
    proto::replication_encoder encoder{types()};
    std::uint64_t tick = 0;

    // The first client is there from tick 0 (an empty snapshot); the others join late.
    std::vector<std::unique_ptr<client>> clients;
    clients.push_back(std::make_unique<client>(
        client{"client from tick 0", proto::mirror{types().types()},
               std::numeric_limits<std::uint64_t>::max(), 0}));
    for (const auto& chunk : encoder.encode_snapshot(world, tick)) {
        ASSERT_TRUE(deliver(*clients[0], chunk));
    }

    std::size_t done = 0;
    std::size_t joined = 0;
    std::size_t largest_world = 0;
    std::size_t checksum_messages = 0;
    std::size_t resyncs = 0;
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
        const std::uint64_t expected = proto::checksum::of_world(world, types());
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

        // A late joiner gets the delta twice, refuses the copy (its tick is not the next one)
        // and resyncs from a snapshot of this tick, as a client asks with ResyncRequest.
        if (clients.size() > 1 && rng() % 25 == 0) {
            client& c = *clients[1 + rng() % (clients.size() - 1)];
            ASSERT_FALSE(deliver(c, delta)) << c.name << " applied a delta twice";
            const auto reason = c.mirror.take_resync_reason();
            ASSERT_TRUE(reason.has_value()) << c.name;
            ASSERT_NE(reason->find("tick gap"), std::string::npos) << *reason;
            ASSERT_FALSE(c.mirror.ready());
            const std::size_t chunk_bytes = 512 + rng() % 4096;
            for (const auto& chunk :
                 encoder.encode_snapshot(world, tick, {.max_chunk_bytes = chunk_bytes})) {
                ASSERT_TRUE(deliver(c, chunk)) << "tick " << tick;
            }
            ASSERT_TRUE(c.mirror.ready()) << c.name;
            ASSERT_TRUE(equal(c, world)) << c.name << " after its resync at tick " << tick;
            ++c.resyncs;
            ++resyncs;
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
        EXPECT_EQ(c->mirror.statistics().inconsistencies, c->resyncs) << c->name;
        EXPECT_EQ(c->mirror.take_resync_reason(), std::nullopt) << c->name;
    }
    EXPECT_EQ(clients[0]->mirror.statistics().deltas, tick);
    EXPECT_EQ(clients[0]->mirror.statistics().checksums_matched, checksum_messages);
    EXPECT_GT(joined, 2U) << "the scenario should exercise late joiners";
    EXPECT_GT(resyncs, 1U) << "the scenario should exercise resyncs";
    std::cout << "[ measure  ] seed " << s.seed << ": " << done << " operations over " << tick
              << " ticks, min_free_indices " << server.min_free_indices() << ", up to "
              << largest_world << " entities, " << joined << " late joiners, " << resyncs << " resyncs\n";
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
