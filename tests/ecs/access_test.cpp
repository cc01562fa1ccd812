#include "ecsnet/ecs/access.hpp"

#include <gtest/gtest.h>

namespace game {
struct Position {
    float x;
    float y;
};
struct Velocity {
    float dx;
    float dy;
};
struct Health {
    int points;
};
}  // namespace game

namespace access_test {

using ecsnet::ecs::component_access;
using ecsnet::ecs::type_hash_v;

TEST(ComponentAccess, EmptyAllowsNothing) {
    const component_access access;
    EXPECT_FALSE(access.can_read<game::Position>());
    EXPECT_FALSE(access.can_write<game::Position>());
    EXPECT_FALSE(access.allows(type_hash_v<game::Position>, false));
    EXPECT_EQ(access.describe(), "reads {} writes {}");
}

TEST(ComponentAccess, ReadsAllowReadingOnly) {
    component_access access;
    access.reads<game::Velocity>();
    EXPECT_TRUE(access.can_read<game::Velocity>());
    EXPECT_FALSE(access.can_write<game::Velocity>());
    EXPECT_TRUE(access.allows(type_hash_v<game::Velocity>, false));
    EXPECT_FALSE(access.allows(type_hash_v<game::Velocity>, true));
    EXPECT_FALSE(access.can_read<game::Position>()) << "undeclared type";
}

TEST(ComponentAccess, WritingImpliesReading) {
    component_access access;
    access.writes<game::Position>();
    EXPECT_TRUE(access.can_write<game::Position>());
    EXPECT_TRUE(access.can_read<game::Position>());
    EXPECT_FALSE(access.can_read<game::Velocity>());
}

TEST(ComponentAccess, SeveralTypesAndChaining) {
    component_access access;
    access.reads<game::Velocity, game::Health>().writes<game::Position>();
    EXPECT_TRUE(access.can_read<game::Velocity>());
    EXPECT_TRUE(access.can_read<game::Health>());
    EXPECT_FALSE(access.can_write<game::Health>());
    EXPECT_TRUE(access.can_write<game::Position>());
}

TEST(ComponentAccess, CvAndReferencesNameTheSameType) {
    component_access access;
    access.writes<const game::Position&>();
    EXPECT_TRUE(access.can_write<game::Position>());
    EXPECT_TRUE(access.allows(type_hash_v<game::Position>, true));
}

TEST(ComponentAccess, DeclaringAWriteAfterAReadUpgradesIt) {
    component_access access;
    access.reads<game::Position>();
    access.writes<game::Position>();
    EXPECT_TRUE(access.can_write<game::Position>());
    EXPECT_EQ(access.describe(), "reads {} writes {game::Position}");
}

TEST(ComponentAccess, DeclaringAReadAfterAWriteKeepsTheWrite) {
    component_access access;
    access.writes<game::Position>();
    access.reads<game::Position>();
    EXPECT_TRUE(access.can_write<game::Position>());
    EXPECT_EQ(access.describe(), "reads {} writes {game::Position}");
}

TEST(ComponentAccess, DescribeListsReadsThenWritesInDeclarationOrder) {
    component_access access;
    access.reads<game::Velocity>().writes<game::Position>().reads<game::Health>();
    EXPECT_EQ(access.describe(), "reads {game::Velocity, game::Health} writes {game::Position}");
}

}  // namespace access_test
