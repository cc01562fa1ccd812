#include "ecsnet/ecs/dense_vector.hpp"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace dense_vector_test {

using ecsnet::ecs::detail::dense_vector;
using ecsnet::ecs::detail::realloc_vector;

struct Pair {
    std::uint32_t a;
    std::uint32_t b;
    bool operator==(const Pair&) const = default;
};

struct alignas(64) OverAligned {
    float x;
};

static_assert(std::is_same_v<dense_vector<Pair>, realloc_vector<Pair>>);
static_assert(std::is_same_v<dense_vector<std::string>, std::vector<std::string>>,
              "a type realloc cannot move keeps std::vector");
static_assert(
    std::is_same_v<dense_vector<std::unique_ptr<int>>, std::vector<std::unique_ptr<int>>>);
static_assert(std::is_same_v<dense_vector<OverAligned>, std::vector<OverAligned>>,
              "realloc aligns to max_align_t only");

realloc_vector<Pair> filled(std::uint32_t n) {
    realloc_vector<Pair> v;
    for (std::uint32_t i = 0; i < n; ++i) {
        v.push_back(Pair{i, i * 3});
    }
    return v;
}

bool holds_sequence(const realloc_vector<Pair>& v, std::uint32_t n) {
    if (v.size() != n) {
        return false;
    }
    for (std::uint32_t i = 0; i < n; ++i) {
        if (!(v[i] == Pair{i, i * 3})) {
            return false;
        }
    }
    return true;
}

TEST(DenseVector, StartsEmptyWithoutAllocating) {
    const realloc_vector<Pair> v;
    EXPECT_TRUE(v.empty());
    EXPECT_EQ(v.size(), 0U);
    EXPECT_EQ(v.capacity(), 0U);
    EXPECT_EQ(v.data(), nullptr);
    EXPECT_EQ(v.begin(), v.end());
}

// Past a few hundred KB glibc serves the block with mmap and grows it with mremap: values
// must survive every kind of growth, in place or moved.
TEST(DenseVector, KeepsEveryValueAcrossManyGrowths) {
    const auto v = filled(300'000);
    EXPECT_TRUE(holds_sequence(v, 300'000));
    EXPECT_GE(v.capacity(), v.size());
}

TEST(DenseVector, PushingBackItsOwnElementWhileGrowingCopiesItFirst) {
    realloc_vector<Pair> v;
    v.push_back(Pair{7, 8});
    while (v.size() < v.capacity()) {
        v.push_back(Pair{1, 2});
    }
    v.push_back(v[0]);  // this push grows the block that v[0] lives in
    EXPECT_EQ(v.back(), (Pair{7, 8}));
}

TEST(DenseVector, EmplaceBackConstructsInPlaceOfTheEnd) {
    realloc_vector<std::uint64_t> v;
    EXPECT_EQ(v.emplace_back(41U), 41U);
    v.emplace_back(42U);
    EXPECT_EQ(v.size(), 2U);
    EXPECT_EQ(v.back(), 42U);
}

TEST(DenseVector, PopBackAndClearKeepTheCapacity) {
    auto v = filled(100);
    const std::size_t capacity = v.capacity();
    v.pop_back();
    EXPECT_EQ(v.size(), 99U);
    EXPECT_EQ(v.back(), (Pair{98, 294}));
    v.clear();
    EXPECT_TRUE(v.empty());
    EXPECT_EQ(v.capacity(), capacity);
    v.push_back(Pair{5, 6});
    EXPECT_EQ(v[0], (Pair{5, 6}));
}

TEST(DenseVector, ReserveGrowsOnceAndNeverShrinks) {
    realloc_vector<Pair> v;
    v.reserve(1000);
    EXPECT_EQ(v.capacity(), 1000U);
    const Pair* block = v.data();
    for (std::uint32_t i = 0; i < 1000; ++i) {
        v.push_back(Pair{i, i * 3});
    }
    EXPECT_EQ(v.data(), block) << "no growth within the reserved capacity";
    v.reserve(10);
    EXPECT_EQ(v.capacity(), 1000U);
    EXPECT_TRUE(holds_sequence(v, 1000));
}

TEST(DenseVector, AnImpossibleCapacityThrowsAndLeavesTheVectorAsItWas) {
    auto v = filled(10);
    EXPECT_THROW(v.reserve(static_cast<std::size_t>(-1) / 2), std::length_error);
    EXPECT_TRUE(holds_sequence(v, 10));
}

TEST(DenseVector, CopiesAreIndependent) {
    const auto original = filled(1000);
    realloc_vector<Pair> copy{original};
    EXPECT_TRUE(holds_sequence(copy, 1000));
    copy[0] = Pair{9, 9};
    EXPECT_EQ(original[0], (Pair{0, 0}));

    realloc_vector<Pair> assigned = filled(3);
    assigned = original;
    EXPECT_TRUE(holds_sequence(assigned, 1000));
    assigned = realloc_vector<Pair>{};
    EXPECT_TRUE(assigned.empty());
}

TEST(DenseVector, MovesTakeTheBlockAndLeaveTheSourceEmpty) {
    auto source = filled(1000);
    const Pair* block = source.data();
    realloc_vector<Pair> moved{std::move(source)};
    EXPECT_EQ(moved.data(), block);
    EXPECT_TRUE(holds_sequence(moved, 1000));
    EXPECT_TRUE(source.empty());  // NOLINT(bugprone-use-after-move): the moved-from state
    EXPECT_EQ(source.capacity(), 0U);

    realloc_vector<Pair> target = filled(5);
    target = std::move(moved);
    EXPECT_EQ(target.data(), block);
    EXPECT_TRUE(moved.empty());    // NOLINT(bugprone-use-after-move)
    source.push_back(Pair{1, 1});  // a moved-from vector is usable
    EXPECT_EQ(source.size(), 1U);
}

TEST(DenseVector, ViewsAsASpanOfItsElements) {
    auto v = filled(4);
    const std::span<const Pair> view = v;
    ASSERT_EQ(view.size(), 4U);
    EXPECT_EQ(view.data(), v.data());
    const std::span<Pair> writable = v;
    writable[2].a = 100;
    EXPECT_EQ(v[2].a, 100U);
    std::uint32_t sum = 0;
    for (const Pair& p : v) {
        sum += p.b;
    }
    EXPECT_EQ(sum, 0U + 3U + 6U + 9U);
}

}  // namespace dense_vector_test
