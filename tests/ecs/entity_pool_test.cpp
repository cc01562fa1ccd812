#include "ecsnet/ecs/entity_pool.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using ecsnet::ecs::capacity_exhausted;
using ecsnet::ecs::entity_pool_options;

using EntityPool = ecsnet::ecs::basic_entity_pool<ecsnet::ecs::default_entity_traits>;
using Entity = EntityPool::entity_type;

// Version wraps after 255 uses of a slot.
using short_version_traits = ecsnet::ecs::entity_traits<std::uint16_t, std::uint8_t>;
using ShortVersionPool = ecsnet::ecs::basic_entity_pool<short_version_traits>;

// Only indices 0..254 exist.
using tiny_traits = ecsnet::ecs::entity_traits<std::uint8_t, std::uint8_t>;
using TinyPool = ecsnet::ecs::basic_entity_pool<tiny_traits>;
using TinyEntity = TinyPool::entity_type;

entity_pool_options min_free(std::size_t n) {
    entity_pool_options options;
    options.min_free_indices = n;
    return options;
}

TEST(EntityPool, DefaultThresholdIs1024) {
    EXPECT_EQ(EntityPool{}.options().min_free_indices, 1024U);
    EXPECT_EQ(EntityPool{min_free(3)}.options().min_free_indices, 3U);
}

TEST(EntityPool, NewSlotsStartAtVersionOne) {
    EntityPool pool;
    const Entity a = pool.create();
    const Entity b = pool.create();
    const Entity c = pool.create();
    EXPECT_EQ(a, (Entity{0, 1}));
    EXPECT_EQ(b, (Entity{1, 1}));
    EXPECT_EQ(c, (Entity{2, 1}));
    EXPECT_TRUE(pool.valid(a));
    EXPECT_TRUE(pool.valid(b));
    EXPECT_TRUE(pool.valid(c));
    EXPECT_EQ(pool.alive(), 3U);
    EXPECT_EQ(pool.slots(), 3U);
    EXPECT_EQ(pool.free_count(), 0U);
    EXPECT_EQ(pool.retired(), 0U);
}

TEST(EntityPool, ReleaseBumpsTheSlotVersion) {
    EntityPool pool{min_free(0)};
    const Entity first = pool.create();
    EXPECT_FALSE(pool.release(first));
    EXPECT_EQ(pool.version_at(first.index()), 2U);
    EXPECT_FALSE(pool.valid(first));

    const Entity second = pool.create();
    EXPECT_EQ(second, (Entity{0, 2}));
    EXPECT_TRUE(pool.valid(second));
    EXPECT_FALSE(pool.valid(first));
}

TEST(EntityPool, ValidRejectsStaleDestroyedNullAndOutOfRange) {
    EntityPool pool{min_free(0)};
    const Entity a = pool.create();
    const Entity b = pool.create();
    pool.release(b);  // destroyed, index 1 waits for reuse

    EXPECT_TRUE(pool.valid(a));
    EXPECT_FALSE(pool.valid(b)) << "destroyed";
    EXPECT_FALSE(pool.valid(Entity{1, 2})) << "the next version of a free slot is not alive yet";
    EXPECT_FALSE(pool.valid(Entity{})) << "null";
    EXPECT_FALSE(pool.valid(Entity{0, 0})) << "null version at a live index";
    EXPECT_FALSE(pool.valid(Entity{0, 2})) << "future version of a live index";
    EXPECT_FALSE(pool.valid(Entity{2, 1})) << "index never handed out";
    EXPECT_FALSE(pool.valid(Entity{4000000000U, 1})) << "far out of range";

    const Entity b2 = pool.create();
    ASSERT_EQ(b2, (Entity{1, 2}));
    EXPECT_FALSE(pool.valid(b)) << "stale: same index, older version";
    EXPECT_TRUE(pool.valid(b2));
}

// Threshold k: a freed index comes back only once more than k indices wait.
class EntityPoolThreshold : public ::testing::TestWithParam<std::size_t> {};

TEST_P(EntityPoolThreshold, RecyclesOnlyWhenMoreThanThresholdWait) {
    const std::size_t k = GetParam();
    EntityPool pool{min_free(k)};
    std::vector<Entity> entities;
    for (std::size_t i = 0; i <= k; ++i) {
        entities.push_back(pool.create());
    }
    // Exactly k wait: not enough, a fresh index is handed out.
    for (std::size_t i = 0; i < k; ++i) {
        pool.release(entities[i]);
    }
    ASSERT_EQ(pool.free_count(), k);
    const Entity fresh = pool.create();
    EXPECT_EQ(fresh, (Entity{static_cast<std::uint32_t>(k + 1), 1}));
    EXPECT_EQ(pool.free_count(), k);

    // k + 1 wait: the oldest freed index comes back at its bumped version.
    pool.release(entities[k]);
    ASSERT_EQ(pool.free_count(), k + 1);
    const Entity reused = pool.create();
    EXPECT_EQ(reused, (Entity{0, 2}));
    EXPECT_EQ(pool.free_count(), k);

    // Back to exactly k waiting: fresh again.
    EXPECT_EQ(pool.create(), (Entity{static_cast<std::uint32_t>(k + 2), 1}));
    EXPECT_EQ(pool.slots(), k + 3);
    EXPECT_EQ(pool.alive(), 3U);
}

INSTANTIATE_TEST_SUITE_P(EntityPool, EntityPoolThreshold,
                         ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{3},
                                           std::size_t{1024}));

TEST(EntityPool, ReusesIndicesInFifoOrder) {
    EntityPool pool{min_free(0)};
    std::vector<Entity> entities;
    for (int i = 0; i < 5; ++i) {
        entities.push_back(pool.create());
    }
    for (const std::uint32_t index : {3U, 1U, 4U, 0U, 2U}) {
        pool.release(entities[index]);
    }
    std::vector<std::uint32_t> order;
    for (int i = 0; i < 5; ++i) {
        const Entity e = pool.create();
        EXPECT_EQ(e.version(), 2U);
        order.push_back(e.index());
    }
    EXPECT_THAT(order, ::testing::ElementsAre(3U, 1U, 4U, 0U, 2U));
    EXPECT_EQ(pool.slots(), 5U);
}

TEST(EntityPool, FifoOrderAboveAThreshold) {
    EntityPool pool{min_free(3)};
    std::vector<Entity> entities;
    for (int i = 0; i < 5; ++i) {
        entities.push_back(pool.create());
    }
    for (const std::uint32_t index : {3U, 1U, 4U, 0U, 2U}) {
        pool.release(entities[index]);
    }
    EXPECT_EQ(pool.create(), (Entity{3, 2}));  // 5 wait
    EXPECT_EQ(pool.create(), (Entity{1, 2}));  // 4 wait
    EXPECT_EQ(pool.create(), (Entity{5, 1}));  // 3 wait: fresh
    EXPECT_EQ(pool.free_count(), 3U);
}

TEST(EntityPool, SlotWhoseVersionWouldWrapIsRetired) {
    ShortVersionPool pool{min_free(0)};
    // Cycle index 0 through every version: 1..255.
    for (unsigned expected = 1; expected <= 255; ++expected) {
        const auto e = pool.create();
        ASSERT_EQ(e.index(), 0U);
        ASSERT_EQ(e.version(), expected);
        const bool retired = pool.release(e);
        ASSERT_EQ(retired, expected == 255) << "at version " << expected;
    }
    EXPECT_EQ(pool.retired(), 1U);
    EXPECT_EQ(pool.free_count(), 0U);
    EXPECT_EQ(pool.alive(), 0U);
    EXPECT_EQ(pool.version_at(0), 255U);
    EXPECT_TRUE(pool.current(0).is_null());
    EXPECT_FALSE(pool.valid({0, 255}));
    EXPECT_FALSE(pool.valid({0, 1}));

    // Index 0 is never handed out again, whatever happens next.
    for (int i = 0; i < 2000; ++i) {
        const auto e = pool.create();
        ASSERT_NE(e.index(), 0U) << "retired index came back as " << to_string(e);
        ASSERT_NE(e.version(), 0U);
        pool.release(e);
        ASSERT_EQ(pool.version_at(0), 255U);
    }
}

TEST(EntityPool, RetirementCountsEverySlot) {
    ShortVersionPool pool{min_free(0)};
    // With threshold 0 one index is used until it retires, then the next fresh one.
    std::set<std::uint16_t> retired_indices;
    for (int cycle = 0; cycle < 3 * 255; ++cycle) {
        const auto e = pool.create();
        ASSERT_EQ(retired_indices.count(e.index()), 0U) << to_string(e);
        if (pool.release(e)) {
            retired_indices.insert(e.index());
        }
    }
    EXPECT_EQ(pool.retired(), 3U);
    EXPECT_EQ(retired_indices, (std::set<std::uint16_t>{0, 1, 2}));
    EXPECT_EQ(pool.slots(), 3U);
    EXPECT_EQ(pool.create(), (ShortVersionPool::entity_type{3, 1}));
}

TEST(EntityPool, RunningOutOfIndicesThrows) {
    TinyPool pool;  // default threshold: far more than the 255 indices that exist
    for (unsigned i = 0; i <= tiny_traits::max_index; ++i) {
        const TinyEntity e = pool.create();
        ASSERT_EQ(e.index(), i);
    }
    EXPECT_EQ(pool.alive(), 255U);

    try {
        (void)pool.create();
        FAIL() << "expected capacity_exhausted";
    } catch (const capacity_exhausted& error) {
        const std::string message = error.what();
        EXPECT_THAT(message, ::testing::HasSubstr("exhausted"));
        EXPECT_THAT(message, ::testing::HasSubstr("255"));
    }
    // A failed create changes nothing.
    EXPECT_EQ(pool.alive(), 255U);
    EXPECT_EQ(pool.slots(), 255U);
    EXPECT_THROW((void)pool.create(), ecsnet::ecs::error);
}

TEST(EntityPool, RecyclesBelowThresholdWhenNoFreshIndexIsLeft) {
    TinyPool pool;  // threshold 1024 can never be reached with 255 indices
    std::vector<TinyEntity> entities;
    for (unsigned i = 0; i <= tiny_traits::max_index; ++i) {
        entities.push_back(pool.create());
    }
    pool.release(entities[7]);
    pool.release(entities[42]);
    ASSERT_EQ(pool.free_count(), 2U);

    EXPECT_EQ(pool.create(), (TinyEntity{7, 2}));
    EXPECT_EQ(pool.create(), (TinyEntity{42, 2}));
    EXPECT_THROW((void)pool.create(), capacity_exhausted);
    EXPECT_TRUE(pool.valid({7, 2}));
    EXPECT_FALSE(pool.valid(entities[7]));
}

TEST(EntityPool, ExhaustedWhenEveryIndexIsRetired) {
    TinyPool pool{min_free(0)};
    std::size_t retired = 0;
    for (int cycle = 0; cycle < 255 * 255; ++cycle) {
        const TinyEntity e = pool.create();
        ASSERT_NE(e.version(), 0U);
        retired += pool.release(e) ? 1 : 0;
    }
    EXPECT_EQ(retired, 255U);
    EXPECT_EQ(pool.retired(), 255U);
    EXPECT_EQ(pool.free_count(), 0U);
    try {
        (void)pool.create();
        FAIL() << "expected capacity_exhausted";
    } catch (const capacity_exhausted& error) {
        EXPECT_THAT(error.what(), ::testing::HasSubstr("255 retired"));
    }
}

TEST(EntityPool, CurrentAndVersionAt) {
    EntityPool pool{min_free(0)};
    const Entity a = pool.create();
    const Entity b = pool.create();

    EXPECT_EQ(pool.current(0), a);
    EXPECT_EQ(pool.current(1), b);
    EXPECT_EQ(pool.version_at(1), 1U);

    pool.release(b);
    EXPECT_TRUE(pool.current(1).is_null()) << "free slot has no live entity";
    EXPECT_EQ(pool.version_at(1), 2U) << "free slot holds the next version";

    const Entity b2 = pool.create();
    EXPECT_EQ(pool.current(1), b2);
    EXPECT_EQ(pool.version_at(1), 2U);

    EXPECT_TRUE(pool.current(2).is_null());
    EXPECT_TRUE(pool.current(123456).is_null());
    EXPECT_EQ(pool.version_at(2), 0U);
    EXPECT_EQ(pool.version_at(123456), 0U);
}

TEST(EntityPool, EachVisitsLiveEntitiesInIndexOrder) {
    EntityPool pool{min_free(0)};
    std::vector<Entity> created;
    for (int i = 0; i < 6; ++i) {
        created.push_back(pool.create());
    }
    pool.release(created[1]);
    pool.release(created[4]);
    const Entity reused = pool.create();  // index 1 at version 2
    ASSERT_EQ(reused, (Entity{1, 2}));

    std::vector<Entity> visited;
    pool.each([&](Entity e) { visited.push_back(e); });
    EXPECT_THAT(visited, ::testing::ElementsAre(Entity{0, 1}, Entity{1, 2}, Entity{2, 1},
                                                Entity{3, 1}, Entity{5, 1}));
    EXPECT_EQ(visited.size(), pool.alive());
}

TEST(EntityPool, Bookkeeping) {
    EntityPool pool{min_free(2)};
    std::vector<Entity> entities;
    for (int i = 0; i < 4; ++i) {
        entities.push_back(pool.create());
    }
    EXPECT_EQ(pool.alive(), 4U);
    EXPECT_EQ(pool.free_count(), 0U);

    pool.release(entities[0]);
    pool.release(entities[1]);
    pool.release(entities[2]);
    EXPECT_EQ(pool.alive(), 1U);
    EXPECT_EQ(pool.free_count(), 3U);
    EXPECT_EQ(pool.slots(), 4U);

    (void)pool.create();  // 3 > 2 wait: reuse
    EXPECT_EQ(pool.alive(), 2U);
    EXPECT_EQ(pool.free_count(), 2U);
    EXPECT_EQ(pool.slots(), 4U);

    (void)pool.create();  // 2 wait: fresh
    EXPECT_EQ(pool.alive(), 3U);
    EXPECT_EQ(pool.free_count(), 2U);
    EXPECT_EQ(pool.slots(), 5U);
    EXPECT_EQ(pool.alive() + pool.free_count() + pool.retired(), pool.slots());
}

}  // namespace
