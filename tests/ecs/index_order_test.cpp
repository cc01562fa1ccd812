// index_order: entity lists in ascending index order, each index once, by either path (dense
// indices in buckets, spread ones by a radix sort).
#include "ecsnet/ecs/index_order.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace index_order_test {

using ecsnet::ecs::Entity;
using ecsnet::ecs::index_order;
constexpr std::uint32_t max_index = ecsnet::ecs::default_entity_traits::max_index;

std::vector<Entity> copy(std::span<const Entity> s) {
    return {s.begin(), s.end()};
}

std::vector<Entity> by_index(std::vector<Entity> v) {
    std::stable_sort(v.begin(), v.end(),
                     [](Entity a, Entity b) { return a.index() < b.index(); });
    return v;
}

TEST(IndexOrder, AnAscendingListIsReturnedItself) {
    index_order order;
    const std::vector<Entity> ascending{{1, 1}, {5, 2}, {9, 1}};
    const auto sorted = order.sort(ascending);
    EXPECT_EQ(sorted.data(), ascending.data()) << "no copy when there is nothing to do";
    EXPECT_TRUE(order.sort({}).empty());
}

TEST(IndexOrder, DenseIndicesAreSortedWithTheirVersions) {
    std::vector<Entity> entities;
    for (std::uint32_t i = 0; i < 1000; ++i) {
        entities.emplace_back(i + 50, i % 7 + 1);
    }
    std::shuffle(entities.begin(), entities.end(), std::mt19937{42});
    index_order order;
    EXPECT_EQ(copy(order.sort(entities)), by_index(entities));
}

TEST(IndexOrder, SpreadIndicesAreSortedWithTheirVersions) {
    // 150 indices over 4 billion: the radix sort's passes, the top digit included.
    std::mt19937 random{7};
    std::vector<Entity> entities;
    std::vector<std::uint32_t> taken;
    while (entities.size() < 150) {
        const std::uint32_t index = random() % max_index;
        if (std::find(taken.begin(), taken.end(), index) == taken.end()) {
            taken.push_back(index);
            entities.emplace_back(index, random() % 1000 + 1);
        }
    }
    entities.emplace_back(max_index, 3);
    entities.emplace_back(0U, 4U);
    index_order order;
    EXPECT_EQ(copy(order.sort(entities)), by_index(entities));
    // Again, with another list: nothing of the first one is left in the buffers.
    const std::vector<Entity> second{{900'000, 2}, {10, 1}, {450'000, 5}};
    EXPECT_EQ(copy(order.sort(second)), by_index(second));
}

TEST(IndexOrder, IndicesCrowdedInOneCornerOfTheirRangeAreSortedStill) {
    // 1,000 indices in [0, 2000) and one far away: the top digit puts nearly all of them in
    // one bucket, where an insertion sort alone would take a million moves.
    std::vector<Entity> entities;
    for (std::uint32_t i = 0; i < 1000; ++i) {
        entities.emplace_back(2 * (999 - i), 1U);
    }
    entities.emplace_back(10'000'000U, 2U);
    std::shuffle(entities.begin(), entities.end(), std::mt19937{3});
    index_order order;
    EXPECT_EQ(copy(order.sort(entities)), by_index(entities));
    // Many more than the small-list path takes, spread: the passes alone.
    std::mt19937 random{11};
    std::vector<Entity> many;
    for (std::uint32_t i = 0; i < 5000; ++i) {
        many.emplace_back(i * 997U + random() % 997U, 1U);
    }
    std::shuffle(many.begin(), many.end(), random);
    EXPECT_EQ(copy(order.sort(many)), by_index(many));
}

TEST(IndexOrder, AnIndexListedTwiceIsKeptOnceTheFirstListed) {
    index_order order;
    const std::vector<Entity> dense{{3, 1}, {2, 1}, {3, 2}, {1, 1}};
    EXPECT_EQ(copy(order.sort(dense)), (std::vector<Entity>{{1, 1}, {2, 1}, {3, 1}}));
    const std::vector<Entity> spread{{3'000'000, 1}, {2, 1}, {3'000'000, 2}, {1, 1}};
    EXPECT_EQ(copy(order.sort(spread)), (std::vector<Entity>{{1, 1}, {2, 1}, {3'000'000, 1}}));
    const std::vector<Entity> ascending_but_twice{{1, 1}, {2, 1}, {2, 2}};
    EXPECT_EQ(copy(order.sort(ascending_but_twice)), (std::vector<Entity>{{1, 1}, {2, 1}}));
}

}  // namespace index_order_test
