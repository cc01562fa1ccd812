#include "ecsnet/protocol/replicated.hpp"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "test_types.hpp"

namespace replicated_test {

namespace proto = ecsnet::protocol;
using ecsnet::testing::Tag;
using ecsnet::testing::Mixed;
using ecsnet::testing::Spot;

template <std::size_t N>
std::array<std::byte, N> bytes_of(std::array<int, N> values) {
    std::array<std::byte, N> out{};
    for (std::size_t i = 0; i < N; ++i) {
        out[i] = static_cast<std::byte>(values[i]);
    }
    return out;
}

TEST(Replicated, DescribesAQuantizedTypeFromItsSchemaAndOptions) {
    const proto::component_info info = proto::describe<Spot>();
    EXPECT_EQ(info.name, "spot");
    EXPECT_EQ(info.written_by, proto::writer::owner);
    EXPECT_FALSE(info.is_string);
    ASSERT_EQ(info.fields.size(), 2U);
    EXPECT_EQ(info.fields[0].name, "x");  // from flatc's reflection of schema_types.fbs
    EXPECT_EQ(info.fields[1].name, "y");
    EXPECT_EQ(info.fields[0].type, proto::field_type::float32);
    // 4096 * 64 = 262144 steps: 19 bits.
    EXPECT_EQ(info.fields[0].bits, 19);
    EXPECT_EQ(info.fields[0].quantized, (proto::quantization{0, 4096, 1.0 / 64}));
    EXPECT_EQ(info.value_bits(), 38U);
    EXPECT_EQ(info.value_bytes(), 5U);
    EXPECT_EQ(proto::value_bytes_v<Spot>, 5U);
    EXPECT_FALSE(info.byte_aligned());
}

TEST(Replicated, DescribesPlainFieldsInTheirNaturalWidths) {
    const proto::component_info info = proto::describe<Mixed>();
    EXPECT_EQ(info.written_by, proto::writer::server);
    ASSERT_EQ(info.fields.size(), 5U);
    EXPECT_EQ(info.fields[0].type, proto::field_type::bool_);
    EXPECT_EQ(info.fields[1].type, proto::field_type::int8);
    EXPECT_EQ(info.fields[2].type, proto::field_type::uint16);
    EXPECT_EQ(info.fields[3].type, proto::field_type::int64);
    EXPECT_EQ(info.fields[4].type, proto::field_type::float64);
    EXPECT_EQ(info.value_bytes(), 1U + 1 + 2 + 8 + 8);  // no padding, unlike the C++ struct
    EXPECT_TRUE(info.byte_aligned());
    EXPECT_GT(sizeof(Mixed), info.value_bytes());
}

TEST(Replicated, DescribesAStringType) {
    const proto::component_info info = proto::describe<Tag>();
    EXPECT_TRUE(info.is_string);
    EXPECT_EQ(info.max_bytes, 16U);
    EXPECT_TRUE(info.fields.empty());
    EXPECT_EQ(proto::value_bytes_v<Tag>, 0U);
}

TEST(Replicated, AMarkerTravelsAsOneBoolThatIsAlwaysTrue) {
    const proto::component_info info = proto::describe<ecsnet::testing::Frozen>();
    EXPECT_EQ(info.name, "frozen");
    EXPECT_FALSE(info.is_string);
    ASSERT_EQ(info.fields.size(), 1U);  // a schema any client understands
    EXPECT_EQ(info.fields[0].name, "present");
    EXPECT_EQ(info.fields[0].type, proto::field_type::bool_);
    EXPECT_EQ(info.fields[0].bits, 8);
    EXPECT_EQ(proto::value_bytes_v<ecsnet::testing::Frozen>, 1U);
    EXPECT_EQ(proto::pack(ecsnet::testing::Frozen{}), bytes_of<1>({1}));
    const std::array<std::byte, 1> zero{};
    EXPECT_EQ(proto::unpack<ecsnet::testing::Frozen>(zero.data()), ecsnet::testing::Frozen{});
}

TEST(Replicated, PacksFieldsLittleEndianWithoutPadding) {
    Mixed value;
    // Fill the padding with garbage: it must not reach the packed bytes.
    std::memset(static_cast<void*>(&value), 0xAB, sizeof value);
    value.flag = true;
    value.small = -2;
    value.medium = 0x1234;
    value.big = -1;
    value.real = 1.5;
    const auto packed = proto::pack(value);
    const auto expected = bytes_of<20>({0x01, 0xFE, 0x34, 0x12, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                        0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF8, 0x3F});
    EXPECT_EQ(packed, expected);
    EXPECT_EQ(proto::unpack<Mixed>(packed.data()), value);
}

TEST(Replicated, PacksQuantizedFieldsAcrossByteBoundaries) {
    // q(x) = 64, q(y) = 128: x in bits 0..18, y in bits 19..37.
    const auto packed = proto::pack(Spot{1.0F, 2.0F});
    EXPECT_EQ(packed, bytes_of<5>({0x40, 0x00, 0x00, 0x04, 0x00}));
    EXPECT_EQ(proto::unpack<Spot>(packed.data()), (Spot{1.0F, 2.0F}));
}

TEST(Replicated, QuantizesToTheNearestStepAndClampsToTheRange) {
    const auto round_trip = [](float x) { return proto::unpack<Spot>(proto::pack(Spot{x, 0}).data()).x; };
    EXPECT_EQ(round_trip(10.0F + 1.0F / 64 * 0.4F), 10.0F);
    EXPECT_EQ(round_trip(10.0F + 1.0F / 64 * 0.6F), 10.0F + 1.0F / 64);
    EXPECT_EQ(round_trip(4095.984375F), 4095.984375F);
    EXPECT_EQ(round_trip(-5.0F), 0.0F);
    EXPECT_EQ(round_trip(5000.0F), 4096.0F);  // the range's end, not the 19 bits' end
    EXPECT_EQ(round_trip(std::numeric_limits<float>::quiet_NaN()), 0.0F);
    EXPECT_EQ(round_trip(std::numeric_limits<float>::infinity()), 4096.0F);
}

TEST(Replicated, EqualValuesPackToEqualBytes) {
    // Whatever was in memory before: the checksum hashes these bytes.
    Mixed a;
    Mixed b;
    std::memset(static_cast<void*>(&a), 0x00, sizeof a);
    std::memset(static_cast<void*>(&b), 0xFF, sizeof b);
    a = Mixed{true, 3, 4, 5, 6.0};
    b.flag = true;
    b.small = 3;
    b.medium = 4;
    b.big = 5;
    b.real = 6.0;
    EXPECT_EQ(proto::pack(a), proto::pack(b));
}

TEST(Replicated, UnpackIgnoresFieldsAddedAfterTheOnesItKnows) {
    // A newer sender's value: Spot's 38 bits, then 26 more bits of a field added at the end.
    std::array<std::byte, 8> newer{};
    const auto known = proto::pack(Spot{3.0F, 7.5F});
    std::copy(known.begin(), known.end(), newer.begin());
    newer[4] |= std::byte{0xC0};  // bits 38..39 belong to the new field
    newer[7] = std::byte{0xFF};
    EXPECT_EQ(proto::unpack<Spot>(newer.data()), (Spot{3.0F, 7.5F}));
}

TEST(Replicated, TextOfAStringComponent) {
    const Tag label{"hello"};
    EXPECT_EQ(proto::text_of(label), "hello");
}

}  // namespace replicated_test
