#include "ecsnet/ecs/sparse_set.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace sparse_set_test {

using ecsnet::ecs::Entity;
using ecsnet::ecs::detail::paged_array;

// The sparse set's mutators are for storages only; expose them to test the set alone.
template <typename E>
class test_set : public ecsnet::ecs::basic_sparse_set<E> {
public:
    using base = ecsnet::ecs::basic_sparse_set<E>;
    std::size_t insert(E e) { return base::insert_entity(e); }
    std::size_t erase(E e) { return base::erase_entity(e); }
    void clear() { base::clear_entities(); }
};

using SparseSet = test_set<Entity>;

std::vector<Entity> packed(const SparseSet& set) {
    return {set.entities().begin(), set.entities().end()};
}

// --- paged_array -------------------------------------------------------------------------

TEST(SparseSetPagedArray, UnwrittenElementsReadAsEmptyWithoutAllocating) {
    const paged_array<std::uint32_t, 0xFFFFFFFFU> array;
    EXPECT_EQ(array.get(0), 0xFFFFFFFFU);
    EXPECT_EQ(array.get(10'000'000), 0xFFFFFFFFU);
    EXPECT_EQ(array.allocated_pages(), 0U);
}

TEST(SparseSetPagedArray, LargeIndexAllocatesOnePage) {
    paged_array<std::uint32_t, 0xFFFFFFFFU> array;
    array.at(10'000'000) = 7;
    EXPECT_EQ(array.allocated_pages(), 1U);
    EXPECT_EQ(array.get(10'000'000), 7U);
    EXPECT_EQ(array.existing(10'000'000), 7U);
    // The rest of the page holds the empty value, other pages stay unallocated.
    EXPECT_EQ(array.get(10'000'001), 0xFFFFFFFFU);
    EXPECT_EQ(array.get(0), 0xFFFFFFFFU);
    EXPECT_EQ(array.allocated_pages(), 1U);
}

TEST(SparseSetPagedArray, PageBoundaries) {
    paged_array<int, -1, 8> array;
    array.at(7) = 70;
    EXPECT_EQ(array.allocated_pages(), 1U);
    EXPECT_EQ(array.get(8), -1);
    array.at(8) = 80;
    EXPECT_EQ(array.allocated_pages(), 2U);
    array.at(0) = 0;
    EXPECT_EQ(array.allocated_pages(), 2U);
    EXPECT_EQ(array.get(7), 70);
    EXPECT_EQ(array.get(8), 80);
    EXPECT_EQ(array.get(0), 0);
    EXPECT_EQ(array.get(1), -1);
}

TEST(SparseSetPagedArray, FillOverwritesAllocatedPagesOnly) {
    paged_array<int, -1, 8> array;
    array.at(3) = 3;
    array.at(20) = 20;
    array.fill(5);
    EXPECT_EQ(array.get(3), 5);
    EXPECT_EQ(array.get(0), 5);
    EXPECT_EQ(array.get(20), 5);
    EXPECT_EQ(array.get(8), -1) << "page 1 was never allocated";
    EXPECT_EQ(array.allocated_pages(), 2U);
}

// A page skipped between written ones reads empty through the shared read-only page; a write
// there gets a page of its own and leaves the others' reads as they were.
TEST(SparseSetPagedArray, APageBetweenWrittenOnesReadsEmptyUntilWritten) {
    paged_array<int, -1, 8> first;
    paged_array<int, -1, 8> second;
    first.at(20) = 20;  // pages 0 and 1 unwritten, 2 allocated
    second.at(20) = 21;
    EXPECT_FALSE(first.has_page(3));
    EXPECT_FALSE(first.has_page(12));
    EXPECT_TRUE(first.has_page(20));
    EXPECT_EQ(first.get(12), -1);
    first.at(12) = 12;
    EXPECT_EQ(first.get(12), 12);
    EXPECT_EQ(first.get(3), -1);
    EXPECT_EQ(second.get(12), -1) << "the unwritten page is shared, never written";
    EXPECT_EQ(first.allocated_pages(), 2U);
}

TEST(SparseSetPagedArray, AMoveTakesThePagesAndLeavesAnEmptyArray) {
    paged_array<int, -1, 8> from;
    from.at(3) = 3;
    from.at(30) = 30;
    paged_array<int, -1, 8> to{std::move(from)};
    EXPECT_EQ(to.get(3), 3);
    EXPECT_EQ(to.get(30), 30);
    EXPECT_EQ(to.allocated_pages(), 2U);
    EXPECT_EQ(from.allocated_pages(), 0U);  // NOLINT(bugprone-use-after-move): specified
    EXPECT_EQ(from.get(3), -1);
    from.at(3) = 4;  // usable again
    paged_array<int, -1, 8> other;
    other.at(9) = 9;
    other = std::move(to);  // frees other's page (ASan reports a leak otherwise)
    EXPECT_EQ(other.get(30), 30);
    EXPECT_EQ(other.get(9), -1);
    EXPECT_EQ(from.get(3), 4);
}

// --- basic_sparse_set --------------------------------------------------------------------

TEST(SparseSet, StartsEmpty) {
    const SparseSet set;
    EXPECT_TRUE(set.empty());
    EXPECT_EQ(set.size(), 0U);
    EXPECT_FALSE(set.contains(Entity{0, 1}));
    EXPECT_FALSE(set.contains(Entity{}));
    EXPECT_TRUE(set.find_index(0).is_null());
    EXPECT_EQ(set.structural_version(), 0U);
}

TEST(SparseSet, InsertAppendsToThePackedArray) {
    SparseSet set;
    EXPECT_EQ(set.insert(Entity{5, 1}), 0U);
    EXPECT_EQ(set.insert(Entity{2, 3}), 1U);
    EXPECT_EQ(set.insert(Entity{9, 1}), 2U);
    EXPECT_EQ(set.size(), 3U);
    EXPECT_FALSE(set.empty());
    EXPECT_THAT(packed(set), ::testing::ElementsAre(Entity{5, 1}, Entity{2, 3}, Entity{9, 1}));
    EXPECT_EQ(set.data(), set.entities().data());
    EXPECT_EQ(set.index_of(Entity{5, 1}), 0U);
    EXPECT_EQ(set.index_of(Entity{2, 3}), 1U);
    EXPECT_EQ(set.index_of(Entity{9, 1}), 2U);
}

TEST(SparseSet, ContainsComparesTheVersion) {
    SparseSet set;
    set.insert(Entity{4, 2});
    EXPECT_TRUE(set.contains(Entity{4, 2}));
    EXPECT_FALSE(set.contains(Entity{4, 1})) << "stale version of the same index";
    EXPECT_FALSE(set.contains(Entity{4, 3})) << "newer version of the same index";
    EXPECT_FALSE(set.contains(Entity{3, 2}));
    EXPECT_FALSE(set.contains(Entity{5, 2}));
}

// find() tests the version and the empty slot in one comparison on 32-bit halves (the
// default entity) and field by field otherwise: both must answer as contains() means.
template <typename E>
void expect_find_below_npos_exactly_for(const std::vector<E>& present) {
    using traits = typename E::traits_type;
    test_set<E> set;
    for (const E e : present) {
        set.insert(e);
    }
    // 8191 and 8192: the last index inside a table of two pages, and the first outside it.
    const std::vector<std::uint64_t> indices{
        0, 1, 3, 4, 5, 4095, 4096, 4097, 8191, 8192, 70'000, traits::max_index, traits::no_index};
    const std::vector<std::uint64_t> versions{traits::null_version, 1, 2, 3, traits::max_version};
    for (const auto index : indices) {
        for (const auto version : versions) {
            const E e{static_cast<typename traits::index_type>(index),
                      static_cast<typename traits::version_type>(version)};
            const bool expected = std::find(present.begin(), present.end(), e) != present.end();
            const std::uint64_t found = set.find(e);
            ASSERT_EQ(found < set.npos, expected) << to_string(e);
            ASSERT_EQ(set.contains(e), expected) << to_string(e);
            if (expected) {
                ASSERT_EQ(found, set.index_of(e)) << to_string(e);
                ASSERT_EQ(set.position(e), set.index_of(e)) << to_string(e);
            } else {
                ASSERT_EQ(set.position(e), set.npos) << to_string(e);
            }
        }
    }
}

TEST(SparseSet, FindIsBelowNposExactlyForAnEntityInTheSet) {
    using traits = Entity::traits_type;
    // Pages 0 and 1 only: the larger indices fall outside the page table.
    expect_find_below_npos_exactly_for<Entity>(
        {Entity{4, 2}, Entity{4096, traits::max_version}, Entity{1, traits::max_version}});
    // The last page too: every index is inside the table, most on pages never written.
    expect_find_below_npos_exactly_for<Entity>({Entity{4, 2}, Entity{4096, traits::max_version},
                                                Entity{traits::max_index, 1},
                                                Entity{1, traits::max_version}});
}

TEST(SparseSet, FindIsBelowNposExactlyForAnEntityInTheSetWithNarrowFields) {
    using tiny_traits = ecsnet::ecs::entity_traits<std::uint16_t, std::uint8_t>;
    using TinyEntity = ecsnet::ecs::basic_entity<tiny_traits>;
    expect_find_below_npos_exactly_for<TinyEntity>(
        {TinyEntity{4, 2}, TinyEntity{4096, tiny_traits::max_version},
         TinyEntity{tiny_traits::max_index, 1}, TinyEntity{1, tiny_traits::max_version}});
}

TEST(SparseSet, FindIndexReturnsTheStoredVersion) {
    SparseSet set;
    set.insert(Entity{4, 2});
    EXPECT_EQ(set.find_index(4), (Entity{4, 2}));
    EXPECT_TRUE(set.find_index(3).is_null());
    EXPECT_TRUE(set.find_index(1'000'000).is_null());
}

TEST(SparseSet, EraseSwapsTheLastEntityIntoTheHole) {
    SparseSet set;
    for (std::uint32_t i = 0; i < 5; ++i) {
        set.insert(Entity{i * 10, 1});
    }
    EXPECT_EQ(set.erase(Entity{10, 1}), 1U);
    EXPECT_THAT(packed(set),
                ::testing::ElementsAre(Entity{0, 1}, Entity{40, 1}, Entity{20, 1}, Entity{30, 1}));
    EXPECT_FALSE(set.contains(Entity{10, 1}));
    EXPECT_TRUE(set.find_index(10).is_null());
    EXPECT_EQ(set.index_of(Entity{40, 1}), 1U) << "moved entity's sparse entry follows it";

    // Erasing the last element moves nothing.
    EXPECT_EQ(set.erase(Entity{30, 1}), 3U);
    EXPECT_THAT(packed(set), ::testing::ElementsAre(Entity{0, 1}, Entity{40, 1}, Entity{20, 1}));

    // Erasing the first.
    EXPECT_EQ(set.erase(Entity{0, 1}), 0U);
    EXPECT_THAT(packed(set), ::testing::ElementsAre(Entity{20, 1}, Entity{40, 1}));
    EXPECT_EQ(set.index_of(Entity{20, 1}), 0U);
    EXPECT_EQ(set.index_of(Entity{40, 1}), 1U);
}

TEST(SparseSet, EraseTheOnlyEntity) {
    SparseSet set;
    set.insert(Entity{3, 1});
    EXPECT_EQ(set.erase(Entity{3, 1}), 0U);
    EXPECT_TRUE(set.empty());
    EXPECT_FALSE(set.contains(Entity{3, 1}));
    EXPECT_TRUE(set.find_index(3).is_null());
}

TEST(SparseSet, IndexCanComeBackAtANewVersion) {
    SparseSet set;
    set.insert(Entity{6, 1});
    set.insert(Entity{7, 1});
    set.erase(Entity{6, 1});
    set.insert(Entity{6, 2});
    EXPECT_TRUE(set.contains(Entity{6, 2}));
    EXPECT_FALSE(set.contains(Entity{6, 1}));
    EXPECT_EQ(set.find_index(6), (Entity{6, 2}));
    EXPECT_THAT(packed(set), ::testing::ElementsAre(Entity{7, 1}, Entity{6, 2}));
}

TEST(SparseSet, ClearRemovesEverything) {
    SparseSet set;
    set.insert(Entity{1, 1});
    set.insert(Entity{5000, 2});
    set.clear();
    EXPECT_TRUE(set.empty());
    EXPECT_FALSE(set.contains(Entity{1, 1}));
    EXPECT_FALSE(set.contains(Entity{5000, 2}));
    EXPECT_TRUE(set.find_index(5000).is_null());
    // The set is usable again after clear.
    set.insert(Entity{5000, 3});
    EXPECT_EQ(set.index_of(Entity{5000, 3}), 0U);
}

TEST(SparseSet, StructuralVersionCountsInsertEraseAndClear) {
    SparseSet set;
    std::uint64_t version = set.structural_version();
    set.insert(Entity{1, 1});
    EXPECT_GT(set.structural_version(), version);
    version = set.structural_version();

    set.insert(Entity{2, 1});
    EXPECT_GT(set.structural_version(), version);
    version = set.structural_version();

    // Lookups do not change it.
    (void)set.contains(Entity{1, 1});
    (void)set.find_index(2);
    (void)set.index_of(Entity{2, 1});
    EXPECT_EQ(set.structural_version(), version);

    set.erase(Entity{1, 1});
    EXPECT_GT(set.structural_version(), version);
    version = set.structural_version();

    set.clear();
    EXPECT_GT(set.structural_version(), version);
}

TEST(SparseSet, HugeIndexWorks) {
    SparseSet set;
    const Entity far{10'000'000, 1};
    set.insert(Entity{0, 1});
    set.insert(far);
    EXPECT_TRUE(set.contains(far));
    EXPECT_EQ(set.index_of(far), 1U);
    EXPECT_FALSE(set.contains(Entity{9'999'999, 1}));
    EXPECT_FALSE(set.contains(Entity{10'000'001, 1}));
    set.erase(Entity{0, 1});
    EXPECT_EQ(set.index_of(far), 0U);
}

TEST(SparseSet, LargestIndexWorks) {
    using tiny_traits = ecsnet::ecs::entity_traits<std::uint8_t, std::uint8_t>;
    using TinyEntity = ecsnet::ecs::basic_entity<tiny_traits>;
    test_set<TinyEntity> set;
    // Fill every usable index: positions go up to 254, one below the "no index" marker.
    for (unsigned i = 0; i <= tiny_traits::max_index; ++i) {
        set.insert(TinyEntity{static_cast<std::uint8_t>(tiny_traits::max_index - i), 1});
    }
    EXPECT_EQ(set.size(), 255U);
    for (unsigned i = 0; i <= tiny_traits::max_index; ++i) {
        const TinyEntity e{static_cast<std::uint8_t>(i), 1};
        ASSERT_TRUE(set.contains(e)) << to_string(e);
        ASSERT_EQ(set.index_of(e), tiny_traits::max_index - i);
    }
    EXPECT_TRUE(set.find_index(tiny_traits::no_index).is_null());
}

}  // namespace sparse_set_test
