#include "ecsnet/protocol/stored.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "stored_test_generated.h"
#include "test_types.hpp"

namespace ecsnet::testing {

// bool, int8, uint64 and double: each kept whole, bool as one byte (18 bytes, no padding).
struct Ledger {
    bool flag{};
    std::int8_t small{};
    std::uint64_t count{};
    double real{};
    friend bool operator==(const Ledger&, const Ledger&) = default;
};

// Kept, never replicated: one of scalars and one string.
struct Hunger {
    float level{};
    std::uint32_t meals{};
    friend bool operator==(const Hunger&, const Hunger&) = default;
};
struct Diary {
    std::string text;
    friend bool operator==(const Diary&, const Diary&) = default;
};
// Clashes: a kept type named like another, and Spot kept a second time.
struct HungerTwin {
    std::int32_t level{};
};
struct SpotNamedOtherwise {
    std::int32_t v{};
};

}  // namespace ecsnet::testing

namespace ecsnet::protocol {
template <>
struct replicated<testing::Ledger> : replicate<testing::stored_wire::Ledger, "ledger"> {};
template <>
struct persistent<testing::Hunger> : persist<"hunger"> {};
template <>
struct persistent<testing::Diary> : persist<"diary"> {};
template <>
struct persistent<testing::HungerTwin> : persist<"hunger"> {};
template <>
struct persistent<testing::SpotNamedOtherwise> : persist<"spot"> {};
// Spot is replicated already: keeping it again under another name is refused by type.
template <>
struct persistent<testing::Spot> : persist<"spot_kept"> {};
}  // namespace ecsnet::protocol

namespace stored_test {

using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::protocol::component_registry;
using ecsnet::protocol::field_type;
using ecsnet::protocol::field_value;
using ecsnet::protocol::stored_field;
using ecsnet::protocol::stored_ops;
using ecsnet::protocol::stored_type;
using ecsnet::testing::Diary;
using ecsnet::testing::Hunger;
using ecsnet::testing::Ledger;
using ecsnet::testing::Spot;
using ecsnet::testing::Tag;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// owner, spot, ledger, tag; hunger and diary kept only.
component_registry registry() {
    component_registry types;
    types.add<Spot>();
    types.add<Ledger>();
    types.add<Tag>();
    types.persist<Hunger>();
    types.persist<Diary>();
    return types;
}

const stored_ops& ops_of(const component_registry& types, std::string_view name) {
    const stored_ops* ops = types.find_stored(name);
    if (ops == nullptr) {
        throw std::logic_error("no kept type " + std::string{name});
    }
    return *ops;
}

template <typename T>
std::vector<std::byte> bytes_of(const T& value) {
    std::vector<std::byte> out(sizeof(T));
    std::memcpy(out.data(), &value, sizeof(T));
    return out;
}

std::vector<std::byte> cat(std::initializer_list<std::vector<std::byte>> parts) {
    std::vector<std::byte> out;
    for (const auto& p : parts) {
        out.insert(out.end(), p.begin(), p.end());
    }
    return out;
}

template <typename Fn>
std::string message_of(Fn&& fn) {
    try {
        fn();
    } catch (const std::invalid_argument& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string{"<wrong exception type: "} + e.what() + ">";
    }
    return "<no exception>";
}

static_assert(std::endian::native == std::endian::little, "the expected bytes are little-endian");

// ---- layout ------------------------------------------------------------------------------

TEST(StoredType, KeptTypesInRegistrationOrderOwnerFirst) {
    const component_registry types = registry();
    std::vector<std::string> names;
    for (const stored_ops& ops : types.stored()) {
        names.push_back(ops.type.name);
    }
    EXPECT_THAT(names, ElementsAre("owner", "spot", "ledger", "tag", "hunger", "diary"));
}

TEST(StoredType, QuantizedTypeIsDescribedByItsWholeFields) {
    const stored_type spot = ops_of(registry(), "spot").type;
    EXPECT_EQ(spot.name, "spot");
    EXPECT_TRUE(spot.replicated);
    EXPECT_FALSE(spot.is_string);
    EXPECT_THAT(spot.fields, ElementsAre(stored_field{"x", field_type::float32},
                                         stored_field{"y", field_type::float32}));
    EXPECT_EQ(spot.value_bytes(), 8U) << "two whole floats, not the 5 bytes of the wire";
    EXPECT_EQ(ecsnet::protocol::describe(spot), "spot {x: float, y: float}");
}

TEST(StoredType, LedgerFieldsAreWholeAndBoolIsOneByte) {
    const stored_type ledger = ops_of(registry(), "ledger").type;
    EXPECT_THAT(ledger.fields, ElementsAre(stored_field{"flag", field_type::bool_},
                                           stored_field{"small", field_type::int8},
                                           stored_field{"count", field_type::uint64},
                                           stored_field{"real", field_type::float64}));
    EXPECT_EQ(ledger.value_bytes(), 1U + 1U + 8U + 8U);
    EXPECT_EQ(ecsnet::protocol::describe(ledger),
              "ledger {flag: bool, small: int8, count: uint64, real: double}");
}

TEST(StoredType, StringTypesAndKeptOnlyTypes) {
    const component_registry types = registry();
    const stored_type& tag = ops_of(types, "tag").type;
    EXPECT_TRUE(tag.is_string);
    EXPECT_TRUE(tag.replicated);
    EXPECT_TRUE(tag.fields.empty());
    EXPECT_EQ(tag.value_bytes(), 0U);
    EXPECT_EQ(ecsnet::protocol::describe(tag), "tag (string)");

    const stored_type& hunger = ops_of(types, "hunger").type;
    EXPECT_FALSE(hunger.replicated);
    EXPECT_FALSE(hunger.is_string);
    EXPECT_THAT(hunger.fields, ElementsAre(stored_field{"f0", field_type::float32},
                                           stored_field{"f1", field_type::uint32}));
    EXPECT_EQ(hunger.value_bytes(), 8U);

    const stored_type& diary = ops_of(types, "diary").type;
    EXPECT_FALSE(diary.replicated);
    EXPECT_TRUE(diary.is_string);
    EXPECT_EQ(diary.value_bytes(), 0U);
}

TEST(StoredType, KeptOnlyTypesAreNotReplicated) {
    const component_registry types = registry();
    EXPECT_FALSE(types.id_of("hunger").has_value());
    EXPECT_FALSE(types.id_of("diary").has_value());
    EXPECT_EQ(types.size(), 4U) << "owner, spot, ledger, tag on the wire";
    EXPECT_EQ(types.stored().size(), 6U);
}

// ---- values --------------------------------------------------------------------------------

TEST(StoredValue, QuantizedFloatsAreStoredExactlyNotQuantized) {
    const component_registry types = registry();
    auto world = World::make();
    const Entity e = world->create();
    const Spot value{1.3F, 4000.123F};  // neither is a multiple of 1/64
    world->emplace<Spot>(e, value);

    std::vector<std::byte> bytes;
    std::string text;
    ops_of(types, "spot").get(*world, e, bytes, text);
    EXPECT_EQ(bytes, cat({bytes_of(1.3F), bytes_of(4000.123F)}));
    EXPECT_TRUE(text.empty());

    const auto fields = ecsnet::protocol::decode_fields(ops_of(types, "spot").type, bytes);
    EXPECT_THAT(fields, ElementsAre(field_value{double{1.3F}}, field_value{double{4000.123F}}));
}

TEST(StoredValue, LedgerBytesAreLittleEndianBackToBack) {
    const component_registry types = registry();
    auto world = World::make();
    const Entity e = world->create();
    const Ledger value{true, -5, 0xFEDCBA9876543210ULL, -2.5e300};
    world->emplace<Ledger>(e, value);

    std::vector<std::byte> bytes{std::byte{0xAA}};  // get appends
    std::string text;
    ops_of(types, "ledger").get(*world, e, bytes, text);
    const auto expected = cat({{std::byte{0xAA}},
                               {std::byte{1}},
                               {std::byte{0xFB}},
                               bytes_of(std::uint64_t{0xFEDCBA9876543210ULL}),
                               bytes_of(-2.5e300)});
    EXPECT_EQ(bytes, expected);

    const auto fields = ecsnet::protocol::decode_fields(
        ops_of(types, "ledger").type, std::span<const std::byte>{bytes}.subspan(1));
    EXPECT_THAT(fields, ElementsAre(field_value{true}, field_value{std::int64_t{-5}},
                                    field_value{std::uint64_t{0xFEDCBA9876543210ULL}},
                                    field_value{-2.5e300}));
}

TEST(StoredValue, AMarkerIsStoredAsOneBoolField) {
    component_registry types;
    types.add<ecsnet::testing::Frozen>();
    const stored_ops& frozen = ops_of(types, "frozen");
    EXPECT_THAT(frozen.type.fields, ElementsAre(stored_field{"present", field_type::bool_}));
    EXPECT_EQ(frozen.type.value_bytes(), 1U);
    auto world = World::make();
    const Entity e = world->create();
    world->emplace<ecsnet::testing::Frozen>(e);
    std::vector<std::byte> bytes;
    std::string text;
    frozen.get(*world, e, bytes, text);
    EXPECT_THAT(bytes, ElementsAre(std::byte{1}));
    const Entity other = world->create();
    frozen.put(*world, other, bytes, {});
    EXPECT_TRUE(world->has<ecsnet::testing::Frozen>(other));
}

TEST(StoredValue, BoolIsStoredAsZeroOrOne) {
    const component_registry types = registry();
    auto world = World::make();
    const Entity e = world->create();
    world->emplace<Ledger>(e, Ledger{false, 0, 0, 0.0});
    std::vector<std::byte> bytes;
    std::string text;
    ops_of(types, "ledger").get(*world, e, bytes, text);
    ASSERT_EQ(bytes.size(), 18U);
    EXPECT_EQ(bytes[0], std::byte{0});
    // Any non-zero byte reads back as true.
    bytes[0] = std::byte{7};
    ops_of(types, "ledger").put(*world, e, bytes, {});
    EXPECT_TRUE(world->get<Ledger>(e).flag);
}

TEST(StoredFields, EncodeDecodeRoundTripEveryKind) {
    stored_type all{"all",
                    false,
                    false,
                    {{"a", field_type::bool_},
                     {"b", field_type::int8},
                     {"c", field_type::uint8},
                     {"d", field_type::int16},
                     {"e", field_type::uint16},
                     {"f", field_type::int32},
                     {"g", field_type::uint32},
                     {"h", field_type::int64},
                     {"i", field_type::uint64},
                     {"j", field_type::float32},
                     {"k", field_type::float64}}};
    EXPECT_EQ(all.value_bytes(), 1U + 1 + 1 + 2 + 2 + 4 + 4 + 8 + 8 + 4 + 8);
    const std::vector<field_value> values{true,
                                          std::int64_t{-128},
                                          std::uint64_t{255},
                                          std::int64_t{-32768},
                                          std::uint64_t{65535},
                                          std::int64_t{std::numeric_limits<std::int32_t>::min()},
                                          std::uint64_t{std::numeric_limits<std::uint32_t>::max()},
                                          std::int64_t{std::numeric_limits<std::int64_t>::min()},
                                          std::uint64_t{std::numeric_limits<std::uint64_t>::max()},
                                          double{0.1F},
                                          0.1};
    std::vector<std::byte> out(all.value_bytes(), std::byte{0xEE});
    ecsnet::protocol::encode_fields(all, values, out.data());
    EXPECT_EQ(ecsnet::protocol::decode_fields(all, out), values);
}

TEST(StoredFields, EncodeConvertsLikeAStaticCast) {
    const stored_type t{
        "t",
        false,
        false,
        {{"i", field_type::int32}, {"f", field_type::float32}, {"b", field_type::bool_}}};
    std::vector<std::byte> out(t.value_bytes());
    const std::vector<field_value> values{2.75, std::int64_t{3}, std::uint64_t{2}};
    ecsnet::protocol::encode_fields(t, values, out.data());
    EXPECT_THAT(ecsnet::protocol::decode_fields(t, out),
                ElementsAre(field_value{std::int64_t{2}}, field_value{3.0}, field_value{true}));
}

TEST(StoredFields, ShortValuesAndCountMismatchesAreRefused) {
    const stored_type ledger = ops_of(registry(), "ledger").type;
    const std::vector<std::byte> short_value(17);
    EXPECT_THAT(message_of([&] { (void)ecsnet::protocol::decode_fields(ledger, short_value); }),
                HasSubstr("17 bytes, not 18"));
    std::vector<std::byte> out(18);
    const std::vector<field_value> three{true, std::int64_t{1}, std::uint64_t{2}};
    EXPECT_THAT(message_of([&] { ecsnet::protocol::encode_fields(ledger, three, out.data()); }),
                HasSubstr("3 values for the 4 fields of ledger"));
}

// ---- incompatibility ------------------------------------------------------------------------

stored_type spot_type() {
    return {"spot", true, false, {{"x", field_type::float32}, {"y", field_type::float32}}};
}

TEST(Incompatibility, SameLayoutIsCompatible) {
    EXPECT_EQ(ecsnet::protocol::incompatibility(spot_type(), spot_type()), "");
    stored_type kept = spot_type();
    kept.replicated = false;  // replicated or not: same values on disk
    EXPECT_EQ(ecsnet::protocol::incompatibility(spot_type(), kept), "");
    const stored_type a{"a", true, true, {}};
    EXPECT_EQ(ecsnet::protocol::incompatibility(a, a), "");
}

TEST(Incompatibility, AddedField) {
    stored_type now = spot_type();
    now.fields.push_back({"floor", field_type::int32});
    EXPECT_EQ(ecsnet::protocol::incompatibility(spot_type(), now),
              "2 fields stored, 3 now (stored as spot {x: float, y: float}, now spot {x: float, "
              "y: float, floor: int32})");
}

TEST(Incompatibility, RemovedField) {
    stored_type now = spot_type();
    now.fields.pop_back();
    EXPECT_THAT(ecsnet::protocol::incompatibility(spot_type(), now),
                HasSubstr("2 fields stored, 1 now"));
}

TEST(Incompatibility, RetypedField) {
    stored_type now = spot_type();
    now.fields[1].type = field_type::float64;
    EXPECT_THAT(ecsnet::protocol::incompatibility(spot_type(), now),
                HasSubstr("field 1 was y: float, now y: double"));
}

TEST(Incompatibility, RenamedOrMovedField) {
    stored_type renamed = spot_type();
    renamed.fields[0].name = "left";
    EXPECT_THAT(ecsnet::protocol::incompatibility(spot_type(), renamed),
                HasSubstr("field 0 was x: float, now left: float"));
    stored_type swapped = spot_type();
    std::swap(swapped.fields[0], swapped.fields[1]);
    EXPECT_THAT(ecsnet::protocol::incompatibility(spot_type(), swapped),
                HasSubstr("field 0 was x: float, now y: float"));
}

TEST(Incompatibility, StringAgainstFields) {
    const stored_type text{"spot", true, true, {}};
    EXPECT_EQ(ecsnet::protocol::incompatibility(text, spot_type()),
              "stored as spot (string), now spot {x: float, y: float}");
    EXPECT_EQ(ecsnet::protocol::incompatibility(spot_type(), text),
              "stored as spot {x: float, y: float}, now spot (string)");
}

// ---- the registry --------------------------------------------------------------------------

TEST(StoredRegistry, NameAndTypeClashesAreRefused) {
    component_registry types = registry();
    EXPECT_THAT(message_of([&] { types.persist<ecsnet::testing::HungerTwin>(); }),
                HasSubstr("a component named 'hunger' is registered already"));
    EXPECT_THAT(message_of([&] { types.persist<ecsnet::testing::SpotNamedOtherwise>(); }),
                HasSubstr("a component named 'spot' is registered already"));
    EXPECT_THAT(message_of([&] { types.persist<Spot>(); }),
                HasSubstr("is registered already (as 'spot')"));
    EXPECT_THAT(message_of([&] { types.persist<Hunger>(); }), HasSubstr("registered already"));
    EXPECT_EQ(types.stored().size(), 6U) << "nothing added by a refusal";
}

TEST(StoredRegistry, AReplicatedTypeNamedLikeAKeptOneIsRefused) {
    component_registry types;
    types.persist<ecsnet::testing::SpotNamedOtherwise>();  // "spot"
    EXPECT_THAT(message_of([&] { types.add<Spot>(); }),
                HasSubstr("a component named 'spot' is registered already"));
    EXPECT_EQ(types.size(), 1U) << "spot did not get a wire id";
    EXPECT_FALSE(types.id_of("spot").has_value());
}

TEST(StoredRegistry, MigrateDropAndMigration) {
    component_registry types = registry();
    EXPECT_EQ(types.migration("old"), nullptr);
    types.migrate("old", [](const stored_type&, std::span<const field_value> old) {
        return std::vector<field_value>(old.begin(), old.end());
    });
    ASSERT_NE(types.migration("old"), nullptr);
    EXPECT_TRUE(static_cast<bool>(*types.migration("old")));
    const std::vector<field_value> in{std::int64_t{4}};
    EXPECT_EQ((*types.migration("old"))(spot_type(), in), in);

    types.drop("gone");
    ASSERT_NE(types.migration("gone"), nullptr);
    EXPECT_FALSE(static_cast<bool>(*types.migration("gone"))) << "drop: an empty function";

    // The last word counts.
    types.drop("old");
    EXPECT_FALSE(static_cast<bool>(*types.migration("old")));
    types.migrate("gone", [](const stored_type&, std::span<const field_value>) {
        return std::vector<field_value>{};
    });
    EXPECT_TRUE(static_cast<bool>(*types.migration("gone")));

    EXPECT_THAT(message_of([&] { types.migrate("x", {}); }), HasSubstr("empty"));
    EXPECT_EQ(types.migration("x"), nullptr);
}

// ---- stored_ops on a real world -----------------------------------------------------------

TEST(StoredOps, CaptureListsIndicesAndValuesInStorageOrder) {
    const component_registry types = registry();
    auto world = World::make();
    std::vector<Entity> e;
    for (int i = 0; i < 4; ++i) {
        e.push_back(world->create());
    }
    world->emplace<Hunger>(e[3], Hunger{0.5F, 3});
    world->emplace<Hunger>(e[1], Hunger{1.25F, 9});
    world->emplace<Diary>(e[2], Diary{"dear diary"});
    world->emplace<Diary>(e[0], Diary{""});

    // What the vectors held before is replaced, whatever it was (a checkpoint passes the
    // previous one's vectors).
    std::vector<std::uint32_t> indices{99, 98, 97, 96};
    std::vector<std::byte> values(3);
    std::vector<std::string> texts{"left over"};
    ops_of(types, "hunger").capture(*world, indices, values, texts);
    EXPECT_THAT(indices, ElementsAre(3U, 1U));
    EXPECT_EQ(values, cat({bytes_of(0.5F), bytes_of(std::uint32_t{3}), bytes_of(1.25F),
                           bytes_of(std::uint32_t{9})}));
    EXPECT_TRUE(texts.empty());

    texts = {"a text longer than the small-string buffer", "x", "y"};
    ops_of(types, "diary").capture(*world, indices, values, texts);
    EXPECT_THAT(indices, ElementsAre(2U, 0U));
    EXPECT_THAT(texts, ElementsAre("dear diary", ""));
    EXPECT_TRUE(values.empty());
}

TEST(StoredOps, CaptureOfATypeTheWorldNeverSawIsEmpty) {
    const component_registry types = registry();
    auto world = World::make();
    (void)world->create();
    std::vector<std::uint32_t> indices;
    std::vector<std::byte> values;
    std::vector<std::string> texts;
    for (const stored_ops& ops : types.stored()) {
        ops.capture(*world, indices, values, texts);
    }
    EXPECT_TRUE(indices.empty());
    EXPECT_TRUE(values.empty());
    EXPECT_TRUE(texts.empty());
    EXPECT_FALSE(ops_of(types, "hunger").contains(*world, Entity{0, 1}));
}

TEST(StoredOps, PutGetAndRemoveKeptOnlyTypes) {
    const component_registry types = registry();
    auto world = World::make();
    const Entity e = world->create();
    const stored_ops& hunger = ops_of(types, "hunger");
    const stored_ops& diary = ops_of(types, "diary");

    hunger.put(*world, e, cat({bytes_of(2.5F), bytes_of(std::uint32_t{7})}), {});
    EXPECT_EQ(world->get<Hunger>(e), (Hunger{2.5F, 7}));
    EXPECT_TRUE(hunger.contains(*world, e));
    hunger.put(*world, e, cat({bytes_of(-1.0F), bytes_of(std::uint32_t{8})}), {});
    EXPECT_EQ(world->get<Hunger>(e), (Hunger{-1.0F, 8})) << "put replaces";

    diary.put(*world, e, {}, "once upon a time");
    EXPECT_EQ(world->get<Diary>(e).text, "once upon a time");
    std::vector<std::byte> bytes;
    std::string text;
    diary.get(*world, e, bytes, text);
    EXPECT_EQ(text, "once upon a time");
    EXPECT_TRUE(bytes.empty());

    hunger.remove(*world, e);
    diary.remove(*world, e);
    EXPECT_FALSE(hunger.contains(*world, e));
    EXPECT_FALSE(diary.contains(*world, e));
    EXPECT_EQ(world->try_get<Hunger>(e), nullptr);
}

TEST(StoredOps, GetThenPutRoundTripsEveryFixedType) {
    const component_registry types = registry();
    auto from = World::make();
    auto to = World::make();
    const Entity a = from->create();
    const Entity b = to->create();
    from->emplace<Spot>(a, Spot{0.001F, 5000.0F});  // beyond the quantized range: kept as is
    from->emplace<Ledger>(a, Ledger{true, -128, 1ULL << 63U, 1e-310});
    from->emplace<Hunger>(a, Hunger{std::numeric_limits<float>::infinity(), 0xFFFFFFFFU});
    for (const char* name : {"spot", "ledger", "hunger"}) {
        std::vector<std::byte> bytes;
        std::string text;
        const stored_ops& ops = ops_of(types, name);
        ops.get(*from, a, bytes, text);
        ASSERT_EQ(bytes.size(), ops.type.value_bytes()) << name;
        ops.put(*to, b, bytes, {});
    }
    EXPECT_EQ(to->get<Spot>(b), (Spot{0.001F, 5000.0F}));
    EXPECT_EQ(to->get<Ledger>(b), (Ledger{true, -128, 1ULL << 63U, 1e-310}));
    EXPECT_EQ(to->get<Hunger>(b), (Hunger{std::numeric_limits<float>::infinity(), 0xFFFFFFFFU}));
}

TEST(StoredOps, PutFieldsConvertsAndChecksTheCount) {
    const component_registry types = registry();
    auto world = World::make();
    const Entity e = world->create();
    const stored_ops& ledger = ops_of(types, "ledger");
    const std::vector<field_value> values{std::int64_t{1}, 7.9, std::uint64_t{42},
                                          std::int64_t{-3}};
    ledger.put_fields(*world, e, values);
    EXPECT_EQ(world->get<Ledger>(e), (Ledger{true, 7, 42, -3.0}));

    const std::vector<field_value> three{true, std::int64_t{1}, std::uint64_t{2}};
    EXPECT_THAT(message_of([&] { ledger.put_fields(*world, e, three); }),
                HasSubstr("3 field values for 4 fields"));
    EXPECT_EQ(world->get<Ledger>(e), (Ledger{true, 7, 42, -3.0})) << "unchanged";

    EXPECT_THAT(message_of([&] { ops_of(types, "diary").put_fields(*world, e, values); }),
                HasSubstr("string type"));
    EXPECT_EQ(world->try_get<Diary>(e), nullptr);
}

TEST(StoredOps, ReplicatedStringTypeKeepsItsText) {
    const component_registry types = registry();
    auto world = World::make();
    const Entity e = world->create();
    const stored_ops& tag = ops_of(types, "tag");
    tag.put(*world, e, {}, "hello");
    EXPECT_EQ(world->get<Tag>(e).text, "hello");
    std::vector<std::uint32_t> indices;
    std::vector<std::byte> values;
    std::vector<std::string> texts;
    tag.capture(*world, indices, values, texts);
    EXPECT_THAT(indices, ElementsAre(e.index()));
    EXPECT_THAT(texts, ElementsAre("hello"));
}

}  // namespace stored_test
