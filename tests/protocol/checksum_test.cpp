#include "ecsnet/protocol/checksum.hpp"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "test_types.hpp"

namespace checksum_test {

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
    term& u8(std::uint8_t v) {
        bytes_.push_back(v);
        return *this;
    }
    term& u16(std::uint16_t v) { return u8(static_cast<std::uint8_t>(v)).u8(static_cast<std::uint8_t>(v >> 8U)); }
    term& u64(std::uint64_t v) { return u32(static_cast<std::uint32_t>(v)).u32(static_cast<std::uint32_t>(v >> 32U)); }
    term& f64(double v) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        return u64(bits);
    }
    // The low `count` bytes of v, little-endian: a bit-packed value.
    term& low_bytes(std::uint64_t v, int count) {
        for (int i = 0; i < count; ++i) {
            u8(static_cast<std::uint8_t>(v >> (8 * i)));
        }
        return *this;
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

namespace demo = ecsnet::demo;
namespace ids = ecsnet::testing::ids;
using ecsnet::testing::Mixed;
using ecsnet::testing::Spot;
using ecsnet::testing::Tag;

// The demo's types and the test-only ones, as a server would register them.
const proto::component_registry& types() {
    static const proto::component_registry registry = ecsnet::testing::test_types();
    return registry;
}

std::uint64_t of_world(const World& world) { return checksum::of_world(world, types()); }
checksum::slice_sum of_world(const World& world, checksum::index_range range) {
    return checksum::of_world(world, types(), range);
}

// Freed indices come back at once, so tests can reach version 2 in one destroy.
std::shared_ptr<World> make_world() {
    ecsnet::ecs::world_options options;
    options.entities.min_free_indices = 0;
    return World::make(options);
}

// Not registered: the checksum ignores it.
struct LocalOnly {
    int value{};
};

// Replicated to its owner only: not in the checksum.
struct Secret {
    float x{};
    float y{};
};

}  // namespace checksum_test

template <>
struct ecsnet::protocol::replicated<checksum_test::Secret>
    : ecsnet::protocol::replicate<ecsnet::testing::wire::Spot, "secret",
                                  ecsnet::protocol::replicate_options{.owner_only = true}> {};

namespace checksum_test {

TEST(Checksum, EmptyWorldIsZero) {
    EXPECT_EQ(of_world(*make_world()), 0U);
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

    world->emplace<demo::Position>(a, 1.5F, -2.0F);
    world->emplace<demo::Name>(a, "ab");
    world->emplace<demo::Health>(b, -7);
    world->emplace<proto::Owner>(d, 3U);
    world->emplace<demo::Lifetime>(d, 600U);
    world->emplace<demo::Velocity>(d, 0.25F, 8.0F);

    std::uint64_t expected = 0;  // wraps modulo 2^64, as defined
    expected += entity_hash(0, 1);
    expected += entity_hash(1, 1);
    expected += entity_hash(2, 2);
    expected += head(ids::position, a).f32(1.5F).f32(-2.0F).hash();
    expected += head(ids::name, a).text("ab").hash();
    expected += head(ids::health, b).i32(-7).hash();
    expected += head(ids::owner, d).u32(3).hash();
    expected += head(ids::lifetime, d).u32(600).hash();
    expected += head(ids::velocity, d).f32(0.25F).f32(8.0F).hash();

    EXPECT_EQ(of_world(*world), expected);
}

// The test-only types' canonical bytes, written out from the definition: a quantized value is
// its fields' q in `bits` bits each, least significant bit first; other fields little-endian in
// declaration order with no padding; a string its UTF-8 bytes.
TEST(Checksum, KnownValueOfTestOnlyTypes) {
    auto world = make_world();
    const Entity a = world->create();
    const Entity b = world->create();
    world->emplace<Spot>(a, 10.5F, 4096.0F);  // q = 672 and 262144
    world->emplace<Mixed>(a, true, std::int8_t{-2}, std::uint16_t{0xBEEF},
                          std::int64_t{-0x0102030405060708LL}, -0.125);
    world->emplace<Tag>(b, "flag \xE2\x9A\x91");
    world->emplace<Spot>(b, -3.0F, 5000.0F);  // clamped on the wire: q = 0 and 262144

    const std::uint64_t spot_a = 672U | (std::uint64_t{262144} << 19U);
    const std::uint64_t spot_b = std::uint64_t{262144} << 19U;
    std::uint64_t expected = entity_hash(0, 1) + entity_hash(1, 1);
    expected += head(ids::spot, a).low_bytes(spot_a, 5).hash();
    expected += head(ids::mixed, a)
                    .u8(1)
                    .u8(0xFE)
                    .u16(0xBEEF)
                    .u64(static_cast<std::uint64_t>(-0x0102030405060708LL))
                    .f64(-0.125)
                    .hash();
    expected += head(ids::tag, b).text("flag \xE2\x9A\x91").hash();
    expected += head(ids::spot, b).low_bytes(spot_b, 5).hash();
    EXPECT_EQ(of_world(*world), expected);
}

TEST(Checksum, TermsMatchTheDefinition) {
    EXPECT_EQ(checksum::entity_term(7, 9), entity_hash(7, 9));
    const Entity e{0x01020304, 0xA0B0C0D0};
    const auto health = proto::pack(demo::Health{42});
    EXPECT_EQ(checksum::component_term(ids::health, e.index(), e.version(), health),
              head(ids::health, e).i32(42).hash());
    EXPECT_EQ(checksum::component_term(ids::name, e.index(), e.version(), {}),
              head(ids::name, e).hash());
    // Longer than hash_parts' stack buffer: the streaming path must give the same hash.
    const std::string long_name(1000, 'z');
    EXPECT_EQ(checksum::component_term(ids::name, e.index(), e.version(),
                                       std::as_bytes(std::span{long_name})),
              head(ids::name, e).text(long_name).hash());
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
        forward->emplace<demo::Position>(f[i], static_cast<float>(i), 1.0F);
        if (i % 3 == 0) {
            forward->emplace<demo::Name>(f[i], "n" + std::to_string(i));
        }
    }
    for (std::size_t k = b.size(); k-- > 0;) {
        if (k % 3 == 0) {
            backward->emplace<demo::Name>(b[k], "n" + std::to_string(k));
        }
        backward->emplace<demo::Position>(b[k], static_cast<float>(k), 1.0F);
    }
    EXPECT_EQ(of_world(*forward), of_world(*backward));

    // Removing and re-adding moves an element within its storage: the sum stays.
    const std::uint64_t before = of_world(*forward);
    forward->erase<demo::Position>(f[0]);
    forward->emplace<demo::Position>(f[0], 0.0F, 1.0F);
    EXPECT_EQ(of_world(*forward), before);
}

TEST(Checksum, ChangesWithAnyValue) {
    auto world = make_world();
    const Entity e = world->create();
    world->emplace<demo::Position>(e, 1.0F, 2.0F);
    world->emplace<demo::Health>(e, 10);
    world->emplace<demo::Name>(e, "tank");
    const std::uint64_t base = of_world(*world);

    world->replace<demo::Position>(e, 1.0F, 2.5F);
    const std::uint64_t moved = of_world(*world);
    EXPECT_NE(moved, base);
    world->replace<demo::Position>(e, 1.0F, 2.0F);
    EXPECT_EQ(of_world(*world), base) << "the sum is a function of the state";

    world->replace<demo::Health>(e, 11);
    EXPECT_NE(of_world(*world), base);
    world->replace<demo::Health>(e, 10);

    world->replace<demo::Name>(e, "tanK");
    EXPECT_NE(of_world(*world), base);
    world->replace<demo::Name>(e, "tank");
    EXPECT_EQ(of_world(*world), base);

    // -0.0 and 0.0 compare equal but are different bytes on the wire: they hash differently.
    world->replace<demo::Position>(e, 0.0F, 2.0F);
    const std::uint64_t zero = of_world(*world);
    world->replace<demo::Position>(e, -0.0F, 2.0F);
    EXPECT_NE(of_world(*world), zero);
}

TEST(Checksum, ChangesWithPresence) {
    auto world = make_world();
    const Entity a = world->create();
    const Entity b = world->create();
    world->emplace<demo::Health>(a, 5);
    const std::uint64_t base = of_world(*world);

    world->emplace<demo::Health>(b, 5);
    const std::uint64_t added = of_world(*world);
    EXPECT_NE(added, base);
    EXPECT_EQ(added - base, head(ids::health, b).i32(5).hash());

    world->erase<demo::Health>(b);
    EXPECT_EQ(of_world(*world), base);

    // The same value under another type is another term.
    world->emplace<demo::Lifetime>(b, 5U);
    EXPECT_NE(of_world(*world), added);
    world->erase<demo::Lifetime>(b);

    // An entity without components still counts.
    const Entity c = world->create();
    EXPECT_EQ(of_world(*world), base + entity_hash(c.index(), c.version()));
    world->destroy(c);
    EXPECT_EQ(of_world(*world), base);
}

TEST(Checksum, ChangesWithVersion) {
    auto world = make_world();
    const Entity first = world->create();
    world->emplace<demo::Position>(first, 3.0F, 4.0F);
    const std::uint64_t v1 = of_world(*world);

    world->destroy(first);
    const Entity second = world->create();
    ASSERT_EQ(second.index(), first.index());
    ASSERT_EQ(second.version(), first.version() + 1);
    world->emplace<demo::Position>(second, 3.0F, 4.0F);
    const std::uint64_t v2 = of_world(*world);
    EXPECT_NE(v2, v1);
    EXPECT_EQ(v2, entity_hash(0, 2) + head(ids::position, second).f32(3.0F).f32(4.0F).hash());
}

TEST(ChecksumSlices, SlicesAddUpToTheWholeWorld) {
    auto world = make_world();
    for (int i = 0; i < 300; ++i) {
        const Entity e = world->create();
        if (i % 3 != 0) {
            world->emplace<demo::Position>(e, static_cast<float>(i), 1.0F);
        }
        if (i % 5 == 0) {
            world->emplace<demo::Name>(e, "n" + std::to_string(i));
        }
        if (i % 7 == 0) {
            world->destroy(e);  // holes in the index space
        }
    }
    const checksum::slice_sum whole = of_world(*world, checksum::index_range{});
    EXPECT_EQ(whole.hash, of_world(*world));
    EXPECT_EQ(whole.entities, world->alive());

    checksum::slice_sum sum;
    for (const auto& [first, end] : {std::pair{0U, 1U}, std::pair{1U, 100U}, std::pair{100U, 257U},
                                    std::pair{257U, 0xFFFFFFFFU}}) {
        const auto part = of_world(*world, checksum::index_range{first, end});
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
    world->emplace<demo::Health>(a, 5);
    world->emplace<demo::Health>(b, 6);
    const checksum::index_range only_b{b.index(), b.index() + 1};
    const auto before = of_world(*world, only_b);
    EXPECT_EQ(before.entities, 1U);
    EXPECT_EQ(before.hash, entity_hash(b.index(), b.version()) + head(ids::health, b).i32(6).hash());
    world->patch<demo::Health>(a, [](demo::Health& h) { h.value = 50; });
    EXPECT_EQ(of_world(*world, only_b).hash, before.hash);
    world->patch<demo::Health>(b, [](demo::Health& h) { h.value = 60; });
    EXPECT_NE(of_world(*world, only_b).hash, before.hash);
}

TEST(Checksum, IgnoresComponentsThatAreNotReplicated) {
    auto world = make_world();
    const Entity e = world->create();
    world->emplace<demo::Velocity>(e, 1.0F, 1.0F);
    const std::uint64_t base = of_world(*world);
    world->emplace<LocalOnly>(e, 42);
    EXPECT_EQ(of_world(*world), base);
    // A replicated type the registry at hand does not have is not replicated by it.
    world->emplace<Spot>(e, 1.0F, 1.0F);
    EXPECT_EQ(checksum::of_world(*world, ecsnet::testing::demo_types()), base);
    EXPECT_NE(of_world(*world), base);
}

TEST(Checksum, LeavesOutTypesReplicatedToTheirOwnerOnly) {
    proto::component_registry registry = ecsnet::testing::test_types();
    const std::uint16_t secret = registry.add<Secret>();
    auto world = make_world();
    const Entity e = world->create();
    world->emplace<demo::Health>(e, 3);
    const std::uint64_t base = checksum::of_world(*world, registry);
    EXPECT_EQ(base, of_world(*world));
    world->emplace<Secret>(e, 1.0F, 2.0F);
    EXPECT_EQ(checksum::of_world(*world, registry), base)
        << "an owner-only value would make every other client's checksum disagree";
    EXPECT_EQ(checksum::of_world(*world, registry, checksum::index_range{0, 1}).hash, base);
    EXPECT_TRUE(registry.info(secret).owner_only);
}

}  // namespace checksum_test
