#include "ecsnet/ecs/entity.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <sstream>
#include <type_traits>
#include <unordered_set>

namespace entity_test {

using ecsnet::ecs::Entity;
using ecsnet::ecs::null_entity;
using ecsnet::ecs::to_string;

using tiny_traits = ecsnet::ecs::entity_traits<std::uint8_t, std::uint8_t>;
using TinyEntity = ecsnet::ecs::basic_entity<tiny_traits>;

static_assert(std::is_trivially_copyable_v<Entity>);
static_assert(std::is_trivially_copyable_v<TinyEntity>);
static_assert(sizeof(TinyEntity) == 2);

TEST(Entity, DefaultConstructedIsNull) {
    constexpr Entity e{};
    EXPECT_TRUE(e.is_null());
    EXPECT_FALSE(static_cast<bool>(e));
    EXPECT_EQ(e.index(), 0U);
    EXPECT_EQ(e.version(), 0U);
    EXPECT_EQ(e, null_entity<ecsnet::ecs::default_entity_traits>);
}

TEST(Entity, NullnessDependsOnVersionOnly) {
    constexpr Entity versioned{0, 1};
    EXPECT_FALSE(versioned.is_null());
    EXPECT_TRUE(static_cast<bool>(versioned));

    constexpr Entity no_version{42, 0};
    EXPECT_TRUE(no_version.is_null());
    EXPECT_FALSE(static_cast<bool>(no_version));
}

TEST(Entity, KeepsIndexAndVersion) {
    constexpr Entity e{7, 3};
    static_assert(e.index() == 7 && e.version() == 3);
    EXPECT_EQ(e.index(), 7U);
    EXPECT_EQ(e.version(), 3U);
}

TEST(Entity, CopiesCompareEqual) {
    const Entity a{5, 2};
    Entity b{};
    b = a;
    EXPECT_EQ(a, b);
    EXPECT_EQ(b.index(), 5U);
    EXPECT_EQ(b.version(), 2U);
}

TEST(Entity, ToStringIsIndexColonVersion) {
    EXPECT_EQ(to_string(Entity{5, 2}), "5:2");
    EXPECT_EQ(to_string(Entity{}), "0:0");
    EXPECT_EQ(to_string(Entity{4294967294U, 4294967295U}), "4294967294:4294967295");
}

TEST(Entity, ToStringPrintsTinyTypesAsNumbersNotCharacters) {
    // std::uint8_t is a character type: it must still be printed as a number.
    EXPECT_EQ(to_string(TinyEntity{65, 66}), "65:66");
    EXPECT_EQ(to_string(TinyEntity{0, 255}), "0:255");
}

TEST(Entity, StreamOutputMatchesToString) {
    std::ostringstream out;
    out << Entity{12, 1} << ' ' << TinyEntity{3, 9};
    EXPECT_EQ(out.str(), "12:1 3:9");
}

TEST(Entity, EqualityComparesIndexAndVersion) {
    EXPECT_EQ((Entity{1, 1}), (Entity{1, 1}));
    EXPECT_NE((Entity{1, 1}), (Entity{1, 2}));
    EXPECT_NE((Entity{1, 1}), (Entity{2, 1}));
}

TEST(Entity, OrdersByIndexThenVersion) {
    EXPECT_LT((Entity{1, 9}), (Entity{2, 1}));
    EXPECT_LT((Entity{2, 1}), (Entity{2, 2}));
    EXPECT_GT((Entity{3, 0}), (Entity{2, 7}));
    EXPECT_LE((Entity{4, 4}), (Entity{4, 4}));
    EXPECT_FALSE((Entity{4, 5}) < (Entity{4, 4}));
}

TEST(Entity, HashIsConsistentAndUsableInUnorderedSet) {
    const std::hash<Entity> hash;
    EXPECT_EQ(hash(Entity{3, 1}), hash(Entity{3, 1}));
    // Same index at another version, or the index and version swapped, are other entities.
    EXPECT_NE(hash(Entity{3, 1}), hash(Entity{3, 2}));
    EXPECT_NE(hash(Entity{1, 3}), hash(Entity{3, 1}));

    std::unordered_set<Entity> set;
    for (std::uint32_t index = 0; index < 1000; ++index) {
        set.insert(Entity{index, 1});
        set.insert(Entity{index, 2});
    }
    EXPECT_EQ(set.size(), 2000U);
    EXPECT_FALSE(set.insert(Entity{500, 2}).second);
    EXPECT_EQ(set.count(Entity{999, 1}), 1U);
    EXPECT_EQ(set.count(Entity{999, 3}), 0U);
    EXPECT_EQ(set.count(Entity{1000, 1}), 0U);
}

TEST(Entity, TinyTraitsLimits) {
    static_assert(tiny_traits::null_version == 0);
    static_assert(tiny_traits::first_version == 1);
    static_assert(tiny_traits::max_version == 255);
    static_assert(tiny_traits::max_index == 254);
    static_assert(tiny_traits::no_index == 255);

    const TinyEntity e{254, 255};
    EXPECT_EQ(e.index(), 254U);
    EXPECT_EQ(e.version(), 255U);
    EXPECT_FALSE(e.is_null());
    EXPECT_TRUE((TinyEntity{254, 0}).is_null());
}

TEST(Entity, TinyEntitiesHashDistinctly) {
    std::unordered_set<TinyEntity> set;
    for (unsigned index = 0; index <= 254; ++index) {
        for (unsigned version = 1; version <= 255; version += 127) {
            set.insert(
                TinyEntity{static_cast<std::uint8_t>(index), static_cast<std::uint8_t>(version)});
        }
    }
    EXPECT_EQ(set.size(), 255U * 3U);
    EXPECT_EQ(set.count(TinyEntity{10, 128}), 1U);
    EXPECT_EQ(set.count(TinyEntity{10, 2}), 0U);
}

}  // namespace entity_test
