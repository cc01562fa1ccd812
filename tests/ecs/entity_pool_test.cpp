#include "ecsnet/ecs/entity_pool.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace entity_pool_test {

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

TEST(EntityPool, DefaultThresholdIs0) {
    EXPECT_EQ(EntityPool{}.options().min_free_indices, 0U);
    EXPECT_EQ(EntityPool{min_free(3)}.options().min_free_indices, 3U);
}

TEST(EntityPool, ByDefaultAFreedIndexIsReusedAtOnceAtTheNextVersion) {
    EntityPool pool;
    const Entity a = pool.create();
    const Entity b = pool.create();
    pool.release(b);
    pool.release(a);
    EXPECT_EQ(pool.create(), Entity(b.index(), b.version() + 1)) << "the oldest freed first";
    EXPECT_EQ(pool.create(), Entity(a.index(), a.version() + 1));
    EXPECT_EQ(pool.create().index(), 2U) << "then fresh indices";
    EXPECT_FALSE(pool.valid(a));
    EXPECT_FALSE(pool.valid(b));
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

// ---- save / restore / revive (persistence) -----------------------------------------------

using PoolState = EntityPool::state;

// Everything a pool shows from outside, to compare two pools or a pool before and after.
struct pool_view {
    std::vector<std::uint32_t> versions;
    std::vector<bool> alive;
    std::vector<std::uint32_t> free;
    std::size_t live{0};
    std::size_t slots{0};
    std::size_t free_count{0};
    std::size_t retired{0};
    bool operator==(const pool_view&) const = default;
};

pool_view view_of(const EntityPool& pool) {
    pool_view v;
    const PoolState s = pool.save();
    v.versions = s.versions;
    v.alive.assign(s.alive.begin(), s.alive.end());
    v.free = s.free;
    v.live = pool.alive();
    v.slots = pool.slots();
    v.free_count = pool.free_count();
    v.retired = pool.retired();
    return v;
}

// A pool with live, free (in a non-sorted order), reused and fresh slots, free indices
// consumed from the front of the queue (free_head_ past 0).
EntityPool busy_pool(std::size_t threshold) {
    EntityPool pool{min_free(threshold)};
    std::vector<Entity> entities;
    for (int i = 0; i < 10; ++i) {
        entities.push_back(pool.create());
    }
    for (const std::uint32_t index : {7U, 2U, 9U, 0U, 5U}) {
        pool.release(entities[index]);
    }
    (void)pool.create();  // threshold 0: reuses 7 at version 2, leaving 2, 9, 0, 5
    return pool;
}

TEST(EntityPoolPersistence, SaveListsEverySlotAndTheFreeQueueInReuseOrder) {
    const EntityPool pool = busy_pool(0);
    const PoolState s = pool.save();
    EXPECT_THAT(s.versions, ::testing::ElementsAre(2U, 1U, 2U, 1U, 1U, 2U, 1U, 2U, 1U, 2U));
    EXPECT_THAT(s.alive, ::testing::ElementsAre(0, 1, 0, 1, 1, 0, 1, 1, 1, 0));
    EXPECT_THAT(s.free, ::testing::ElementsAre(2U, 9U, 0U, 5U));
}

TEST(EntityPoolPersistence, RoundTripKeepsIdsVersionsAndCounts) {
    const EntityPool original = busy_pool(0);
    EntityPool restored{min_free(0)};
    restored.restore(original.save());
    EXPECT_EQ(view_of(restored), view_of(original));
    EXPECT_TRUE(restored.valid({7, 2}));
    EXPECT_TRUE(restored.valid({1, 1}));
    EXPECT_FALSE(restored.valid({7, 1})) << "stale id stays stale";
    EXPECT_FALSE(restored.valid({2, 1})) << "destroyed id stays dead";
    EXPECT_FALSE(restored.valid({2, 2})) << "the next version of a free slot is not alive";
    EXPECT_EQ(restored.version_at(2), 2U);
    EXPECT_EQ(restored.current(7), (Entity{7, 2}));
    EXPECT_TRUE(restored.current(0).is_null());
}

// Parameter: the threshold; the next creates must match the original's, recycled and fresh.
class EntityPoolRestoreContinues : public ::testing::TestWithParam<std::size_t> {};

TEST_P(EntityPoolRestoreContinues, NextCreatesAndReleasesMatchTheOriginal) {
    EntityPool original = busy_pool(GetParam());
    EntityPool restored{min_free(GetParam())};
    restored.restore(original.save());
    for (int i = 0; i < 12; ++i) {
        const Entity a = original.create();
        const Entity b = restored.create();
        ASSERT_EQ(a, b) << "create #" << i;
        if (i % 3 == 0) {
            original.release(a);
            restored.release(b);
        }
    }
    EXPECT_EQ(view_of(restored), view_of(original));
}

INSTANTIATE_TEST_SUITE_P(EntityPoolPersistence, EntityPoolRestoreContinues,
                         ::testing::Values(std::size_t{0}, std::size_t{2}, std::size_t{1024}));

TEST(EntityPoolPersistence, RoundTripAfterManyReusesDropsTheConsumedQueuePrefix) {
    // Past 4096 pops the queue drops its consumed prefix: save() must list only what waits.
    EntityPool original{min_free(0)};
    std::vector<Entity> entities;
    for (int i = 0; i < 6000; ++i) {
        entities.push_back(original.create());
    }
    for (const Entity e : entities) {
        original.release(e);
    }
    for (int i = 0; i < 4500; ++i) {
        (void)original.create();
    }
    ASSERT_EQ(original.free_count(), 1500U);
    EntityPool restored{min_free(0)};
    restored.restore(original.save());
    EXPECT_EQ(view_of(restored), view_of(original));
    for (int i = 0; i < 2000; ++i) {
        ASSERT_EQ(restored.create(), original.create()) << "create #" << i;
    }
}

TEST(EntityPoolPersistence, RoundTripKeepsRetiredSlots) {
    ShortVersionPool original{min_free(0)};
    for (unsigned v = 1; v <= 255; ++v) {
        original.release(original.create());  // index 0 retires at 255
    }
    const auto keep = original.create();  // index 1
    ASSERT_EQ(keep, (ShortVersionPool::entity_type{1, 1}));
    ASSERT_EQ(original.retired(), 1U);

    ShortVersionPool restored{min_free(0)};
    restored.restore(original.save());
    EXPECT_EQ(restored.retired(), 1U);
    EXPECT_EQ(restored.alive(), 1U);
    EXPECT_EQ(restored.free_count(), 0U);
    EXPECT_EQ(restored.version_at(0), 255U);
    EXPECT_TRUE(restored.valid(keep));
    for (int i = 0; i < 600; ++i) {
        const auto e = restored.create();
        ASSERT_NE(e.index(), 0U) << "a retired index came back after restore";
        restored.release(e);
    }
}

TEST(EntityPoolPersistence, RestoreReplacesAPoolInUseAndClearsStamps) {
    const EntityPool original = busy_pool(0);
    EntityPool target{min_free(0)};
    for (int i = 0; i < 20; ++i) {
        const Entity e = target.create();
        target.set_stamp(e.index(), 77);
    }
    target.restore(original.save());
    EXPECT_EQ(view_of(target), view_of(original));
    for (std::uint32_t i = 0; i < target.slots(); ++i) {
        EXPECT_EQ(target.stamp(i), 0U) << "slot " << i;
    }
}

TEST(EntityPoolPersistence, RestoringAnEmptyStateGivesAnEmptyPool) {
    EntityPool pool{min_free(0)};
    (void)pool.create();
    pool.restore(PoolState{});
    EXPECT_EQ(pool.slots(), 0U);
    EXPECT_EQ(pool.alive(), 0U);
    EXPECT_EQ(pool.create(), (Entity{0, 1}));
}

// Each inconsistency is refused with invalid_argument, and the pool stays as it was.
struct bad_state {
    const char* what;
    PoolState state;
    const char* message;
};

std::vector<bad_state> bad_states() {
    // A valid base: 0 alive v3, 1 free v2, 2 alive v1, 3 free v5.
    const PoolState base{{3, 2, 1, 5}, {1, 0, 1, 0}, {3, 1}};
    std::vector<bad_state> out;
    {
        PoolState s = base;
        s.alive.pop_back();
        out.push_back({"sizes", s, "4 versions but 3 alive flags"});
    }
    {
        PoolState s = base;
        s.free.push_back(4);
        out.push_back({"free index out of range", s, "free index 4"});
    }
    {
        PoolState s = base;
        s.free.push_back(2);
        out.push_back({"free index alive", s, "free index 2"});
    }
    {
        PoolState s = base;
        s.free.push_back(3);
        out.push_back({"free index twice", s, "free index 3"});
    }
    {
        PoolState s = base;
        s.versions[1] = 0;
        out.push_back({"free slot with the null version", s, "free index 1"});
    }
    {
        PoolState s = base;
        s.versions[2] = 0;
        out.push_back({"alive slot with the null version", s, "slot 2 has the null version"});
    }
    {
        PoolState s = base;
        s.free = {3};
        out.push_back({"lost slot", s, "slot 1 is neither alive, free nor retired"});
    }
    return out;
}

TEST(EntityPoolPersistence, TheValidBaseOfTheBadStatesRestores) {
    EntityPool pool{min_free(0)};
    pool.restore(PoolState{{3, 2, 1, 5}, {1, 0, 1, 0}, {3, 1}});
    EXPECT_EQ(pool.alive(), 2U);
    EXPECT_EQ(pool.free_count(), 2U);
    EXPECT_EQ(pool.create(), (Entity{3, 5}));
    EXPECT_EQ(pool.create(), (Entity{1, 2}));
}

TEST(EntityPoolPersistence, RestoreRefusesEachInconsistencyAndLeavesThePoolUnchanged) {
    for (const bad_state& bad : bad_states()) {
        SCOPED_TRACE(bad.what);
        EntityPool pool = busy_pool(0);
        const pool_view before = view_of(pool);
        try {
            pool.restore(bad.state);
            ADD_FAILURE() << "restore accepted " << bad.what;
        } catch (const std::invalid_argument& e) {
            EXPECT_THAT(e.what(), ::testing::HasSubstr(bad.message));
        }
        EXPECT_EQ(view_of(pool), before);
        // Still usable as before.
        EntityPool twin = busy_pool(0);
        EXPECT_EQ(pool.create(), twin.create());
    }
}

TEST(EntityPoolPersistence, RestoreRefusesMoreSlotsThanIndicesExist) {
    TinyPool pool;
    (void)pool.create();
    TinyPool::state s;
    s.versions.assign(256, 1);  // indices 0..254 exist
    s.alive.assign(256, 1);
    EXPECT_THROW(pool.restore(s), std::invalid_argument);
    EXPECT_EQ(pool.slots(), 1U);
    EXPECT_EQ(pool.alive(), 1U);
}

TEST(EntityPoolPersistence, ReviveAFreeSlotTakesItOffTheQueue) {
    EntityPool pool = busy_pool(0);  // free: 2, 9, 0, 5 (each at version 2)
    const Entity revived{9, 2};
    pool.revive(revived);
    EXPECT_TRUE(pool.valid(revived));
    EXPECT_EQ(pool.alive(), 7U);
    EXPECT_EQ(pool.free_count(), 3U);
    EXPECT_THAT(pool.save().free, ::testing::ElementsAre(2U, 0U, 5U));
    EXPECT_EQ(pool.create(), (Entity{2, 2}));
    EXPECT_EQ(pool.create(), (Entity{0, 2}));
    EXPECT_EQ(pool.create(), (Entity{5, 2}));
    EXPECT_EQ(pool.create(), (Entity{10, 1}));
}

TEST(EntityPoolPersistence, ARevivedIndexReleasedAgainIsQueuedOnceAtTheEnd) {
    EntityPool pool = busy_pool(0);  // free: 2, 9, 0, 5 (each at version 2)
    pool.revive(Entity{9, 2});
    pool.revive(Entity{0, 2});
    pool.release(Entity{9, 2});  // back at version 3, behind 5
    EXPECT_EQ(pool.free_count(), 3U);
    EXPECT_EQ(pool.retired(), 0U);
    EXPECT_THAT(pool.save().free, ::testing::ElementsAre(2U, 5U, 9U));
    EXPECT_EQ(pool.create(), (Entity{2, 2}));
    EXPECT_EQ(pool.create(), (Entity{5, 2}));
    EXPECT_EQ(pool.create(), (Entity{9, 3}));
    EXPECT_EQ(pool.create(), (Entity{10, 1}));
}

// A journal replay revives every spawned row into a world with many free slots (issue 37):
// 100k revives among 1M free slots. Each revive searched and erased the queue before, about
// 10^11 steps (the test timed out); the queue is now settled once.
TEST(EntityPoolPersistence, ReviveIsLinearInTheFreeList) {
    constexpr std::uint32_t slots = 1'000'000;
    constexpr std::uint32_t revived = 100'000;
    EntityPool::state s;
    s.versions.assign(slots, 2);
    s.alive.assign(slots, 0);
    for (std::uint32_t i = 0; i < slots; ++i) {
        s.free.push_back(i);
    }
    EntityPool pool;
    pool.restore(s);
    // Every tenth index, from the back: the old search walked nearly the whole queue each time.
    for (std::uint32_t k = 0; k < revived; ++k) {
        pool.revive(Entity{slots - 1 - 10 * k, 2});
    }
    EXPECT_EQ(pool.alive(), revived);
    EXPECT_EQ(pool.free_count(), slots - revived);
    EXPECT_EQ(pool.retired(), 0U);
    const EntityPool::state after = pool.save();
    ASSERT_EQ(after.free.size(), slots - revived);
    EXPECT_EQ(after.free.front(), 0U);
    EXPECT_TRUE(std::is_sorted(after.free.begin(), after.free.end())) << "the order is kept";
    EXPECT_TRUE(std::none_of(after.free.begin(), after.free.end(),
                             [](std::uint32_t i) { return (slots - 1 - i) % 10 == 0; }));
}

TEST(EntityPoolPersistence, ReviveAtAnotherVersionThanTheSlotHolds) {
    // The journal knows the version the world handed out; the slot may hold an older one.
    EntityPool pool = busy_pool(0);
    pool.revive(Entity{0, 6});
    EXPECT_TRUE(pool.valid({0, 6}));
    EXPECT_FALSE(pool.valid({0, 2}));
    EXPECT_EQ(pool.version_at(0), 6U);
    pool.release(Entity{0, 6});
    EXPECT_EQ(pool.version_at(0), 7U);
}

TEST(EntityPoolPersistence, ReviveBeyondTheEndFreesTheSlotsInBetween) {
    EntityPool pool{min_free(0)};
    const Entity a = pool.create();  // 0
    pool.revive(Entity{4, 3});
    EXPECT_EQ(pool.slots(), 5U);
    EXPECT_EQ(pool.alive(), 2U);
    EXPECT_TRUE(pool.valid(a));
    EXPECT_TRUE(pool.valid({4, 3}));
    EXPECT_EQ(pool.free_count(), 3U);
    EXPECT_THAT(pool.save().free, ::testing::ElementsAre(1U, 2U, 3U));
    for (std::uint32_t i = 1; i <= 3; ++i) {
        EXPECT_TRUE(pool.current(i).is_null());
        EXPECT_EQ(pool.version_at(i), 1U);
    }
    EXPECT_EQ(pool.create(), (Entity{1, 1}));
    EXPECT_EQ(pool.create(), (Entity{2, 1}));
    EXPECT_EQ(pool.create(), (Entity{3, 1}));
    EXPECT_EQ(pool.create(), (Entity{5, 1}));
    EXPECT_EQ(pool.alive() + pool.free_count() + pool.retired(), pool.slots());
    // The state it leaves restores.
    EntityPool copy{min_free(0)};
    EXPECT_NO_THROW(copy.restore(pool.save()));
}

TEST(EntityPoolPersistence, ReviveTheNextFreshIndexAddsNoFreeSlot) {
    EntityPool pool{min_free(0)};
    (void)pool.create();
    pool.revive(Entity{1, 1});
    EXPECT_EQ(pool.slots(), 2U);
    EXPECT_EQ(pool.free_count(), 0U);
    EXPECT_EQ(pool.create(), (Entity{2, 1}));
}

TEST(EntityPoolPersistence, ReviveARetiredSlot) {
    ShortVersionPool pool{min_free(0)};
    for (unsigned v = 1; v <= 255; ++v) {
        pool.release(pool.create());
    }
    ASSERT_EQ(pool.retired(), 1U);
    pool.revive(ShortVersionPool::entity_type{0, 255});
    EXPECT_EQ(pool.retired(), 0U);
    EXPECT_EQ(pool.alive(), 1U);
    EXPECT_EQ(pool.free_count(), 0U);
    EXPECT_TRUE(pool.valid({0, 255}));
    // Released at the maximum version, it retires again.
    EXPECT_TRUE(pool.release(ShortVersionPool::entity_type{0, 255}));
    EXPECT_EQ(pool.retired(), 1U);
    EXPECT_EQ(pool.alive() + pool.free_count() + pool.retired(), pool.slots());
}

TEST(EntityPoolPersistence, ReviveIsRefusedOnAnAliveSlotOrANullEntity) {
    EntityPool pool = busy_pool(0);
    const pool_view before = view_of(pool);
    try {
        pool.revive(Entity{1, 1});
        ADD_FAILURE() << "revived a live entity";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr("alive at version 1"));
    }
    EXPECT_THROW(pool.revive(Entity{1, 5}), std::invalid_argument) << "other version, same slot";
    EXPECT_THROW(pool.revive(Entity{2, 0}), std::invalid_argument) << "null version";
    EXPECT_THROW(pool.revive(Entity{EntityPool::index_type{0xFFFFFFFFU}, 1}), std::invalid_argument)
        << "no_index";
    EXPECT_EQ(view_of(pool), before);
}

}  // namespace entity_pool_test
