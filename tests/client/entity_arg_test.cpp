#include "entity_arg.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ecsnet::client_cli {
namespace entity_arg_test {

using ::testing::HasSubstr;

std::string error_of(std::string_view text) {
    std::string why;
    EXPECT_FALSE(parse_entity(text, &why).has_value()) << text;
    return why;
}

TEST(ParseEntity, ReadsIndexAndVersion) {
    std::string why;
    EXPECT_EQ(parse_entity("5:1", &why), (ecs::Entity{5, 1}));
    EXPECT_EQ(parse_entity("0:4294967295", &why), (ecs::Entity{0, 4294967295U}));
    EXPECT_EQ(parse_entity("4294967295:2", &why), (ecs::Entity{4294967295U, 2}));
    EXPECT_EQ(parse_entity("007:01", &why), (ecs::Entity{7, 1}));
    EXPECT_TRUE(why.empty());
}

TEST(ParseEntity, MissingVersionSuggestsTheForm) {
    EXPECT_EQ(error_of("5"), "'5' has no version (write index:version, e.g. 5:1)");
    EXPECT_EQ(error_of("abc"), "'abc' has no version (write index:version, e.g. 5:1)");
    EXPECT_EQ(error_of(""), "'' has no version (write index:version, e.g. 5:1)");
}

TEST(ParseEntity, RejectsWhatIsNotDecimal) {
    EXPECT_EQ(error_of("5:x"),
              "'5:x': the version 'x' is not a decimal number (write index:version, e.g. 5:1)");
    EXPECT_THAT(error_of(":1"), HasSubstr("the index is missing"));
    EXPECT_THAT(error_of("5:"), HasSubstr("the version is missing"));
    EXPECT_THAT(error_of("-1:1"), HasSubstr("the index '-1' is not a decimal number"));
    EXPECT_THAT(error_of("+1:1"), HasSubstr("the index '+1' is not a decimal number"));
    EXPECT_THAT(error_of(" 1:1"), HasSubstr("the index ' 1' is not a decimal number"));
    EXPECT_THAT(error_of("1:1 "), HasSubstr("the version '1 ' is not a decimal number"));
    EXPECT_THAT(error_of("0x5:1"), HasSubstr("the index '0x5' is not a decimal number"));
    EXPECT_THAT(error_of("5:1:2"), HasSubstr("the version '1:2' is not a decimal number"));
}

TEST(ParseEntity, RejectsOutOfRange) {
    EXPECT_EQ(error_of("4294967296:1"),
              "'4294967296:1': the index 4294967296 is out of range (at most 4294967295) "
              "(write index:version, e.g. 5:1)");
    EXPECT_THAT(error_of("1:99999999999999999999"),
                HasSubstr("the version 99999999999999999999 is out of range"));
}

TEST(ParseEntity, RejectsVersionZero) {
    EXPECT_EQ(error_of("5:0"), "'5:0': version 0 names no entity (versions start at 1)");
}

TEST(ParseEntity, WhyIsOptional) {
    EXPECT_FALSE(parse_entity("5", nullptr).has_value());
    EXPECT_FALSE(parse_entity("5:x", nullptr).has_value());
    EXPECT_TRUE(parse_entity("5:1", nullptr).has_value());
}

}  // namespace entity_arg_test

}  // namespace ecsnet::client_cli
