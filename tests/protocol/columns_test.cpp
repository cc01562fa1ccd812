#include "ecsnet/protocol/columns.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/test_wire/padded_generated.h"

// A component with padding bytes, for the codec's templates: its column is the test schema's
// PaddedColumns.padded (tests/protocol/padded.fbs).
namespace ecsnet::protocol::testing {
struct Padded {
    std::uint8_t flag{};
    float value{};
    std::uint32_t ticks{};
    std::uint64_t big{};
    friend bool operator==(const Padded&, const Padded&) = default;
};
}  // namespace ecsnet::protocol::testing

template <>
struct ecsnet::protocol::column<ecsnet::protocol::testing::Padded> {
    using vector_type = std::remove_const_t<std::remove_pointer_t<
        decltype(std::declval<const ecsnet::test_wire::PaddedColumns&>().padded())>>;
};

namespace {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::IsEmpty;

constexpr std::uint32_t u32_max = std::numeric_limits<std::uint32_t>::max();

// A finished FlatBuffer holding one root table, copied out of its builder so that it outlives
// it; root() verifies before it hands out a pointer.
template <typename Root>
class buffer {
public:
    explicit buffer(const flatbuffers::FlatBufferBuilder& fbb)
        : bytes_(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()) {}

    [[nodiscard]] const Root* root() const {
        flatbuffers::Verifier verifier(bytes_.data(), bytes_.size());
        if (!verifier.VerifyBuffer<Root>(nullptr)) {
            ADD_FAILURE() << "the test built a buffer that does not verify";
            return nullptr;
        }
        return flatbuffers::GetRoot<Root>(bytes_.data());
    }

private:
    std::vector<std::uint8_t> bytes_;
};

buffer<wire::IndexSet> make_set(const std::vector<wire::IndexRun>& runs,
                                const std::vector<std::uint32_t>& list) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto runs_offset = runs.empty() ? 0 : fbb.CreateVectorOfStructs(runs);
    const auto list_offset = list.empty() ? 0 : fbb.CreateVector(list);
    fbb.Finish(wire::CreateIndexSet(fbb, runs_offset, list_offset));
    return buffer<wire::IndexSet>{fbb};
}

buffer<wire::IndexSet> encode_plan(const proto::index_set_plan& plan) {
    flatbuffers::FlatBufferBuilder fbb;
    fbb.Finish(plan.encode(fbb));
    return buffer<wire::IndexSet>{fbb};
}

// (first, count) pairs, for readable expectations on runs.
std::vector<std::pair<std::uint32_t, std::uint32_t>> runs_of(const proto::index_set_plan& plan) {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
    for (const auto& run : plan.runs) {
        out.emplace_back(run.first(), run.count());
    }
    return out;
}

// The indices in the order the plan lists them: what the receiver expands.
std::vector<std::uint32_t> listed_order(std::span<const std::uint32_t> indices,
                                        const proto::index_set_plan& plan) {
    std::vector<std::uint32_t> out;
    for (const std::uint32_t pos : plan.order) {
        out.push_back(indices[pos]);
    }
    return out;
}

// ---- index_set_plan::build ----------------------------------------------------------------

TEST(IndexSetPlan, EmptyInputGivesAnEmptySet) {
    proto::index_set_plan plan;
    plan.build({});
    EXPECT_THAT(plan.runs, IsEmpty());
    EXPECT_THAT(plan.list, IsEmpty());
    EXPECT_THAT(plan.order, IsEmpty());
}

TEST(IndexSetPlan, SingletonsAndPairsGoToTheList) {
    // No three consecutive indices anywhere: 4,5 and 9,10 are pairs only.
    const std::vector<std::uint32_t> indices{7, 4, 5, 20, 9, 10, 2};
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(plan.runs, IsEmpty());
    EXPECT_THAT(plan.list, ElementsAreArray(indices));
    EXPECT_THAT(plan.order, ElementsAre(0, 1, 2, 3, 4, 5, 6));
}

TEST(IndexSetPlan, ThreeConsecutiveIndicesAreTheShortestRun) {
    const std::vector<std::uint32_t> indices{10, 11, 12};
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(runs_of(plan), ElementsAre(std::pair{10U, 3U}));
    EXPECT_THAT(plan.list, IsEmpty());
    EXPECT_THAT(plan.order, ElementsAre(0, 1, 2));
}

TEST(IndexSetPlan, LongRunIsOneRun) {
    std::vector<std::uint32_t> indices;
    for (std::uint32_t i = 0; i < 100'000; ++i) {
        indices.push_back(500 + i);
    }
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(runs_of(plan), ElementsAre(std::pair{500U, 100'000U}));
    EXPECT_THAT(plan.list, IsEmpty());
    ASSERT_EQ(plan.order.size(), indices.size());
    for (std::size_t i = 0; i < plan.order.size(); ++i) {
        ASSERT_EQ(plan.order[i], i);
    }
}

TEST(IndexSetPlan, MixedInputListsRunsFirstThenTheRestInCallerOrder) {
    // positions:                          0  1  2  3  4   5   6   7   8  9  10 11
    const std::vector<std::uint32_t> indices{9, 1, 2, 3, 4, 40, 30, 31, 7, 8, 9, 100};
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(runs_of(plan), ElementsAre(std::pair{1U, 4U}, std::pair{7U, 3U}));
    EXPECT_THAT(plan.list, ElementsAre(9, 40, 30, 31, 100));
    EXPECT_THAT(plan.order, ElementsAre(1, 2, 3, 4, 8, 9, 10, 0, 5, 6, 7, 11));
    // Values are written in `order`: the listed indices are runs expanded, then the list.
    EXPECT_THAT(listed_order(indices, plan), ElementsAre(1, 2, 3, 4, 7, 8, 9, 9, 40, 30, 31, 100));
}

TEST(IndexSetPlan, DescendingAndRepeatedIndicesAreNotRuns) {
    const std::vector<std::uint32_t> indices{5, 4, 3, 6, 6, 6};
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(plan.runs, IsEmpty());
    EXPECT_THAT(plan.list, ElementsAreArray(indices));
}

TEST(IndexSetPlan, BuildReplacesThePreviousPlan) {
    proto::index_set_plan plan;
    const std::vector<std::uint32_t> first{1, 2, 3, 50};
    plan.build(first);
    const std::vector<std::uint32_t> second{8};
    plan.build(second);
    EXPECT_THAT(plan.runs, IsEmpty());
    EXPECT_THAT(plan.list, ElementsAre(8));
    EXPECT_THAT(plan.order, ElementsAre(0));
}

TEST(IndexSetPlan, RunDoesNotWrapPastTheLargestIndex) {
    // 0xFFFFFFFF + 1 wraps to 0 in u32 arithmetic, but 0 does not follow 0xFFFFFFFF: a run
    // {0xFFFFFFFE, 4} would be refused by every receiver.
    const std::vector<std::uint32_t> indices{u32_max - 1, u32_max, 0, 1};
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(plan.runs, IsEmpty());
    EXPECT_THAT(plan.list, ElementsAreArray(indices));

    const auto set = encode_plan(plan);
    std::vector<std::uint32_t> out;
    ASSERT_TRUE(proto::expand_index_set(set.root(), 16, out));
    EXPECT_THAT(out, ElementsAreArray(indices));
}

TEST(IndexSetPlan, RunMayEndAtTheLargestIndex) {
    const std::vector<std::uint32_t> indices{u32_max - 2, u32_max - 1, u32_max};
    proto::index_set_plan plan;
    plan.build(indices);
    EXPECT_THAT(runs_of(plan), ElementsAre(std::pair{u32_max - 2, 3U}));
}

// ---- encode + expand_index_set ------------------------------------------------------------

TEST(IndexSet, EncodeExpandRoundTripFollowsOrder) {
    const std::vector<std::vector<std::uint32_t>> cases{
        {},
        {42},
        {3, 1, 2},
        {0, 1, 2, 3, 4, 5, 6, 7},
        {9, 1, 2, 3, 4, 40, 30, 31, 7, 8, 9, 100},
        {100, 101, 102, 5, 6, 7, 8, 1000, 2000, 2001, 2002, 0},
    };
    for (const auto& indices : cases) {
        proto::index_set_plan plan;
        plan.build(indices);
        const auto set = encode_plan(plan);
        std::vector<std::uint32_t> out{999};  // expand clears first
        ASSERT_TRUE(proto::expand_index_set(set.root(), indices.size(), out));
        EXPECT_EQ(out, listed_order(indices, plan));
        EXPECT_EQ(proto::index_set_size(set.root(), 1'000'000), indices.size());
    }
}

TEST(IndexSet, EncodeOmitsEmptyVectors) {
    proto::index_set_plan plan;
    const std::vector<std::uint32_t> only_run{4, 5, 6};
    plan.build(only_run);
    const auto runs_only = encode_plan(plan);
    ASSERT_NE(runs_only.root(), nullptr);
    EXPECT_EQ(runs_only.root()->list(), nullptr);
    ASSERT_NE(runs_only.root()->runs(), nullptr);
    EXPECT_EQ(runs_only.root()->runs()->size(), 1U);

    const std::vector<std::uint32_t> only_list{4, 6};
    plan.build(only_list);
    const auto list_only = encode_plan(plan);
    ASSERT_NE(list_only.root(), nullptr);
    EXPECT_EQ(list_only.root()->runs(), nullptr);
    ASSERT_NE(list_only.root()->list(), nullptr);
}

TEST(IndexSet, NullSetExpandsToNothing) {
    std::vector<std::uint32_t> out{1, 2};
    EXPECT_TRUE(proto::expand_index_set(nullptr, 0, out));
    EXPECT_THAT(out, IsEmpty());
    EXPECT_EQ(proto::index_set_size(nullptr, 0), 0U);
}

TEST(IndexSet, ExpandAcceptsExactlyTheLimit) {
    const auto set = make_set({wire::IndexRun{10, 5}}, {1, 2});
    std::vector<std::uint32_t> out;
    ASSERT_TRUE(proto::expand_index_set(set.root(), 7, out));
    EXPECT_THAT(out, ElementsAre(10, 11, 12, 13, 14, 1, 2));
}

TEST(IndexSet, ExpandRefusesMoreThanTheLimit) {
    std::vector<std::uint32_t> out;
    // One over, counting the list.
    EXPECT_FALSE(proto::expand_index_set(make_set({wire::IndexRun{10, 5}}, {1, 2}).root(), 6, out));
    // A list alone over the limit.
    EXPECT_FALSE(proto::expand_index_set(make_set({}, {1, 2, 3}).root(), 2, out));
    // 2^32 - 1 indices announced in 8 bytes: refused before anything is allocated for them.
    EXPECT_FALSE(
        proto::expand_index_set(make_set({wire::IndexRun{0, u32_max}}, {}).root(), 1'000'000, out));
    // Many runs that only together pass the limit.
    EXPECT_FALSE(proto::expand_index_set(
        make_set({wire::IndexRun{0, 400}, wire::IndexRun{1000, 400}, wire::IndexRun{5000, 400}}, {})
            .root(),
        1000, out));
}

TEST(IndexSet, ExpandRefusesRunThatWrapsPastTheLargestIndex) {
    const auto set = make_set({wire::IndexRun{0xFFFFFFF0U, 100}}, {});
    const wire::IndexSet* root = set.root();
    ASSERT_NE(root, nullptr) << "the verifier accepts the run: the check is ours";
    std::vector<std::uint32_t> out;
    EXPECT_FALSE(proto::expand_index_set(root, 1000, out));
}

TEST(IndexSet, ExpandAcceptsRunEndingAtTheLargestIndex) {
    const auto set = make_set({wire::IndexRun{0xFFFFFFF0U, 16}}, {});
    std::vector<std::uint32_t> out;
    ASSERT_TRUE(proto::expand_index_set(set.root(), 16, out));
    ASSERT_EQ(out.size(), 16U);
    EXPECT_EQ(out.front(), 0xFFFFFFF0U);
    EXPECT_EQ(out.back(), u32_max);

    const auto one_more = make_set({wire::IndexRun{0xFFFFFFF0U, 17}}, {});
    EXPECT_FALSE(proto::expand_index_set(one_more.root(), 100, out));
}

TEST(IndexSet, EmptyRunExpandsToNothing) {
    const auto set = make_set({wire::IndexRun{5, 0}, wire::IndexRun{u32_max, 0}}, {3});
    std::vector<std::uint32_t> out;
    ASSERT_TRUE(proto::expand_index_set(set.root(), 10, out));
    EXPECT_THAT(out, ElementsAre(3));
}

TEST(IndexSet, SizeCountsRunsAndList) {
    const auto set = make_set({wire::IndexRun{0, 3}, wire::IndexRun{100, 1000}}, {7, 8});
    EXPECT_EQ(proto::index_set_size(set.root(), 10'000), 1005U);
    EXPECT_EQ(proto::index_set_size(set.root(), 1005), 1005U);
}

TEST(IndexSet, SizeSaturatesAtLimitPlusOne) {
    const auto set = make_set({wire::IndexRun{0, 3}, wire::IndexRun{100, 1000}}, {7, 8});
    EXPECT_EQ(proto::index_set_size(set.root(), 1004), 1005U);
    EXPECT_EQ(proto::index_set_size(set.root(), 10), 11U);
    EXPECT_EQ(proto::index_set_size(set.root(), 0), 1U);
    EXPECT_EQ(proto::index_set_size(make_set({}, {1, 2, 3}).root(), 1), 2U);

    // Runs that sum past 2^32 in total still saturate.
    const auto huge = make_set(
        {wire::IndexRun{0, u32_max}, wire::IndexRun{0, u32_max}, wire::IndexRun{0, u32_max}}, {});
    EXPECT_EQ(proto::index_set_size(huge.root(), 1'000'000), 1'000'001U);
}

// ---- values -------------------------------------------------------------------------------

// Writes the values as T's column of a ComponentColumns table and reads them back.
template <typename T>
std::vector<T> round_trip(const std::vector<T>& values) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto column = proto::encode_values<T>(
        fbb, values.size(), [&](std::size_t i) -> const T& { return values[i]; });
    wire::ComponentColumnsBuilder builder(fbb);
    proto::column<T>::add_values(builder, column);
    fbb.Finish(builder.Finish());
    const buffer<wire::ComponentColumns> buf{fbb};
    const wire::ComponentColumns* columns = buf.root();
    if (columns == nullptr) {
        return {};
    }
    const auto* decoded = proto::column<T>::values(*columns);
    if (decoded == nullptr) {
        ADD_FAILURE() << "column " << proto::column<T>::name << " missing";
        return {};
    }
    std::vector<T> out;
    for (std::size_t i = 0; i < decoded->size(); ++i) {
        out.push_back(proto::decode_value<T>(*decoded, i));
    }
    return out;
}

TEST(Values, FixedSizeTypesRoundTrip) {
    const std::vector<proto::Position> positions{{1.5F, -2.25F}, {0.0F, -0.0F}, {3e38F, -1e-38F}};
    EXPECT_EQ(round_trip(positions), positions);
    const std::vector<proto::Velocity> velocities{{-7.0F, 0.125F}};
    EXPECT_EQ(round_trip(velocities), velocities);
    const std::vector<proto::Health> healths{{0},
                                             {-1},
                                             {std::numeric_limits<std::int32_t>::min()},
                                             {std::numeric_limits<std::int32_t>::max()}};
    EXPECT_EQ(round_trip(healths), healths);
    const std::vector<proto::Lifetime> lifetimes{{u32_max}, {1}};
    EXPECT_EQ(round_trip(lifetimes), lifetimes);
    const std::vector<proto::Owner> owners{{17}, {0}, {u32_max}};
    EXPECT_EQ(round_trip(owners), owners);
}

TEST(Values, EmptyColumnRoundTrips) {
    EXPECT_THAT(round_trip(std::vector<proto::Position>{}), IsEmpty());
    EXPECT_THAT(round_trip(std::vector<proto::Name>{}), IsEmpty());
}

TEST(Values, NamesRoundTrip) {
    const std::vector<proto::Name> names{
        {""},
        {"tank"},
        {"caf\xC3\xA9 \xF0\x9F\x9A\x80"},
        {std::string{"nul\0inside", 10}},
        {std::string(proto::max_name_bytes, 'x')},
    };
    const auto decoded = round_trip(names);
    EXPECT_EQ(decoded, names);
    ASSERT_EQ(decoded.size(), names.size());
    EXPECT_EQ(decoded[3].value.size(), 10U);
}

TEST(Values, FixedSizeBytesAreTheLittleEndianStruct) {
    const proto::Health health{0x01020304};
    const auto bytes = proto::value_bytes(health);
    ASSERT_EQ(bytes.size(), 4U);
    EXPECT_EQ(bytes[0], std::byte{0x04});
    EXPECT_EQ(bytes[3], std::byte{0x01});

    const proto::Name name{"abc"};
    const auto name_bytes = proto::value_bytes(name);
    ASSERT_EQ(name_bytes.size(), 3U);
    EXPECT_EQ(name_bytes[0], std::byte{'a'});
}

// A Padded value built in memory whose every byte was `garbage` first, with its padding bytes
// (1..3 and 12..15) set to `garbage` again after construction: what a component can hold in
// storage that was used before, or on the stack.
struct poisoned_padded {
    alignas(proto::testing::Padded) std::array<std::byte, sizeof(proto::testing::Padded)> bytes;
    const proto::testing::Padded* value;

    poisoned_padded(std::byte garbage, const proto::testing::Padded& fields) {
        bytes.fill(garbage);
        value = ::new (static_cast<void*>(bytes.data())) proto::testing::Padded{fields};
        std::fill(bytes.begin() + 1, bytes.begin() + 4, garbage);
        std::fill(bytes.begin() + 12, bytes.begin() + 16, garbage);
    }
};

std::vector<std::uint8_t> encode_one(const proto::testing::Padded& value) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto column = proto::encode_values<proto::testing::Padded>(
        fbb, 1, [&](std::size_t) -> const proto::testing::Padded& { return value; });
    ecsnet::test_wire::PaddedColumnsBuilder builder(fbb);
    builder.add_padded(column);
    fbb.Finish(builder.Finish());
    return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
}

TEST(Values, PaddingBytesNeverReachTheWire) {
    static_assert(sizeof(proto::testing::Padded) == 24, "the test poisons bytes 1..3 and 12..15");
    const proto::testing::Padded fields{7, 1.5F, 9, 0x0102030405060708ULL};
    const poisoned_padded a{std::byte{0xAB}, fields};
    const poisoned_padded b{std::byte{0xCD}, fields};
    ASSERT_EQ(*a.value, *b.value);

    const auto bytes_a = encode_one(*a.value);
    const auto bytes_b = encode_one(*b.value);
    EXPECT_EQ(bytes_a, bytes_b) << "equal values must encode to equal bytes";
    EXPECT_EQ(std::count(bytes_a.begin(), bytes_a.end(), std::uint8_t{0xAB}), 0)
        << "a padding byte of the value went onto the wire";

    // The encoded struct is the one flatc's constructor builds, padding zero.
    const ecsnet::test_wire::Padded expected{7, 1.5F, 9, 0x0102030405060708ULL};
    const auto* expected_bytes = reinterpret_cast<const std::uint8_t*>(&expected);
    EXPECT_NE(std::search(bytes_a.begin(), bytes_a.end(), expected_bytes,
                          expected_bytes + sizeof expected),
              bytes_a.end());

    // And decodes back to the same value.
    const auto* columns = flatbuffers::GetRoot<ecsnet::test_wire::PaddedColumns>(bytes_a.data());
    ASSERT_NE(columns->padded(), nullptr);
    ASSERT_EQ(columns->padded()->size(), 1U);
    EXPECT_EQ(proto::decode_value<proto::testing::Padded>(*columns->padded(), 0), fields);
}

TEST(Values, PaddingBytesNeverReachTheChecksum) {
    const proto::testing::Padded fields{200, -0.5F, 1, 42};
    const poisoned_padded a{std::byte{0xAB}, fields};
    const poisoned_padded b{std::byte{0xCD}, fields};
    const auto bytes_a = proto::value_bytes(*a.value);
    const auto bytes_b = proto::value_bytes(*b.value);
    ASSERT_EQ(bytes_a.size(), bytes_b.size());
    EXPECT_TRUE(std::equal(bytes_a.begin(), bytes_a.end(), bytes_b.begin()))
        << "the hashed bytes of equal values differ: false desyncs";
    const std::array<std::byte, 4> zero{};
    EXPECT_TRUE(std::equal(bytes_a.begin() + 1, bytes_a.begin() + 4, zero.begin()));
    EXPECT_TRUE(std::equal(bytes_a.begin() + 12, bytes_a.begin() + 16, zero.begin()));
}

// ---- the component list -------------------------------------------------------------------

TEST(Components, WireIdsFollowTheListOrder) {
    EXPECT_EQ(proto::wire_id_v<proto::Position>, 0U);
    EXPECT_EQ(proto::wire_id_v<proto::Velocity>, 1U);
    EXPECT_EQ(proto::wire_id_v<proto::Health>, 2U);
    EXPECT_EQ(proto::wire_id_v<proto::Lifetime>, 3U);
    EXPECT_EQ(proto::wire_id_v<proto::Owner>, 4U);
    EXPECT_EQ(proto::wire_id_v<proto::Name>, 5U);
    EXPECT_EQ(proto::replicated_count, 6U);
}

TEST(Components, ForEachComponentVisitsEveryTypeInWireIdOrder) {
    std::vector<std::uint32_t> ids;
    std::vector<std::string> names;
    std::vector<bool> server_only;
    proto::for_each_component([&]<typename T>() {
        ids.push_back(proto::wire_id_v<T>);
        names.emplace_back(proto::column<T>::name);
        server_only.push_back(proto::column<T>::written_by == proto::writer::server);
    });
    EXPECT_THAT(ids, ElementsAre(0, 1, 2, 3, 4, 5));
    EXPECT_THAT(names, ElementsAre("position", "velocity", "health", "lifetime", "owner", "name"));
    EXPECT_THAT(server_only, ElementsAre(false, false, false, false, true, false));
}

TEST(Components, OnlyNameIsAStringComponent) {
    EXPECT_TRUE(proto::is_string_component_v<proto::Name>);
    EXPECT_FALSE(proto::is_string_component_v<proto::Position>);
    EXPECT_FALSE(proto::is_string_component_v<proto::Owner>);
}

TEST(Components, ValidValue) {
    constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr float inf = std::numeric_limits<float>::infinity();
    EXPECT_TRUE(proto::valid_value(proto::Position{1.0F, -1.0F}));
    EXPECT_TRUE(proto::valid_value(proto::Position{std::numeric_limits<float>::max(),
                                                   std::numeric_limits<float>::denorm_min()}));
    EXPECT_FALSE(proto::valid_value(proto::Position{nan, 0.0F}));
    EXPECT_FALSE(proto::valid_value(proto::Position{0.0F, nan}));
    EXPECT_FALSE(proto::valid_value(proto::Position{inf, 0.0F}));
    EXPECT_FALSE(proto::valid_value(proto::Position{0.0F, -inf}));
    EXPECT_FALSE(proto::valid_value(proto::Velocity{-inf, 0.0F}));
    EXPECT_FALSE(proto::valid_value(proto::Velocity{0.0F, nan}));
    EXPECT_TRUE(proto::valid_value(proto::Velocity{}));

    EXPECT_TRUE(proto::valid_value(proto::Health{std::numeric_limits<std::int32_t>::min()}));
    EXPECT_TRUE(proto::valid_value(proto::Lifetime{u32_max}));
    EXPECT_TRUE(proto::valid_value(proto::Owner{0}));

    EXPECT_TRUE(proto::valid_value(proto::Name{""}));
    EXPECT_TRUE(proto::valid_value(proto::Name{std::string(proto::max_name_bytes, 'n')}));
    EXPECT_FALSE(proto::valid_value(proto::Name{std::string(proto::max_name_bytes + 1, 'n')}));
}

}  // namespace
