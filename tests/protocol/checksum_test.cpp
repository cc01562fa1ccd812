#include "ecsnet/protocol/checksum.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "ecsnet/ecs/world.hpp"

namespace {

namespace proto = ecsnet::protocol;
namespace checksum = ecsnet::protocol::checksum;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;

// The definition, written out independently of the library: little-endian u32 words, then
// the value's bytes, hashed with XXH3_64bits (seed 0).
class term {
public:
    term& u32(std::uint32_t v) {
        for (int i = 0; i < 4; ++i) {
            bytes_.push_back(static_cast<unsigned char>(v >> (8 * i)));
        }
        return *this;
    }
    term& i32(std::int32_t v) { return u32(static_cast<std::uint32_t>(v)); }
    term& f32(float v) {
        std::uint32_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        return u32(bits);
    }
    term& text(const std::string& s) {
        bytes_.insert(bytes_.end(), s.begin(), s.end());
        return *this;
    }
    [[nodiscard]] std::uint64_t hash() const { return XXH3_64bits(bytes_.data(), bytes_.size()); }

private:
    std::vector<unsigned char> bytes_;
};

std::uint64_t entity_hash(std::uint32_t index, std::uint32_t version) {
    return term{}.u32(index).u32(version).hash();
}

// A component term's head: wire id, index, version.
term head(std::uint32_t wire_id, Entity e) {
    term t;
    t.u32(wire_id).u32(e.index()).u32(e.version());
    return t;
}

// Freed indices come back at once, so tests can reach version 2 in one destroy.
std::shared_ptr<World> make_world() {
    ecsnet::ecs::world_options options;
    options.entities.min_free_indices = 0;
    return World::make(options);
}

// Not in ECSNET_REPLICATED_COMPONENTS: the checksum ignores it.
struct LocalOnly {
    int value{};
};

TEST(Checksum, EmptyWorldIsZero) {
    EXPECT_EQ(checksum::of_world(*make_world()), 0U);
}

TEST(Checksum, KnownValueOfATinyWorld) {
    auto world = make_world();
    const Entity a = world->create();
    const Entity b = world->create();
    const Entity c = world->create();
    world->destroy(c);
    const Entity d = world->create();  // index 2 again, version 2
    ASSERT_EQ(a, (Entity{0, 1}));
    ASSERT_EQ(b, (Entity{1, 1}));
    ASSERT_EQ(d, (Entity{2, 2}));

    world->emplace<proto::Position>(a, 1.5F, -2.0F);
    world->emplace<proto::Name>(a, "ab");
    world->emplace<proto::Health>(b, -7);
    world->emplace<proto::Owner>(d, 3U);
    world->emplace<proto::Lifetime>(d, 600U);
    world->emplace<proto::Velocity>(d, 0.25F, 8.0F);

    std::uint64_t expected = 0;  // wraps modulo 2^64, as defined
    expected += entity_hash(0, 1);
    expected += entity_hash(1, 1);
    expected += entity_hash(2, 2);
    expected += head(0, a).f32(1.5F).f32(-2.0F).hash();
    expected += head(5, a).text("ab").hash();
    expected += head(2, b).i32(-7).hash();
    expected += head(4, d).u32(3).hash();
    expected += head(3, d).u32(600).hash();
    expected += head(1, d).f32(0.25F).f32(8.0F).hash();

    EXPECT_EQ(checksum::of_world(*world), expected);
}

TEST(Checksum, TermsMatchTheDefinition) {
    EXPECT_EQ(checksum::entity_term(7, 9), entity_hash(7, 9));
    const Entity e{0x01020304, 0xA0B0C0D0};
    EXPECT_EQ(checksum::component_term(e.index(), e.version(), proto::Health{42}),
              head(2, e).i32(42).hash());
    EXPECT_EQ(checksum::component_term(e.index(), e.version(), proto::Name{""}), head(5, e).hash());
    // Longer than hash_parts' stack buffer: the streaming path must give the same hash.
    const std::string long_name(1000, 'z');
    EXPECT_EQ(checksum::component_term(e.index(), e.version(), proto::Name{long_name}),
              head(5, e).text(long_name).hash());
}

TEST(Checksum, IndependentOfStorageOrder) {
    // Same entities (same index:version) in both worlds; components added in opposite orders,
    // so the storages hold them in different dense orders.
    auto forward = make_world();
    auto backward = make_world();
    std::vector<Entity> f;
    std::vector<Entity> b;
    for (int i = 0; i < 20; ++i) {
        f.push_back(forward->create());
        b.push_back(backward->create());
    }
    ASSERT_EQ(f, b);
    for (std::size_t i = 0; i < f.size(); ++i) {
        forward->emplace<proto::Position>(f[i], static_cast<float>(i), 1.0F);
        if (i % 3 == 0) {
            forward->emplace<proto::Name>(f[i], "n" + std::to_string(i));
        }
    }
    for (std::size_t k = b.size(); k-- > 0;) {
        if (k % 3 == 0) {
            backward->emplace<proto::Name>(b[k], "n" + std::to_string(k));
        }
        backward->emplace<proto::Position>(b[k], static_cast<float>(k), 1.0F);
    }
    EXPECT_EQ(checksum::of_world(*forward), checksum::of_world(*backward));

    // Removing and re-adding moves an element within its storage: the sum stays.
    const std::uint64_t before = checksum::of_world(*forward);
    forward->remove<proto::Position>(f[0]);
    forward->emplace<proto::Position>(f[0], 0.0F, 1.0F);
    EXPECT_EQ(checksum::of_world(*forward), before);
}

TEST(Checksum, ChangesWithAnyValue) {
    auto world = make_world();
    const Entity e = world->create();
    world->emplace<proto::Position>(e, 1.0F, 2.0F);
    world->emplace<proto::Health>(e, 10);
    world->emplace<proto::Name>(e, "tank");
    const std::uint64_t base = checksum::of_world(*world);

    world->replace<proto::Position>(e, 1.0F, 2.5F);
    const std::uint64_t moved = checksum::of_world(*world);
    EXPECT_NE(moved, base);
    world->replace<proto::Position>(e, 1.0F, 2.0F);
    EXPECT_EQ(checksum::of_world(*world), base) << "the sum is a function of the state";

    world->replace<proto::Health>(e, 11);
    EXPECT_NE(checksum::of_world(*world), base);
    world->replace<proto::Health>(e, 10);

    world->replace<proto::Name>(e, "tanK");
    EXPECT_NE(checksum::of_world(*world), base);
    world->replace<proto::Name>(e, "tank");
    EXPECT_EQ(checksum::of_world(*world), base);

    // -0.0 and 0.0 compare equal but are different bytes on the wire: they hash differently.
    world->replace<proto::Position>(e, 0.0F, 2.0F);
    const std::uint64_t zero = checksum::of_world(*world);
    world->replace<proto::Position>(e, -0.0F, 2.0F);
    EXPECT_NE(checksum::of_world(*world), zero);
}

TEST(Checksum, ChangesWithPresence) {
    auto world = make_world();
    const Entity a = world->create();
    const Entity b = world->create();
    world->emplace<proto::Health>(a, 5);
    const std::uint64_t base = checksum::of_world(*world);

    world->emplace<proto::Health>(b, 5);
    const std::uint64_t added = checksum::of_world(*world);
    EXPECT_NE(added, base);
    EXPECT_EQ(added - base, head(2, b).i32(5).hash());

    world->remove<proto::Health>(b);
    EXPECT_EQ(checksum::of_world(*world), base);

    // The same value under another type is another term.
    world->emplace<proto::Lifetime>(b, 5U);
    EXPECT_NE(checksum::of_world(*world), added);
    world->remove<proto::Lifetime>(b);

    // An entity without components still counts.
    const Entity c = world->create();
    EXPECT_EQ(checksum::of_world(*world), base + entity_hash(c.index(), c.version()));
    world->destroy(c);
    EXPECT_EQ(checksum::of_world(*world), base);
}

TEST(Checksum, ChangesWithVersion) {
    auto world = make_world();
    const Entity first = world->create();
    world->emplace<proto::Position>(first, 3.0F, 4.0F);
    const std::uint64_t v1 = checksum::of_world(*world);

    world->destroy(first);
    const Entity second = world->create();
    ASSERT_EQ(second.index(), first.index());
    ASSERT_EQ(second.version(), first.version() + 1);
    world->emplace<proto::Position>(second, 3.0F, 4.0F);
    const std::uint64_t v2 = checksum::of_world(*world);
    EXPECT_NE(v2, v1);
    EXPECT_EQ(v2, entity_hash(0, 2) + head(0, second).f32(3.0F).f32(4.0F).hash());
}

TEST(ChecksumSlices, SlicesAddUpToTheWholeWorld) {
    auto world = make_world();
    for (int i = 0; i < 300; ++i) {
        const Entity e = world->create();
        if (i % 3 != 0) {
            world->emplace<proto::Position>(e, static_cast<float>(i), 1.0F);
        }
        if (i % 5 == 0) {
            world->emplace<proto::Name>(e, "n" + std::to_string(i));
        }
        if (i % 7 == 0) {
            world->destroy(e);  // holes in the index space
        }
    }
    const checksum::slice_sum whole = checksum::of_world(*world, checksum::index_range{});
    EXPECT_EQ(whole.hash, checksum::of_world(*world));
    EXPECT_EQ(whole.entities, world->alive());

    checksum::slice_sum sum;
    for (const auto& [first, end] : {std::pair{0U, 1U}, std::pair{1U, 100U}, std::pair{100U, 257U},
                                    std::pair{257U, 0xFFFFFFFFU}}) {
        const auto part = checksum::of_world(*world, checksum::index_range{first, end});
        sum.hash += part.hash;
        sum.entities += part.entities;
    }
    EXPECT_EQ(sum.hash, whole.hash);
    EXPECT_EQ(sum.entities, whole.entities);
}

TEST(ChecksumSlices, ASliceSeesOnlyItsOwnIndices) {
    auto world = make_world();
    const Entity a = world->create();
    const Entity b = world->create();
    world->emplace<proto::Health>(a, 5);
    world->emplace<proto::Health>(b, 6);
    const checksum::index_range only_b{b.index(), b.index() + 1};
    const auto before = checksum::of_world(*world, only_b);
    EXPECT_EQ(before.entities, 1U);
    EXPECT_EQ(before.hash, entity_hash(b.index(), b.version()) + head(2, b).i32(6).hash());
    world->patch<proto::Health>(a, [](proto::Health& h) { h.value = 50; });
    EXPECT_EQ(checksum::of_world(*world, only_b).hash, before.hash);
    world->patch<proto::Health>(b, [](proto::Health& h) { h.value = 60; });
    EXPECT_NE(checksum::of_world(*world, only_b).hash, before.hash);
}

TEST(Checksum, IgnoresComponentsThatAreNotReplicated) {
    auto world = make_world();
    const Entity e = world->create();
    world->emplace<proto::Velocity>(e, 1.0F, 1.0F);
    const std::uint64_t base = checksum::of_world(*world);
    world->emplace<LocalOnly>(e, 42);
    EXPECT_EQ(checksum::of_world(*world), base);
}

}  // namespace
