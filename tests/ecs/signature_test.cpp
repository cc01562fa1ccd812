#include "ecsnet/ecs/signature.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace signature_test {

using ecsnet::ecs::component_id;
using ecsnet::ecs::signature;
using ecsnet::ecs::detail::signature_table;

std::vector<component_id> ids(const signature& s) {
    std::vector<component_id> out;
    s.each([&](component_id id) { out.push_back(id); });
    return out;
}

TEST(Signature, StartsEmpty) {
    const signature s;
    EXPECT_TRUE(s.none());
    EXPECT_FALSE(s.any());
    EXPECT_EQ(s.count(), 0U);
    EXPECT_FALSE(s.test(0));
    EXPECT_FALSE(s.test(1000));
    EXPECT_EQ(s.to_string(), "");
}

TEST(Signature, SetTestReset) {
    signature s;
    s.set(1).set(2);
    EXPECT_TRUE(s.any());
    EXPECT_FALSE(s.test(0));
    EXPECT_TRUE(s.test(1));
    EXPECT_TRUE(s.test(2));
    EXPECT_FALSE(s.test(3));
    EXPECT_EQ(s.count(), 2U);

    s.set(1);  // setting twice changes nothing
    EXPECT_EQ(s.count(), 2U);

    s.reset(1);
    EXPECT_FALSE(s.test(1));
    EXPECT_TRUE(s.test(2));
    EXPECT_EQ(s.count(), 1U);

    s.reset(2);
    EXPECT_TRUE(s.none());
    s.reset(500);  // resetting an id beyond the words is harmless
    EXPECT_TRUE(s.none());
}

TEST(Signature, WordBoundaries) {
    signature s;
    s.set(63).set(64).set(127).set(128);
    EXPECT_TRUE(s.test(63));
    EXPECT_TRUE(s.test(64));
    EXPECT_TRUE(s.test(127));
    EXPECT_TRUE(s.test(128));
    EXPECT_FALSE(s.test(62));
    EXPECT_FALSE(s.test(65));
    EXPECT_FALSE(s.test(126));
    EXPECT_FALSE(s.test(129));
    EXPECT_EQ(s.count(), 4U);
    EXPECT_THAT(ids(s), ::testing::ElementsAre(63U, 64U, 127U, 128U));
}

TEST(Signature, IdsOf256AndAbove) {
    signature s;
    s.set(300).set(3).set(256);
    EXPECT_TRUE(s.test(300));
    EXPECT_TRUE(s.test(256));
    EXPECT_FALSE(s.test(299));
    EXPECT_FALSE(s.test(301));
    EXPECT_EQ(s.count(), 3U);
    EXPECT_THAT(ids(s), ::testing::ElementsAre(3U, 256U, 300U));

    const std::string text = s.to_string();
    ASSERT_EQ(text.size(), 301U);
    EXPECT_EQ(text[3], '1');
    EXPECT_EQ(text[256], '1');
    EXPECT_EQ(text[300], '1');
    EXPECT_EQ(std::count(text.begin(), text.end(), '1'), 3);
}

TEST(Signature, EqualityIgnoresTrailingEmptyWords) {
    signature a;
    a.set(2);
    signature b;
    b.set(2).set(300);
    EXPECT_NE(a, b);
    b.reset(300);
    EXPECT_EQ(a, b) << "the word that held 300 is trimmed";

    // Built from words with zeros at the end.
    const std::array<std::uint64_t, 4> words{0b100, 0, 0, 0};
    EXPECT_EQ(signature{words}, a);
    const std::array<std::uint64_t, 1> other{0b110};
    EXPECT_NE(signature{other}, a);

    const std::array<std::uint64_t, 3> zeros{0, 0, 0};
    EXPECT_EQ(signature{zeros}, signature{});
    EXPECT_TRUE(signature{zeros}.none());
}

TEST(Signature, ConstructFromWords) {
    const std::array<std::uint64_t, 2> words{0b1010, 0b1};
    const signature s{words};
    EXPECT_THAT(ids(s), ::testing::ElementsAre(1U, 3U, 64U));
    EXPECT_EQ(s.count(), 3U);
}

TEST(Signature, Includes) {
    signature all;
    all.set(0).set(2).set(70);
    signature some;
    some.set(2).set(70);
    signature other;
    other.set(1);
    signature wide;
    wide.set(2).set(300);

    EXPECT_TRUE(all.includes(some));
    EXPECT_FALSE(some.includes(all));
    EXPECT_TRUE(all.includes(all));
    EXPECT_TRUE(all.includes(signature{}));
    EXPECT_TRUE(signature{}.includes(signature{}));
    EXPECT_FALSE(signature{}.includes(other));
    EXPECT_FALSE(all.includes(other));
    EXPECT_FALSE(all.includes(wide)) << "wider than this signature";

    wide.reset(300);
    EXPECT_TRUE(all.includes(wide)) << "after trimming it fits";
}

TEST(Signature, ToStringListsLowestTypeFirst) {
    signature s;
    s.set(1).set(2);
    EXPECT_EQ(s.to_string(), "011");
    s.set(5);
    EXPECT_EQ(s.to_string(), "011001");
    s.reset(5);
    EXPECT_EQ(s.to_string(), "011");
    signature single;
    single.set(0);
    EXPECT_EQ(single.to_string(), "1");
}

TEST(Signature, ForEachBitOverRawWords) {
    const std::array<std::uint64_t, 3> words{1ULL << 63U, 0, 1};
    std::vector<component_id> out;
    signature::for_each_bit(words, [&](component_id id) { out.push_back(id); });
    EXPECT_THAT(out, ::testing::ElementsAre(63U, 128U));
}

// --- signature_table ---------------------------------------------------------------------

TEST(SignatureTable, RowsStartEmpty) {
    signature_table table;
    EXPECT_EQ(table.stride(), 1U);
    table.ensure_rows(10);
    for (std::size_t row = 0; row < 10; ++row) {
        EXPECT_FALSE(table.test(row, 0));
        EXPECT_EQ(signature{table.row(row)}, signature{});
    }
}

TEST(SignatureTable, SetResetTestClearPerRow) {
    signature_table table;
    table.ensure_rows(4);
    table.set(0, 1);
    table.set(0, 63);
    table.set(3, 5);
    EXPECT_TRUE(table.test(0, 1));
    EXPECT_TRUE(table.test(0, 63));
    EXPECT_FALSE(table.test(1, 1)) << "rows are independent";
    EXPECT_TRUE(table.test(3, 5));

    table.reset(0, 1);
    EXPECT_FALSE(table.test(0, 1));
    EXPECT_TRUE(table.test(0, 63));

    table.clear(0);
    EXPECT_FALSE(table.test(0, 63));
    EXPECT_TRUE(table.test(3, 5)) << "clear touches one row only";
}

TEST(SignatureTable, EnsureRowsKeepsContentAndGrows) {
    signature_table table;
    table.ensure_rows(1);
    table.set(0, 7);
    table.ensure_rows(5000);
    table.set(4999, 9);
    EXPECT_TRUE(table.test(0, 7));
    EXPECT_TRUE(table.test(4999, 9));
    EXPECT_FALSE(table.test(4998, 9));
    EXPECT_EQ(table.row(4999).size(), table.stride());
}

TEST(SignatureTable, EnsureBitsWideningKeepsExistingRows) {
    signature_table table;
    table.ensure_rows(3);
    table.set(0, 0);
    table.set(1, 63);
    table.set(2, 17);
    table.set(2, 40);

    table.ensure_bits(64);
    EXPECT_EQ(table.stride(), 1U) << "64 ids fit one word";

    table.ensure_bits(300);
    EXPECT_EQ(table.stride(), 5U);
    EXPECT_TRUE(table.test(0, 0));
    EXPECT_TRUE(table.test(1, 63));
    EXPECT_TRUE(table.test(2, 17));
    EXPECT_TRUE(table.test(2, 40));
    EXPECT_FALSE(table.test(0, 63));
    EXPECT_FALSE(table.test(1, 0));

    table.set(1, 299);
    EXPECT_TRUE(table.test(1, 299));
    EXPECT_FALSE(table.test(0, 299));
    EXPECT_FALSE(table.test(2, 299));

    signature expected;
    expected.set(63).set(299);
    EXPECT_EQ(signature{table.row(1)}, expected);
    signature row2;
    row2.set(17).set(40);
    EXPECT_EQ(signature{table.row(2)}, row2);

    // Rows added after widening use the new stride.
    table.ensure_rows(2000);
    table.set(1999, 256);
    EXPECT_TRUE(table.test(1999, 256));
    EXPECT_TRUE(table.test(1, 299));
}

TEST(SignatureTable, EnsureBitsBeforeAnyRow) {
    signature_table table;
    table.ensure_bits(130);
    EXPECT_EQ(table.stride(), 3U);
    table.ensure_rows(2);
    table.set(1, 129);
    EXPECT_TRUE(table.test(1, 129));
    EXPECT_FALSE(table.test(0, 129));
    EXPECT_EQ(table.row(1).size(), 3U);
}

}  // namespace signature_test
