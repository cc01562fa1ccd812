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

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/test_wire/padded_generated.h"
#include "printers.hpp"
#include "test_types.hpp"

// A component with padding bytes in memory (after `flag`, and before `big`) and in its
// FlatBuffers struct (tests/protocol/padded.fbs): none of it may reach the wire or the checksum.
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
struct ecsnet::protocol::replicated<ecsnet::protocol::testing::Padded>
    : ecsnet::protocol::replicate<ecsnet::test_wire::Padded, "padded"> {};

namespace columns_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
namespace demo = ecsnet::demo;
namespace ids = ecsnet::testing::ids;
using ecsnet::testing::Mixed;
using ecsnet::testing::Spot;
using ecsnet::testing::Tag;

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

// ---- values in a Column -------------------------------------------------------------------

// The demo's types, the test-only ones and Padded.
const proto::component_registry& types() {
    static const proto::component_registry registry = [] {
        proto::component_registry r = ecsnet::testing::test_types();
        r.add<proto::testing::Padded>();
        return r;
    }();
    return registry;
}

// Puts the values on entities of a world, encodes them as T's Column the way the server does
// (the registry's encode) and reads them back the way a receiver does: from the column's
// bytes and the schema alone.
template <typename T>
std::vector<T> round_trip(const std::vector<T>& values) {
    const std::uint16_t id = *types().id_of<T>();
    const proto::component_info& info = types().info(id);
    auto world = ecsnet::ecs::World::make();
    std::vector<ecsnet::ecs::Entity> entities;
    if (values.empty()) {
        // A storage that held values once, as on a server: the registry reads from it.
        const auto gone = world->create();
        world->emplace<T>(gone);
        world->destroy(gone);
    }
    for (const T& v : values) {
        entities.push_back(world->create());
        world->emplace<T>(entities.back(), v);
    }
    flatbuffers::FlatBufferBuilder fbb;
    const flatbuffers::uoffset_t data = types().ops(id).encode(fbb, *world, entities);
    fbb.Finish(info.is_string
                   ? wire::CreateColumn(fbb, id, 0, 0,
                                        flatbuffers::Offset<flatbuffers::Vector<
                                            flatbuffers::Offset<flatbuffers::String>>>{data})
                   : wire::CreateColumn(fbb, id, 0,
                                        flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>{data}));
    const buffer<wire::Column> buf{fbb};
    const wire::Column* column = buf.root();
    if (column == nullptr) {
        return {};
    }
    EXPECT_EQ(column->type(), id);
    std::vector<T> out;
    if constexpr (proto::detail::is_string_v<T>) {
        EXPECT_EQ(column->values(), nullptr);
        if (column->strings() == nullptr) {
            ADD_FAILURE() << info.name << ": no strings";
            return {};
        }
        for (const auto* s : *column->strings()) {
            T v{};
            boost::pfr::get<0>(v) = s->str();
            out.push_back(v);
        }
    } else {
        EXPECT_EQ(column->strings(), nullptr);
        if (column->values() == nullptr) {
            ADD_FAILURE() << info.name << ": no values";
            return {};
        }
        const auto bytes = std::as_bytes(std::span{column->values()->data(), column->values()->size()});
        EXPECT_EQ(bytes.size(), proto::column_bytes(info, values.size())) << info.name;
        std::vector<std::byte> value(info.value_bytes());
        for (std::size_t i = 0; i < values.size() && bytes.size() >= proto::column_bytes(info, i + 1); ++i) {
            proto::unpack_value(info, bytes, i, value);
            out.push_back(proto::unpack<T>(value.data()));
        }
    }
    return out;
}

TEST(Values, FixedSizeTypesRoundTrip) {
    const std::vector<demo::Position> positions{{1.5F, -2.25F}, {0.0F, -0.0F}, {3e38F, -1e-38F}};
    EXPECT_EQ(round_trip(positions), positions);
    const std::vector<demo::Velocity> velocities{{-7.0F, 0.125F}};
    EXPECT_EQ(round_trip(velocities), velocities);
    const std::vector<demo::Health> healths{{0},
                                            {-1},
                                            {std::numeric_limits<std::int32_t>::min()},
                                            {std::numeric_limits<std::int32_t>::max()}};
    EXPECT_EQ(round_trip(healths), healths);
    const std::vector<demo::Lifetime> lifetimes{{u32_max}, {1}};
    EXPECT_EQ(round_trip(lifetimes), lifetimes);
    const std::vector<proto::Owner> owners{{17}, {0}, {u32_max}};
    EXPECT_EQ(round_trip(owners), owners);
    const std::vector<Mixed> mixed{
        {true, -128, 65535, std::numeric_limits<std::int64_t>::min(), -0.0},
        {false, 127, 0, std::numeric_limits<std::int64_t>::max(), 1e308},
        {true, 0, 1, -1, std::numeric_limits<double>::denorm_min()}};
    EXPECT_EQ(round_trip(mixed), mixed);
    const std::vector<proto::testing::Padded> padded{{0xFF, -1.5F, u32_max, ~0ULL}, {}};
    EXPECT_EQ(round_trip(padded), padded);
}

// Quantized values are 38 bits each: value i starts at bit 38 * i, inside a byte.
TEST(Values, QuantizedValuesRoundTripAcrossByteBoundaries) {
    std::vector<Spot> spots;
    for (int i = 0; i < 13; ++i) {  // 13 * 38 bits = 61.75 bytes: the last byte half used
        spots.push_back(Spot{static_cast<float>(i * 315 + 1) / 64.0F,
                             4096.0F - static_cast<float>(i * i) / 64.0F});
    }
    spots.push_back(Spot{0.0F, 4096.0F});
    spots.push_back(Spot{4096.0F, 0.0F});
    const proto::component_info& info = types().info(ids::spot);
    EXPECT_EQ(info.value_bits(), 38U);
    EXPECT_EQ(info.value_bytes(), 5U);
    EXPECT_FALSE(info.byte_aligned());
    EXPECT_EQ(proto::column_bytes(info, spots.size()), (spots.size() * 38 + 7) / 8);
    EXPECT_EQ(round_trip(spots), spots);
}

TEST(Values, QuantizedValuesRoundToTheStepAndClampToTheRange) {
    const std::vector<Spot> sent{{1.0F / 256.0F, 100.005F}, {-5.0F, 5000.0F},
                                 {std::numeric_limits<float>::quiet_NaN(), 4096.5F}};
    const std::vector<Spot> received{{0.0F, 100.0F}, {0.0F, 4096.0F}, {0.0F, 4096.0F}};
    EXPECT_EQ(round_trip(sent), received);
    // What the mirror and the checksum see is the canonical form of the same rounding.
    EXPECT_EQ(proto::pack(sent[1]), proto::pack(received[1]));
    EXPECT_EQ(proto::unpack<Spot>(proto::pack(sent[0]).data()), received[0]);
}

TEST(Values, EmptyColumnRoundTrips) {
    EXPECT_THAT(round_trip(std::vector<demo::Position>{}), IsEmpty());
    EXPECT_THAT(round_trip(std::vector<Spot>{}), IsEmpty());
    EXPECT_THAT(round_trip(std::vector<demo::Name>{}), IsEmpty());
}

TEST(Values, NamesRoundTrip) {
    const std::vector<demo::Name> names{
        {""},
        {"tank"},
        {"caf\xC3\xA9 \xF0\x9F\x9A\x80"},
        {std::string{"nul\0inside", 10}},
        {std::string(demo::max_name_bytes, 'x')},
    };
    const auto decoded = round_trip(names);
    EXPECT_EQ(decoded, names);
    ASSERT_EQ(decoded.size(), names.size());
    EXPECT_EQ(decoded[3].value.size(), 10U);
    const std::vector<Tag> tags{{"a"}, {std::string(ecsnet::testing::max_tag_bytes, 't')}};
    EXPECT_EQ(round_trip(tags), tags);
}

TEST(Values, FixedSizeBytesAreLittleEndianFieldsBackToBack) {
    const auto health = proto::pack(demo::Health{0x01020304});
    ASSERT_EQ(health.size(), 4U);
    EXPECT_EQ(health[0], std::byte{0x04});
    EXPECT_EQ(health[3], std::byte{0x01});

    // bool, int8, uint16, int64, double: 20 bytes, no padding between them.
    const auto mixed = proto::pack(Mixed{true, -1, 0x0203, 0x0405060708090A0B, 1.0});
    ASSERT_EQ(mixed.size(), 20U);
    const std::array<std::uint8_t, 20> expected{1,    0xFF, 0x03, 0x02, 0x0B, 0x0A, 0x09,
                                                0x08, 0x07, 0x06, 0x05, 0x04, 0,    0,
                                                0,    0,    0,    0,    0xF0, 0x3F};
    EXPECT_EQ((std::bit_cast<std::array<std::uint8_t, 20>>(mixed)), expected);

    // Quantized: q of each field in 19 bits, least significant bit first.
    const auto spot = proto::pack(Spot{1.0F, 4096.0F});  // q = 64 and 262144 (bit 18)
    ASSERT_EQ(spot.size(), 5U);
    const std::uint64_t packed = 64U | (std::uint64_t{262144} << 19U);
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(spot[i], static_cast<std::byte>(packed >> (8 * i))) << i;
    }
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

// What goes on the wire and into the checksum for a value: its canonical bytes.
TEST(Values, PaddingBytesNeverReachTheWire) {
    static_assert(sizeof(proto::testing::Padded) == 24, "the test poisons bytes 1..3 and 12..15");
    const proto::testing::Padded fields{7, 1.5F, 9, 0x0102030405060708ULL};
    const poisoned_padded a{std::byte{0xAB}, fields};
    const poisoned_padded b{std::byte{0xCD}, fields};
    ASSERT_EQ(*a.value, *b.value);

    const auto bytes_a = proto::pack(*a.value);
    const auto bytes_b = proto::pack(*b.value);
    EXPECT_EQ(bytes_a, bytes_b) << "equal values must encode to equal bytes";
    EXPECT_EQ(std::count(bytes_a.begin(), bytes_a.end(), std::byte{0xAB}), 0)
        << "a padding byte of the value went onto the wire";

    // The fields back to back: flag, value, ticks, big; 17 bytes, neither the component's
    // padding nor its FlatBuffers struct's.
    const std::array<std::uint8_t, 17> expected{7, 0, 0, 0xC0, 0x3F, 9, 0, 0, 0,
                                                8, 7, 6, 5,    4,    3, 2, 1};
    EXPECT_EQ((std::bit_cast<std::array<std::uint8_t, 17>>(bytes_a)), expected);

    // And decodes back to the same value.
    EXPECT_EQ(proto::unpack<proto::testing::Padded>(bytes_a.data()), fields);
}

TEST(Values, PaddingBytesNeverReachTheChecksum) {
    const proto::testing::Padded fields{200, -0.5F, 1, 42};
    const poisoned_padded a{std::byte{0xAB}, fields};
    const poisoned_padded b{std::byte{0xCD}, fields};
    const std::uint16_t id = *types().id_of<proto::testing::Padded>();
    EXPECT_EQ(proto::checksum::component_term(id, 1, 1, proto::pack(*a.value)),
              proto::checksum::component_term(id, 1, 1, proto::pack(*b.value)))
        << "the hashed bytes of equal values differ: false desyncs";

    // Through the registry, from a world's storage (the checksum's path).
    auto world = ecsnet::ecs::World::make();
    const auto e = world->create();
    world->emplace<proto::testing::Padded>(e, *a.value);
    std::array<std::byte, 17> stored{};
    types().ops(id).pack(*world, e, stored.data());
    EXPECT_EQ(stored, proto::pack(fields));
}

// ---- the registered types -----------------------------------------------------------------

TEST(Components, WireIdsFollowTheRegistrationOrder) {
    const proto::component_registry& r = types();
    EXPECT_EQ(r.id_of<proto::Owner>(), ids::owner);
    EXPECT_EQ(r.id_of<demo::Position>(), ids::position);
    EXPECT_EQ(r.id_of<demo::Velocity>(), ids::velocity);
    EXPECT_EQ(r.id_of<demo::Health>(), ids::health);
    EXPECT_EQ(r.id_of<demo::Lifetime>(), ids::lifetime);
    EXPECT_EQ(r.id_of<demo::Name>(), ids::name);
    EXPECT_EQ(r.id_of<Spot>(), ids::spot);
    EXPECT_EQ(r.id_of<Mixed>(), ids::mixed);
    EXPECT_EQ(r.id_of<Tag>(), ids::tag);
    EXPECT_EQ(r.size(), 10U);
    EXPECT_EQ(ecsnet::testing::demo_types().size(), 6U);
}

TEST(Components, TheSchemaListsEveryTypeInWireIdOrder) {
    std::vector<std::uint32_t> ids;
    std::vector<std::string> names;
    std::vector<bool> server_only;
    for (const proto::component_info& t : types().types().types()) {
        ids.push_back(t.id);
        names.push_back(t.name);
        server_only.push_back(t.written_by == proto::writer::server);
    }
    EXPECT_THAT(ids, ElementsAre(0, 1, 2, 3, 4, 5, 6, 7, 8, 9));
    EXPECT_THAT(names, ElementsAre("owner", "position", "velocity", "health", "lifetime", "name",
                                   "spot", "mixed", "tag", "padded"));
    EXPECT_THAT(server_only,
                ElementsAre(true, false, false, false, false, false, false, true, false, false));
}

TEST(Components, OnlyNameAndTagAreStringComponents) {
    for (const proto::component_info& t : types().types().types()) {
        EXPECT_EQ(t.is_string, t.name == "name" || t.name == "tag") << t.name;
        EXPECT_EQ(t.value_bytes() == 0, t.is_string) << t.name;
    }
    EXPECT_EQ(types().info(ids::name).max_bytes, demo::max_name_bytes);
    EXPECT_EQ(types().info(ids::tag).max_bytes, ecsnet::testing::max_tag_bytes);
    EXPECT_EQ(types().info(ids::tag).written_by, proto::writer::any);
}

TEST(Components, ValidValue) {
    constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr float inf = std::numeric_limits<float>::infinity();
    const auto valid = [](const auto& value) {
        using T = std::remove_cvref_t<decltype(value)>;
        return proto::valid_value(types().info(*types().id_of<T>()), proto::pack(value));
    };
    EXPECT_TRUE(valid(demo::Position{1.0F, -1.0F}));
    EXPECT_TRUE(valid(demo::Position{std::numeric_limits<float>::max(),
                                     std::numeric_limits<float>::denorm_min()}));
    EXPECT_FALSE(valid(demo::Position{nan, 0.0F}));
    EXPECT_FALSE(valid(demo::Position{0.0F, nan}));
    EXPECT_FALSE(valid(demo::Position{inf, 0.0F}));
    EXPECT_FALSE(valid(demo::Position{0.0F, -inf}));
    EXPECT_FALSE(valid(demo::Velocity{-inf, 0.0F}));
    EXPECT_FALSE(valid(demo::Velocity{0.0F, nan}));
    EXPECT_TRUE(valid(demo::Velocity{}));
    EXPECT_FALSE(valid(Mixed{true, 0, 0, 0, std::numeric_limits<double>::infinity()}));
    EXPECT_TRUE(valid(Mixed{true, 0, 0, 0, -0.0}));
    // A quantized float never carries NaN: every q is a number.
    EXPECT_TRUE(valid(Spot{nan, inf}));

    EXPECT_TRUE(valid(demo::Health{std::numeric_limits<std::int32_t>::min()}));
    EXPECT_TRUE(valid(demo::Lifetime{u32_max}));
    EXPECT_TRUE(valid(proto::Owner{0}));

    // The type's own valid(), which the registry applies to what a client sends.
    const auto accepts = [](const auto& value) {
        using T = std::remove_cvref_t<decltype(value)>;
        proto::component_set set;
        set.set(value);
        std::string why;
        const bool ok = types().ops(*types().id_of<T>()).accepts(set.values()[0], &why);
        EXPECT_EQ(ok, why.empty()) << why;
        return ok;
    };
    EXPECT_TRUE(accepts(demo::Position{1.0F, 2.0F}));
    EXPECT_FALSE(accepts(demo::Position{nan, 2.0F}));
    EXPECT_TRUE(accepts(demo::Name{std::string(demo::max_name_bytes, 'n')}));
}

}  // namespace columns_test
