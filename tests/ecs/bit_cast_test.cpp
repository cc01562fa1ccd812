#include "ecsnet/ecs/bit_cast.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>

#include "ecsnet/ecs/entity.hpp"

namespace bit_cast_test {

using ecsnet::ecs::Entity;
using ecsnet::ecs::detail::bit_cast;

static_assert(bit_cast<std::uint32_t>(1.0F) == 0x3F80'0000U, "usable in constant expressions");

TEST(BitCast, RoundTripsAFloat) {
    const float value = -2.5F;
    EXPECT_EQ(bit_cast<float>(bit_cast<std::uint32_t>(value)), value);
    EXPECT_EQ(bit_cast<std::uint32_t>(value), 0xC020'0000U);
}

// The sparse set's one-comparison lookup reads an entity as one word, index in the low half.
TEST(BitCast, AnEntityIsItsIndexThenItsVersion) {
    if constexpr (std::endian::native == std::endian::little) {
        const auto bits = bit_cast<std::uint64_t>(Entity{7, 3});
        EXPECT_EQ(bits & 0xFFFF'FFFFU, 7U);
        EXPECT_EQ(bits >> 32U, 3U);
    } else {
        GTEST_SKIP() << "big-endian: the sparse set compares field by field";
    }
}

}  // namespace bit_cast_test
