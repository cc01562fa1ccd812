#include "component_arg.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ecsnet::client_cli {
namespace component_arg_test {

using protocol::component_info;
using protocol::field_info;
using protocol::field_type;
using protocol::writer;
using ::testing::HasSubstr;

field_info field(std::string name, field_type type, unsigned bits = 0) {
    field_info f;
    f.name = std::move(name);
    f.type = type;
    f.bits = static_cast<std::uint8_t>(bits != 0 ? bits : protocol::natural_bits(type));
    return f;
}

// What a server could send: no type here is one this program was compiled with.
protocol::schema server_types() {
    std::vector<component_info> types(5);
    types[0] = {0, "owner", writer::server, false, false, 0, {field("client", field_type::uint32)}};
    types[1] = {1,
                "position",
                writer::owner,
                false,
                false,
                0,
                {field("x", field_type::float32), field("y", field_type::float32)}};
    field_info quantized = field("x", field_type::float32, 12);
    quantized.quantized = {-32.0, 31.984375, 1.0 / 64};  // 4095 steps: 12 bits
    types[2] = {2,
                "beacon",
                writer::any,
                false,
                false,
                0,
                {quantized, field("team", field_type::uint8), field("lit", field_type::bool_)}};
    types[3] = {3, "health", writer::owner, false, false, 0, {field("value", field_type::int32)}};
    types[4] = {4, "name", writer::owner, false, true, 8, {}};
    std::string why;
    auto out = protocol::schema::make(std::move(types), &why);
    EXPECT_TRUE(out.has_value()) << why;
    return out.value_or(protocol::schema{});
}

std::string error_of(const component_arg& arg, std::size_t count = 1) {
    std::string why;
    EXPECT_FALSE(resolve_component(server_types(), arg, count, &why).has_value()) << arg.type;
    return why;
}

TEST(ParseComponentArg, SplitsAtTheFirstEquals) {
    std::string why;
    EXPECT_EQ(parse_component_arg("position=1,2", &why), (component_arg{"position", "1,2"}));
    EXPECT_EQ(parse_component_arg("name=a=b", &why), (component_arg{"name", "a=b"}));
    EXPECT_EQ(parse_component_arg(" name =", &why), (component_arg{"name", ""}));
    EXPECT_FALSE(parse_component_arg("position", &why).has_value());
    EXPECT_EQ(why, "'position' is not TYPE=VALUES (e.g. position=1.5,-2 or name=ship)");
    EXPECT_FALSE(parse_component_arg("=1,2", &why).has_value());
}

TEST(ResolveComponent, PacksFieldsInSchemaOrder) {
    const auto types = server_types();
    std::string why;
    const auto position = resolve_component(types, {"position", "1.5, -2"}, 1, &why);
    ASSERT_TRUE(position.has_value()) << why;
    EXPECT_EQ(position->name, "position");
    const component_info& p = *types.find("position");
    EXPECT_EQ(protocol::read_field(p, position->bytes, 0), protocol::field_value{1.5});
    EXPECT_EQ(protocol::read_field(p, position->bytes, 1), protocol::field_value{-2.0});

    const auto beacon = resolve_component(types, {"beacon", "10.25,3,true"}, 1, &why);
    ASSERT_TRUE(beacon.has_value()) << why;
    const component_info& b = *types.find("beacon");
    EXPECT_EQ(protocol::read_field(b, beacon->bytes, 0), protocol::field_value{10.25});
    EXPECT_EQ(protocol::read_field(b, beacon->bytes, 1), protocol::field_value{std::uint64_t{3}});
    EXPECT_EQ(protocol::read_field(b, beacon->bytes, 2), protocol::field_value{true});

    const auto health = resolve_component(types, {"health", "-7"}, 1, &why);
    ASSERT_TRUE(health.has_value()) << why;
    EXPECT_EQ(protocol::read_field(*types.find("health"), health->bytes, 0),
              protocol::field_value{std::int64_t{-7}});
}

TEST(ResolveComponent, StringTakesTheWholeTextWithItsNumberLeftIn) {
    std::string why;
    const auto name = resolve_component(server_types(), {"name", "a,b-{n}"}, 9, &why);
    ASSERT_TRUE(name.has_value()) << why;
    EXPECT_EQ(name->text, "a,b-{n}");
    EXPECT_TRUE(name->bytes.empty());
    EXPECT_EQ(substitute_number(name->text, 7), "a,b-7");
    // The longest one must fit: "a,b-10" is 6 bytes, "abcdef-10" is 9.
    EXPECT_TRUE(resolve_component(server_types(), {"name", "a,b-{n}"}, 10, &why).has_value());
    EXPECT_EQ(error_of({"name", "abcdef-{n}"}, 10),
              "'abcdef-10' is 9 bytes long; a name holds at most 8");
    EXPECT_EQ(error_of({"name", "\xff"}), "the name value is not valid UTF-8");
}

TEST(ResolveComponent, UnknownTypeListsTheServersTypes) {
    EXPECT_EQ(error_of({"shield", "1,2"}),
              "the server has no component 'shield'; it has: owner, position, beacon, health, "
              "name");
}

TEST(ResolveComponent, ServerOnlyTypeIsRefused) {
    EXPECT_EQ(error_of({"owner", "3"}), "component 'owner' is set by the server only");
}

TEST(ResolveComponent, ErrorsNameTheTypeItsFieldsAndTheBadValue) {
    EXPECT_EQ(error_of({"position", "1"}), "'position' takes 2 values (x, y), not 1: '1'");
    EXPECT_EQ(error_of({"position", "1,2,3"}), "'position' takes 2 values (x, y), not 3: '1,2,3'");
    EXPECT_EQ(error_of({"position", "1,abc"}),
              "'abc' is not a number: position.y is a float (position takes x, y)");
    EXPECT_EQ(error_of({"position", "1,"}),
              "'' is not a number: position.y is a float (position takes x, y)");
    EXPECT_EQ(error_of({"health", "1.5"}),
              "'1.5' is not a whole number: health.value is an int32 (health takes value)");
    EXPECT_EQ(error_of({"beacon", "1,2,maybe"}),
              "'maybe' is not true or false: beacon.lit is a bool (beacon takes x, team, lit)");
    // Ranges come from the schema (protocol::make_value).
    EXPECT_THAT(error_of({"beacon", "1,256,true"}),
                AllOf(HasSubstr("256"), HasSubstr("beacon.team"), HasSubstr("uint8")));
    EXPECT_THAT(error_of({"beacon", "40,1,true"}),
                AllOf(HasSubstr("40"), HasSubstr("beacon.x"), HasSubstr("range")));
    EXPECT_THAT(error_of({"health", "2147483648"}), HasSubstr("health.value"));
    EXPECT_THAT(error_of({"position", "1e39,0"}), HasSubstr("position.x"));
    EXPECT_THAT(error_of({"position", "nan,0"}), HasSubstr("position.x"));
}

TEST(ZeroValue, EveryFieldZeroWhenTheTypeAllowsIt) {
    const auto types = server_types();
    const auto origin = zero_value(*types.find("position"));
    ASSERT_TRUE(origin.has_value());
    EXPECT_EQ(origin->bytes, std::vector<std::byte>(8, std::byte{0}));
    // A quantized range that excludes 0 has no zero.
    component_info far = *types.find("beacon");
    far.fields[0].quantized.min = 100.0;
    EXPECT_FALSE(zero_value(far).has_value());
}

TEST(SubstituteNumber, ReplacesEveryPlaceholder) {
    EXPECT_EQ(substitute_number("ship-{n}-{n}", 12), "ship-12-12");
    EXPECT_EQ(substitute_number("plain", 3), "plain");
}

}  // namespace component_arg_test

}  // namespace ecsnet::client_cli
