#include "ecsnet/ecs/type_info.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string_view>
#include <type_traits>

namespace game {
struct Position {
    float x;
    float y;
};
struct Velocity {
    float dx;
    float dy;
};
template <typename T>
struct Box {
    T value;
};
}  // namespace game

namespace type_info_test {

using ecsnet::ecs::type_hash_v;
using ecsnet::ecs::type_info;
using ecsnet::ecs::type_name_v;

// Everything is available at compile time.
static_assert(type_hash_v<game::Position> != 0);
static_assert(type_hash_v<game::Position> != type_hash_v<game::Velocity>);
static_assert(type_name_v<game::Position> == "game::Position");
static_assert(type_hash_v<const game::Position&> == type_hash_v<game::Position>);

TEST(TypeInfo, NamesAStructInANamespace) {
    EXPECT_EQ(type_name_v<game::Position>, "game::Position");
    EXPECT_EQ(type_name_v<game::Velocity>, "game::Velocity");
}

TEST(TypeInfo, NamesFundamentalTypes) {
    EXPECT_EQ(type_name_v<int>, "int");
    EXPECT_EQ(type_name_v<double>, "double");
}

TEST(TypeInfo, NamesTemplateTypes) {
    EXPECT_EQ(type_name_v<game::Box<int>>, "game::Box<int>");
    EXPECT_EQ(type_name_v<game::Box<game::Position>>, "game::Box<game::Position>");
}

TEST(TypeInfo, HashesAreDistinct) {
    const std::array<std::uint64_t, 6> hashes{
        type_hash_v<game::Position>,
        type_hash_v<game::Velocity>,
        type_hash_v<game::Box<int>>,
        type_hash_v<game::Box<float>>,
        type_hash_v<int>,
        type_hash_v<unsigned>,
    };
    for (std::size_t i = 0; i < hashes.size(); ++i) {
        for (std::size_t j = i + 1; j < hashes.size(); ++j) {
            EXPECT_NE(hashes[i], hashes[j]) << "types " << i << " and " << j << " collide";
        }
    }
}

TEST(TypeInfo, HashIsFnv1aOfTheName) {
    // The hash is part of the protocol: pin it to FNV-1a of the name.
    EXPECT_EQ(ecsnet::ecs::detail::fnv1a(""), 0xcbf29ce484222325ULL);
    EXPECT_EQ(ecsnet::ecs::detail::fnv1a("a"), 0xaf63dc4c8601ec8cULL);
    EXPECT_EQ(type_hash_v<game::Position>, ecsnet::ecs::detail::fnv1a("game::Position"));
}

TEST(TypeInfo, HashIsUsableAsAConstantExpression) {
    constexpr std::uint64_t hash = type_hash_v<game::Velocity>;
    std::array<int, (hash % 7) + 1> sized{};  // only compiles when hash is a constant
    EXPECT_EQ(sized.size(), (type_hash_v<game::Velocity> % 7) + 1);
}

TEST(TypeInfo, StripsCvAndReferences) {
    EXPECT_EQ(type_name_v<const game::Position>, "game::Position");
    EXPECT_EQ(type_name_v<game::Position&>, "game::Position");
    EXPECT_EQ(type_name_v<const volatile game::Position&&>, "game::Position");
    EXPECT_EQ(type_hash_v<const int&>, type_hash_v<int>);
    EXPECT_TRUE((std::is_same_v<type_info<const game::Velocity&>::type, game::Velocity>));
}

}  // namespace type_info_test
