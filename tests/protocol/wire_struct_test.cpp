#include "ecsnet/protocol/wire_struct.hpp"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/test_wire/padded_generated.h"
#include "test_types.hpp"

namespace wire_struct_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
namespace demo = ecsnet::demo;

struct Padded {
    std::uint8_t flag{};
    float value{};
    std::uint32_t ticks{};
    std::uint64_t big{};
    friend bool operator==(const Padded&, const Padded&) = default;
};

// A value of scalar type F whose every byte is `b`.
template <typename F>
F all_bytes(std::uint8_t b) {
    std::array<std::uint8_t, sizeof(F)> bytes;
    bytes.fill(b);
    return std::bit_cast<F>(bytes);
}

// Builds W through flatc's constructor with field I's bytes all I + 1, and checks that each
// field sits at the offset wire_field_offsets gives and every other byte (padding) is zero.
template <typename W>
void expect_schema_offsets() {
    constexpr auto offsets = proto::wire_field_offsets<W>();
    const W built = [&]<std::size_t... I>(std::index_sequence<I...>) {
        return W(all_bytes<proto::wire_field_t<W, I>>(static_cast<std::uint8_t>(I + 1))...);
    }(std::make_index_sequence<proto::wire_field_count_v<W>>{});
    std::array<std::uint8_t, sizeof(W)> bytes;
    std::memcpy(bytes.data(), &built, sizeof(W));

    std::array<std::uint8_t, sizeof(W)> expected{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((std::memset(expected.data() + offsets[I], static_cast<int>(I + 1),
                      sizeof(proto::wire_field_t<W, I>))),
         ...);
    }(std::make_index_sequence<proto::wire_field_count_v<W>>{});
    EXPECT_EQ(bytes, expected) << W::Traits::fully_qualified_name;
}

// The component's fields at the same offsets as the schema's (not needed for the wire, which
// is built field by field, but the components are declared that way).
template <typename T, typename W>
void expect_same_offsets() {
    constexpr auto offsets = proto::wire_field_offsets<W>();
    const T value{};
    const auto* base = reinterpret_cast<const std::byte*>(&value);
    std::array<std::size_t, offsets.size()> actual{};
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((actual[I] = static_cast<std::size_t>(
              reinterpret_cast<const std::byte*>(&boost::pfr::get<I>(value)) - base)),
         ...);
    }(std::make_index_sequence<proto::wire_field_count_v<W>>{});
    EXPECT_EQ(actual, offsets) << W::Traits::fully_qualified_name;
}

TEST(WireStruct, GeneratedStructsAreAtTheSchemaOffsets) {
    // Every fixed-size type: the core's, the demo's (games/demo/demo.fbs) and the test-only
    // ones (tests/protocol/test_types.fbs), all compiled by flatc.
    ecsnet::testing::for_each_test_type([]<typename T>() {
        if constexpr (!proto::detail::is_string_v<T>) {
            expect_schema_offsets<typename proto::replicated<T>::wire_type>();
        }
    });
    static_assert(proto::wire_field_offsets<ecsnet::testing::wire::Mixed>() ==
                  std::array<std::size_t, 5>{0, 1, 2, 8, 16});
    expect_schema_offsets<wire::EntityRef>();
    expect_schema_offsets<wire::IndexRun>();
    expect_schema_offsets<ecsnet::test_wire::Padded>();
    static_assert(proto::wire_field_offsets<ecsnet::test_wire::Padded>() ==
                  std::array<std::size_t, 4>{0, 4, 8, 16});
    static_assert(proto::wire_struct_size<ecsnet::test_wire::Padded>() == 24);
}

TEST(WireStruct, ComponentsMatchTheirStructsFieldByField) {
    ecsnet::testing::for_each_test_type([]<typename T>() {
        if constexpr (!proto::detail::is_string_v<T>) {
            using W = typename proto::replicated<T>::wire_type;
            static_assert(proto::check_fields<T, W>());
            static_assert(proto::component_field_count_v<T> == proto::wire_field_count_v<W>);
            expect_same_offsets<T, W>();
        }
    });
    static_assert(std::is_same_v<proto::component_field_t<demo::Position, 1>, float>);
    static_assert(std::is_same_v<proto::wire_field_t<demo::wire::Health, 0>, std::int32_t>);
    static_assert(std::is_same_v<proto::wire_field_t<ecsnet::testing::wire::Mixed, 3>, std::int64_t>);
    expect_same_offsets<Padded, ecsnet::test_wire::Padded>();
}

TEST(WireStruct, RoundTripsFieldByField) {
    const Padded value{0xFE, -3.25F, 0xDEADBEEF, 0x0102030405060708ULL};
    const auto w = proto::to_wire<ecsnet::test_wire::Padded>(value);
    EXPECT_EQ(w.flag(), 0xFE);
    EXPECT_EQ(w.value(), -3.25F);
    EXPECT_EQ(w.ticks(), 0xDEADBEEFU);
    EXPECT_EQ(w.big(), 0x0102030405060708ULL);
    EXPECT_EQ(proto::from_wire<Padded>(w), value);

    const demo::Position position{1.5F, -2.0F};
    EXPECT_EQ(proto::from_wire<demo::Position>(proto::to_wire<demo::wire::Position>(position)),
              position);
    const ecsnet::testing::Mixed mixed{true, -5, 65535, -(std::int64_t{1} << 62), 0.1};
    EXPECT_EQ(proto::from_wire<ecsnet::testing::Mixed>(
                  proto::to_wire<ecsnet::testing::wire::Mixed>(mixed)),
              mixed);
}

TEST(WireStruct, BytesHaveZeroPadding) {
    const auto bytes = proto::wire_bytes<ecsnet::test_wire::Padded>(Padded{1, 0.0F, 2, 3});
    std::array<std::byte, 24> expected{};
    expected[0] = std::byte{1};
    expected[8] = std::byte{2};
    expected[16] = std::byte{3};
    EXPECT_EQ(bytes, expected);
}


// describe<T>() takes the schema's field names and types from the flatc struct.
TEST(WireStruct, DescribeTakesTheStructsFields) {
    const proto::component_info mixed = proto::describe<ecsnet::testing::Mixed>();
    ASSERT_EQ(mixed.fields.size(), 5U);
    EXPECT_EQ(mixed.fields[0].name, "flag");
    EXPECT_EQ(mixed.fields[0].type, proto::field_type::bool_);
    EXPECT_EQ(mixed.fields[3].name, "big");
    EXPECT_EQ(mixed.fields[3].type, proto::field_type::int64);
    EXPECT_EQ(mixed.fields[4].type, proto::field_type::float64);
    EXPECT_EQ(mixed.value_bytes(), 20U) << "fields back to back, without the struct's padding";
    const proto::component_info spot = proto::describe<ecsnet::testing::Spot>();
    ASSERT_EQ(spot.fields.size(), 2U);
    EXPECT_EQ(spot.fields[1].name, "y");
    EXPECT_EQ(spot.fields[1].bits, 19U);
    EXPECT_EQ(spot.fields[1].quantized, (proto::quantization{0.0, 4096.0, 1.0 / 64.0}));
}

}  // namespace wire_struct_test
