#include "ecsnet/protocol/schema.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ecsnet/protocol/messages.hpp"
#include "test_types.hpp"

namespace schema_test {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
using ::testing::HasSubstr;

proto::schema test_schema() { return ecsnet::testing::model_types().types(); }

// The schema's types, to be edited into lies.
std::vector<proto::component_info> types_of(const proto::schema& s) {
    return {s.types().begin(), s.types().end()};
}

std::string refusal(std::vector<proto::component_info> types) {
    std::string why;
    EXPECT_FALSE(proto::schema::make(std::move(types), &why).has_value());
    EXPECT_FALSE(why.empty());
    return why;
}

TEST(Schema, TheRegistrysTypesAreAValidSchema) {
    const proto::schema s = test_schema();
    ASSERT_EQ(s.size(), 6U);
    EXPECT_EQ(s.find(0U)->name, "owner");
    EXPECT_EQ(s.find("spot")->id, 1U);
    EXPECT_EQ(s.find("tag")->id, 5U);
    EXPECT_EQ(s.find("nothing"), nullptr);
    EXPECT_EQ(s.find(6U), nullptr);
    EXPECT_TRUE(proto::schema::make(types_of(s)).has_value());
}

TEST(Schema, RefusesWhatAHostilePeerCouldLieAbout) {
    const auto base = types_of(test_schema());
    auto t = base;
    t[2].id = 7;
    EXPECT_THAT(refusal(t), HasSubstr("wire id 7"));
    t = base;
    t[2].name = "spot";
    EXPECT_THAT(refusal(t), HasSubstr("repeats the name 'spot'"));
    t = base;
    t[1].name = "bad name\n";
    EXPECT_THAT(refusal(t), HasSubstr("invalid name"));
    t = base;
    t[1].name = std::string(65, 'a');
    EXPECT_THAT(refusal(t), HasSubstr("invalid name"));
    t = base;
    t[1].written_by = static_cast<proto::writer>(9);
    EXPECT_THAT(refusal(t), HasSubstr("unknown writer"));
    t = base;
    t[5].fields = t[1].fields;  // a string type with fields
    EXPECT_THAT(refusal(t), HasSubstr("string type"));
    t = base;
    t[5].max_bytes = proto::max_string_bytes + 1;
    EXPECT_THAT(refusal(t), HasSubstr("string type"));
    t = base;
    t[2].fields.clear();
    EXPECT_THAT(refusal(t), HasSubstr("has 0 fields"));
    t = base;
    t[2].fields.resize(proto::max_fields + 1, t[2].fields[0]);
    EXPECT_THAT(refusal(t), HasSubstr("fields"));
    t = base;
    t[2].fields[1].name = t[2].fields[0].name;
    EXPECT_THAT(refusal(t), HasSubstr("repeated field name"));
    t = base;
    t[2].fields[0].type = static_cast<proto::field_type>(13);
    EXPECT_THAT(refusal(t), HasSubstr("unknown type id 13"));
    t = base;
    t[2].fields[0].type = static_cast<proto::field_type>(0);
    EXPECT_THAT(refusal(t), HasSubstr("unknown type id 0"));
}

TEST(Schema, RefusesFieldWidthsThatDoNotMatchTheirType) {
    const auto base = types_of(test_schema());
    auto t = base;
    t[2].fields[2].bits = 40;  // a uint16 said to take 40 bits: a field beyond the value
    EXPECT_THAT(refusal(t), HasSubstr("in 40 bits"));
    t = base;
    t[2].fields[3].bits = 8;  // an int64 in 8 bits: values shorter than they are
    EXPECT_THAT(refusal(t), HasSubstr("in 8 bits"));
    t = base;
    t[1].fields[0].bits = 33;  // quantized: 262144 steps take 19 bits
    EXPECT_THAT(refusal(t), HasSubstr("take 19 bits, not 33"));
    t = base;
    t[1].fields[0].quantized.step = -1;
    EXPECT_THAT(refusal(t), HasSubstr("invalid quantization"));
    t = base;
    t[1].fields[0].quantized.max = std::numeric_limits<double>::quiet_NaN();
    EXPECT_THAT(refusal(t), HasSubstr("invalid quantization"));
    t = base;
    t[1].fields[0].quantized = {0, 1e12, 1e-3};  // 10^15 steps
    EXPECT_THAT(refusal(t), HasSubstr("invalid quantization"));
    t = base;
    t[2].fields[1].quantized = {0, 10, 1};  // an int8 cannot be quantized
    EXPECT_THAT(refusal(t), HasSubstr("invalid quantization"));
}

TEST(Schema, RefusesMoreThan64Types) {
    std::vector<proto::component_info> t;
    for (std::uint16_t id = 0; id < 65; ++id) {
        proto::component_info info;
        info.id = id;
        info.name = "t" + std::to_string(id);
        info.is_string = true;
        info.max_bytes = 8;
        t.push_back(info);
    }
    EXPECT_THAT(refusal(t), HasSubstr("more than 64"));
    t.pop_back();
    EXPECT_TRUE(proto::schema::make(t).has_value());
}

TEST(Schema, CrossesTheWireInWelcomeUnchanged) {
    proto::welcome w{3, proto::protocol_version, 30.0F, 9, 30, {}, {}, test_schema()};
    const proto::frame f = proto::encode(proto::server_control{w});
    const auto* root = proto::verify_server_frame(*f);
    ASSERT_NE(root, nullptr);
    std::string why;
    const auto back = proto::decode_server_control(*root, &why);
    ASSERT_TRUE(back.has_value()) << why;
    EXPECT_EQ(std::get<proto::welcome>(*back).components, test_schema());
}

// A Welcome whose schema says what the test wants, built by hand.
std::string decode_lying_welcome(std::uint8_t field_type, std::uint8_t bits, double step,
                                 std::uint8_t writer = 1) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto field = wire::CreateField(fbb, fbb.CreateString("x"),
                                         static_cast<wire::FieldType>(field_type), bits, 0, 10,
                                         step);
    const auto fields = fbb.CreateVector(&field, 1);
    const auto owner_field = wire::CreateField(fbb, fbb.CreateString("client"),
                                               wire::FieldType::UInt, 32);
    const auto owner_fields = fbb.CreateVector(&owner_field, 1);
    const std::vector<flatbuffers::Offset<wire::ComponentType>> types{
        wire::CreateComponentType(fbb, 0, fbb.CreateString("owner"), wire::Writer::Server, false,
                                  0, owner_fields),
        wire::CreateComponentType(fbb, 1, fbb.CreateString("thing"),
                                  static_cast<wire::Writer>(writer), false, 0, fields)};
    const auto welcome = wire::CreateWelcome(fbb, 1, proto::protocol_version, 30.0F, 0, 30, 0, 0,
                                             fbb.CreateVector(types));
    const proto::frame f = proto::finish_frame(
        fbb, wire::CreateServerMessage(fbb, wire::ServerBody::Welcome, welcome.Union()));
    const auto* root = proto::verify_server_frame(*f);
    EXPECT_NE(root, nullptr);
    std::string why;
    const auto control = proto::decode_server_control(*root, &why);
    EXPECT_EQ(control.has_value(), why.empty());
    return why;
}

TEST(Schema, AWelcomeWhoseSchemaLiesIsRefusedWithAReason) {
    EXPECT_EQ(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Float), 32, 0), "");
    EXPECT_THAT(decode_lying_welcome(99, 32, 0), HasSubstr("unknown type id 99"));
    EXPECT_THAT(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Float), 200, 0),
                HasSubstr("in 200 bits"));
    EXPECT_THAT(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Int), 7, 1),
                HasSubstr("invalid quantization"));
    EXPECT_THAT(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Float), 32, 0, 5),
                HasSubstr("unknown writer 5"));
    EXPECT_THAT(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Float), 32, 0),
                ::testing::IsEmpty());
    // 10 / 0.5 = 20 steps: 5 bits, and nothing else.
    EXPECT_EQ(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Float), 5, 0.5), "");
    EXPECT_THAT(decode_lying_welcome(static_cast<std::uint8_t>(wire::FieldType::Float), 6, 0.5),
                HasSubstr("take 5 bits, not 6"));
}

TEST(Bits, WriteAndReadBackAcrossByteBoundaries) {
    std::vector<std::byte> buffer(16);
    proto::bit_writer writer{buffer};
    const std::vector<std::pair<std::uint64_t, unsigned>> values{
        {1, 1}, {0x5A, 7}, {0x7FFFF, 19}, {0, 3}, {0xDEADBEEFCAFEF00D, 64}, {0x3, 2}, {0xAB, 8}};
    for (const auto& [v, bits] : values) {
        writer.write(v, bits);
    }
    EXPECT_EQ(writer.bit_position(), 104U);
    proto::bit_reader reader{buffer};
    for (const auto& [v, bits] : values) {
        EXPECT_EQ(reader.read(bits), v) << bits << " bits";
    }
}

TEST(Bits, WriteMasksValuesToTheirWidth) {
    std::vector<std::byte> buffer(2);
    proto::bit_writer writer{buffer};
    writer.write(0xFFFF, 3);  // only 3 bits land
    EXPECT_EQ(buffer[0], std::byte{0x07});
    EXPECT_EQ(buffer[1], std::byte{0x00});
}

TEST(Bits, ColumnValuesPackAndUnpackByPosition) {
    const proto::schema s = test_schema();
    const proto::component_info& spot = *s.find("spot");
    std::vector<std::vector<std::byte>> values;
    for (int i = 0; i < 5; ++i) {
        const auto packed = proto::pack(ecsnet::testing::Spot{static_cast<float>(i) * 3.25F,
                                                           4000.0F - static_cast<float>(i)});
        values.emplace_back(packed.begin(), packed.end());
    }
    std::vector<std::byte> column(proto::column_bytes(spot, values.size()));
    EXPECT_EQ(column.size(), (5U * 38 + 7) / 8);  // 24 bytes, not 5 * 5
    for (std::size_t i = 0; i < values.size(); ++i) {
        proto::pack_value(spot, values[i], column, i);
    }
    for (std::size_t i = 0; i < values.size(); ++i) {
        std::vector<std::byte> out(spot.value_bytes());
        proto::unpack_value(spot, column, i, out);
        EXPECT_EQ(out, values[i]) << i;
    }
}

TEST(FieldValues, MakeValueAndReadFieldRoundTrip) {
    const proto::schema s = test_schema();
    const proto::component_info& mixed = *s.find("mixed");
    const std::vector<proto::field_value> fields{true, std::int64_t{-7}, std::uint64_t{65535},
                                                 std::int64_t{-5'000'000'000}, 0.125};
    const auto value = proto::make_value(mixed, fields);
    ASSERT_TRUE(value.has_value());
    const auto typed = ecsnet::protocol::unpack<ecsnet::testing::Mixed>(value->data());
    EXPECT_EQ(typed, (ecsnet::testing::Mixed{true, -7, 65535, -5'000'000'000, 0.125}));
    for (std::size_t i = 0; i < fields.size(); ++i) {
        EXPECT_EQ(proto::read_field(mixed, *value, i), fields[i]) << i;
    }
    // Quantized: read back as the dequantized double.
    const proto::component_info& spot = *s.find("spot");
    const auto q = proto::make_value(spot, std::vector<proto::field_value>{1.5, std::int64_t{4096}});
    ASSERT_TRUE(q.has_value());
    EXPECT_EQ(proto::read_field(spot, *q, 0), proto::field_value{1.5});
    EXPECT_EQ(proto::read_field(spot, *q, 1), proto::field_value{4096.0});
}

TEST(FieldValues, MakeValueRefusesWhatDoesNotFitWithTheFieldsName) {
    const proto::schema s = test_schema();
    const proto::component_info& mixed = *s.find("mixed");
    std::string why;
    EXPECT_FALSE(proto::make_value(mixed, std::vector<proto::field_value>{true}, &why));
    EXPECT_THAT(why, HasSubstr("takes 5 values (flag, small, medium, big, real), not 1"));
    EXPECT_FALSE(proto::make_value(
        mixed,
        std::vector<proto::field_value>{true, std::int64_t{300}, std::uint64_t{1}, std::int64_t{1},
                                        1.0},
        &why));
    EXPECT_THAT(why, HasSubstr("mixed.small, a int8"));
    EXPECT_FALSE(proto::make_value(
        mixed,
        std::vector<proto::field_value>{true, std::int64_t{1}, std::int64_t{-1}, std::int64_t{1},
                                        1.0},
        &why));
    EXPECT_THAT(why, HasSubstr("mixed.medium"));
    EXPECT_FALSE(proto::make_value(
        mixed,
        std::vector<proto::field_value>{true, std::int64_t{1}, std::uint64_t{1}, std::int64_t{1},
                                        std::numeric_limits<double>::infinity()},
        &why));
    EXPECT_THAT(why, HasSubstr("mixed.real"));
    const proto::component_info& spot = *s.find("spot");
    EXPECT_FALSE(proto::make_value(spot, std::vector<proto::field_value>{-1.0, 0.0}, &why));
    EXPECT_THAT(why, HasSubstr("spot.x"));
    EXPECT_THAT(why, HasSubstr("quantized to the range 0 to 4096"));
}

TEST(FieldValues, ValidValueRefusesNonFiniteFloatsAndQuantizedValuesBeyondTheRange) {
    const proto::schema s = test_schema();
    const proto::component_info& gauge = *s.find("gauge");
    const auto nan = std::bit_cast<std::array<std::byte, 4>>(std::numeric_limits<float>::quiet_NaN());
    std::string why;
    EXPECT_FALSE(proto::valid_value(gauge, nan, &why));
    EXPECT_THAT(why, HasSubstr("gauge.level is not a finite number"));
    const proto::component_info& spot = *s.find("spot");
    std::vector<std::byte> beyond(spot.value_bytes());
    proto::bit_writer writer{beyond};
    writer.write(262145, 19);  // one step past 4096
    writer.write(0, 19);
    EXPECT_FALSE(proto::valid_value(spot, beyond, &why));
    EXPECT_THAT(why, HasSubstr("spot.x is beyond its quantized range"));
}

TEST(Compatibility, AddedFieldsAtTheEndAreCompatibleChangedOnesAreNot) {
    const proto::component_info expected = proto::describe<ecsnet::testing::Spot>();
    proto::component_info actual = expected;
    EXPECT_FALSE(proto::incompatibility(expected, actual).has_value());
    actual.fields.push_back(proto::field_info{"z", proto::field_type::int32, 32, {}});
    EXPECT_FALSE(proto::incompatibility(expected, actual).has_value());

    proto::component_info swapped = expected;
    std::swap(swapped.fields[0], swapped.fields[1]);
    auto problem = proto::incompatibility(expected, swapped);
    ASSERT_TRUE(problem.has_value());
    EXPECT_THAT(*problem, HasSubstr("component 'spot': field 0 is 'y' float quantized 0 to "
                                    "4096 by 0.015625 (19 bits) on the server, 'x' float"));
    EXPECT_THAT(*problem, HasSubstr("fields may only be added at the end"));

    proto::component_info retyped = expected;
    retyped.fields[1].quantized.step = 1.0 / 32;
    retyped.fields[1].bits = 18;
    EXPECT_THAT(proto::incompatibility(expected, retyped).value_or(""), HasSubstr("field 1"));

    proto::component_info fewer = expected;
    fewer.fields.pop_back();
    EXPECT_THAT(proto::incompatibility(expected, fewer).value_or(""),
                HasSubstr("component 'spot': 1 fields on the server, 2 in this client"));

    const proto::component_info text = proto::describe<ecsnet::testing::Tag>();
    proto::component_info named_like_text = expected;
    named_like_text.name = "tag";
    EXPECT_THAT(proto::incompatibility(text, named_like_text).value_or(""),
                HasSubstr("component 'tag': a fixed-size type on the server, a string type in "
                          "this client"));

    // Who writes it, whom it goes to and a string's limit change no value's bytes.
    proto::component_info loosened = expected;
    loosened.written_by = proto::writer::any;
    loosened.owner_only = !expected.owner_only;
    EXPECT_FALSE(proto::incompatibility(expected, loosened).has_value());
    proto::component_info longer = text;
    longer.max_bytes = text.max_bytes * 2;
    EXPECT_FALSE(proto::incompatibility(text, longer).has_value());
}

// docs/PROTOCOL.md, "Values": q = round((v - min) / step), halves away from zero; a compiled
// sender clamps q to [0, q_max] (NaN to 0), the generic path (make_value, the stock client's)
// refuses a q outside it instead.
TEST(Quantizing, RoundsHalvesAwayCompiledSendersClampTheGenericPathRefuses) {
    using ecsnet::testing::Spot;
    const proto::component_info spot = proto::describe<Spot>();  // 0 to 4096 by 1/64, 19 bits
    const double step = ecsnet::testing::spot_step;
    const std::uint64_t q_max = 262144;
    const auto compiled_q = [&](float x) {
        const auto bytes = proto::pack(Spot{x, 0.0F});
        return proto::bit_reader{bytes}.read(19);
    };
    const auto generic_q = [&](double x) -> std::optional<std::uint64_t> {
        const std::vector<proto::field_value> fields{x, 0.0};
        const auto bytes = proto::make_value(spot, fields);
        if (!bytes) {
            return std::nullopt;
        }
        return proto::bit_reader{*bytes}.read(19);
    };
    const struct {
        float x;
        std::uint64_t compiled;
        std::optional<std::uint64_t> generic;
    } cases[] = {
        {static_cast<float>(2.5 * step), 3, 3},  // a tie rounds away from zero
        {static_cast<float>(2.4 * step), 2, 2},
        {static_cast<float>(-0.4 * step), 0, 0},             // under half a step: the edge
        {static_cast<float>(-0.5 * step), 0, std::nullopt},  // a tie below min rounds to -1
        {-3.0F, 0, std::nullopt},
        {static_cast<float>(4096 + 0.4 * step), q_max, q_max},
        {static_cast<float>(4096 + 0.5 * step), q_max, std::nullopt},
        {5000.0F, q_max, std::nullopt},
        {std::numeric_limits<float>::quiet_NaN(), 0, std::nullopt},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(compiled_q(c.x), c.compiled) << c.x;
        EXPECT_EQ(generic_q(static_cast<double>(c.x)), c.generic) << c.x;
    }

    // A range under half a step: q_max is 0, the field takes 1 bit and always carries min.
    proto::component_info tiny;
    tiny.name = "tiny";
    tiny.fields.push_back(proto::field_info{"v", proto::field_type::float32, 1, {1.0, 1.25, 1.0}});
    const auto types = proto::schema::make({tiny});
    ASSERT_TRUE(types.has_value());
    const std::vector<proto::field_value> inside{1.2};
    const auto bytes = proto::make_value(*types->find("tiny"), inside);
    ASSERT_TRUE(bytes.has_value());
    EXPECT_EQ(std::get<double>(proto::read_field(*types->find("tiny"), *bytes, 0)), 1.0);
}

// schema::checked: the typed access's check, its verdict cached per entry, thrown every time.
TEST(Compatibility, CheckedComparesACompiledLayoutOnceAndThrowsOnEveryMismatch) {
    const proto::component_info& compiled = proto::compiled_layout<ecsnet::testing::Spot>();
    EXPECT_EQ(&compiled, &proto::compiled_layout<ecsnet::testing::Spot>()) << "one per type";
    proto::component_info spot = compiled;
    proto::component_info other = proto::describe<ecsnet::testing::Tag>();
    other.id = 1;
    const auto same = proto::schema::make({spot, other});
    ASSERT_TRUE(same.has_value());
    EXPECT_EQ(same->checked(compiled), same->find("spot"));
    EXPECT_EQ(same->checked(compiled), same->find("spot"));
    const proto::schema copy = *same;
    EXPECT_EQ(copy.checked(compiled), copy.find("spot")) << "a copy's entries are its own";

    std::swap(spot.fields[0], spot.fields[1]);
    const auto swapped = proto::schema::make({spot});
    ASSERT_TRUE(swapped.has_value());
    for (int attempt = 0; attempt < 2; ++attempt) {
        try {
            (void)swapped->checked(compiled);
            ADD_FAILURE() << "a reordered entry passed, attempt " << attempt;
        } catch (const proto::schema_mismatch& e) {
            EXPECT_THAT(e.what(), HasSubstr("the server's schema does not match this client: "
                                            "component 'spot': field 0 is 'y' float"));
        }
    }
    const auto none = proto::schema::make({});
    ASSERT_TRUE(none.has_value());
    EXPECT_EQ(none->checked(compiled), nullptr) << "a type the server lacks is no mismatch";
}

}  // namespace schema_test
