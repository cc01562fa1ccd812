#include "ecsnet/protocol/registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/protocol/checksum.hpp"
#include "test_types.hpp"

namespace registry_test {

namespace proto = ecsnet::protocol;
namespace ecs = ecsnet::ecs;
using ::testing::HasSubstr;
using namespace ecsnet::testing;

}  // namespace registry_test

// A second type under a name that is taken.
struct Impostor {
    float level{};
};
template <>
struct ecsnet::protocol::replicated<Impostor> : replicate<ecsnet::testing::wire::Gauge, "gauge"> {};

namespace registry_test {

TEST(Registry, OwnerComesFirstThenTheGamesTypesInOrder) {
    proto::component_registry types;
    ASSERT_EQ(types.size(), 1U);
    EXPECT_EQ(types.info(0).name, "owner");
    EXPECT_EQ(types.info(0).written_by, proto::writer::server);
    EXPECT_EQ(types.add<Spot>(), 1U);
    EXPECT_EQ(types.add<Tag>(), 2U);
    EXPECT_EQ(types.id_of("tag"), 2U);
    EXPECT_EQ(types.id_of<Spot>(), 1U);
    EXPECT_FALSE(types.id_of("mixed").has_value());
    EXPECT_EQ(types.types().find("spot")->fields.size(), 2U);
}

TEST(Registry, RefusesATypeOrANameTwice) {
    proto::component_registry types;
    types.add<Gauge>();
    try {
        types.add<Gauge>();
        ADD_FAILURE() << "added twice";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("is registered already"));
    }
    try {
        types.add<Impostor>();
        ADD_FAILURE() << "a second 'gauge'";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("a component named 'gauge' is registered already"));
    }
    EXPECT_EQ(types.size(), 2U);
}

TEST(Registry, OperationsWorkOnAnyRegisteredType) {
    const proto::component_registry types = model_types();
    auto world = ecs::World::make();
    const ecs::Entity a = world->create();
    const ecs::Entity b = world->create();
    world->emplace<Spot>(a, 1.0F, 2.0F);
    world->emplace<Tag>(b, "bee");
    const auto spot = *types.id_of<Spot>();
    const auto label = *types.id_of<Tag>();

    EXPECT_TRUE(types.ops(spot).contains(*world, a));
    EXPECT_FALSE(types.ops(spot).contains(*world, b));
    EXPECT_EQ(types.ops(spot).entities(*world).size(), 1U);
    EXPECT_TRUE(types.ops(*types.id_of<Mixed>()).entities(*world).empty());  // no storage yet

    std::array<std::byte, 5> packed{};
    types.ops(spot).pack(*world, a, packed.data());
    EXPECT_EQ(packed, proto::pack(Spot{1.0F, 2.0F}));
    EXPECT_EQ(types.ops(label).text(*world, b), "bee");

    proto::component_value v{"spot", {}, {}};
    const auto bytes = proto::pack(Spot{8.0F, 9.0F});
    v.bytes.assign(bytes.begin(), bytes.end());
    EXPECT_TRUE(types.ops(spot).accepts(v, nullptr));
    types.ops(spot).assign(*world, b, v);
    EXPECT_EQ(world->get<Spot>(b), (Spot{8.0F, 9.0F}));
    types.ops(label).assign(*world, a, proto::component_value{"tag", {}, "ay"});
    EXPECT_EQ(world->get<Tag>(a).text, "ay");
    types.ops(spot).remove(*world, b);
    EXPECT_FALSE(world->has<Spot>(b));
}

TEST(Registry, AcceptsAsksTheTypesOwnCheck) {
    const proto::component_registry types = model_types();
    const auto gauge = *types.id_of<Gauge>();
    proto::component_value v{"gauge", {}, {}};
    const auto negative = proto::pack(Gauge{-1.0F});
    v.bytes.assign(negative.begin(), negative.end());
    std::string why;
    EXPECT_FALSE(types.ops(gauge).accepts(v, &why));
    EXPECT_THAT(why, HasSubstr("gauge value is not valid"));
}

TEST(Registry, EncodeWritesOneBitPackedColumn) {
    const proto::component_registry types = model_types();
    auto world = ecs::World::make();
    std::vector<ecs::Entity> entities;
    for (int i = 0; i < 3; ++i) {
        entities.push_back(world->create());
        world->emplace<Spot>(entities.back(), static_cast<float>(i), 100.0F);
    }
    flatbuffers::FlatBufferBuilder fbb;
    const auto offset = types.ops(*types.id_of<Spot>()).encode(fbb, *world, entities);
    fbb.Finish(flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>(offset));
    const auto* column = flatbuffers::GetRoot<flatbuffers::Vector<std::uint8_t>>(fbb.GetBufferPointer());
    ASSERT_EQ(column->size(), (3U * 38 + 7) / 8);
    const proto::component_info& info = *types.types().find("spot");
    const auto bytes = std::as_bytes(std::span{column->data(), column->size()});
    for (std::size_t i = 0; i < entities.size(); ++i) {
        std::array<std::byte, 5> value{};
        proto::unpack_value(info, bytes, i, value);
        EXPECT_EQ(proto::unpack<Spot>(value.data()), (Spot{static_cast<float>(i), 100.0F}));
    }
}

// 400 entities with a Spot, a Gauge and a Tag, and a column of 150 of them out of order (two
// blocks of lookups and a part), scattered over the storages as a view's entities are.
struct scattered_column {
    decltype(ecs::World::make()) world = ecs::World::make();
    std::vector<ecs::Entity> column;

    scattered_column() {
        std::vector<ecs::Entity> all;
        for (int i = 0; i < 400; ++i) {
            all.push_back(world->create());
            world->emplace<Spot>(all.back(), static_cast<float>(i), static_cast<float>(400 - i));
            world->emplace<Gauge>(all.back(), static_cast<float>(i) + 0.5F);
            world->emplace<Tag>(all.back(), "t" + std::to_string(i * 7));
        }
        for (std::size_t i = 0; i < 150; ++i) {
            column.push_back(all[(i * 37 + 11) % all.size()]);
        }
    }
};

// The values of a view's column are looked up a block at a time (their places first, then
// the values), and each must still land in its entity's slot, across blocks and in either
// packing.
TEST(Registry, EncodeWritesEachEntitysValueForAColumnInAnyOrder) {
    const proto::component_registry types = model_types();
    const scattered_column scattered;
    const auto& world = scattered.world;
    const auto& column = scattered.column;
    const auto decoded = [&](std::uint16_t id, std::size_t i) {
        flatbuffers::FlatBufferBuilder fbb;
        fbb.Finish(flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>>(
            types.ops(id).encode(fbb, *world, column)));
        const auto* bytes =
            flatbuffers::GetRoot<flatbuffers::Vector<std::uint8_t>>(fbb.GetBufferPointer());
        std::array<std::byte, 8> value{};
        proto::unpack_value(types.info(id), std::as_bytes(std::span{bytes->data(), bytes->size()}),
                            i, value);
        return value;
    };
    const auto spot = *types.id_of<Spot>();
    const auto gauge = *types.id_of<Gauge>();
    for (std::size_t i = 0; i < column.size(); ++i) {
        EXPECT_EQ(proto::unpack<Spot>(decoded(spot, i).data()), world->get<Spot>(column[i]))
            << "bit-packed, value " << i;
        EXPECT_EQ(proto::unpack<Gauge>(decoded(gauge, i).data()), world->get<Gauge>(column[i]))
            << "whole bytes, value " << i;
    }
}

// A client's checksum sums the terms of the entities it holds, type by type: for a column
// scattered over the storage, across blocks, each entity's own term, strings included.
TEST(Registry, ChecksumOfAColumnSumsEachEntitysOwnTerm) {
    const proto::component_registry types = model_types();
    const scattered_column scattered;
    const auto& world = scattered.world;
    const auto& column = scattered.column;
    const auto expected = [&](std::uint32_t id, auto bytes_of) {
        std::uint64_t sum = 0;
        for (const ecs::Entity e : column) {
            sum += proto::checksum::component_term(id, e.index(), e.version(), bytes_of(e));
        }
        return sum;
    };
    const auto spot = *types.id_of<Spot>();
    const auto gauge = *types.id_of<Gauge>();
    const auto tag = *types.id_of<Tag>();
    std::array<std::byte, 8> value{};
    EXPECT_EQ(types.ops(spot).checksum_of(*world, spot, column), expected(spot, [&](ecs::Entity e) {
                  const auto packed = proto::pack(world->get<Spot>(e));
                  std::copy(packed.begin(), packed.end(), value.begin());
                  return std::span<const std::byte>{value.data(), packed.size()};
              }));
    EXPECT_EQ(types.ops(gauge).checksum_of(*world, gauge, column),
              expected(gauge, [&](ecs::Entity e) {
                  const auto packed = proto::pack(world->get<Gauge>(e));
                  std::copy(packed.begin(), packed.end(), value.begin());
                  return std::span<const std::byte>{value.data(), packed.size()};
              }));
    EXPECT_EQ(types.ops(tag).checksum_of(*world, tag, column), expected(tag, [&](ecs::Entity e) {
                  return std::as_bytes(std::span{world->get<Tag>(e).text});
              }));
}

}  // namespace registry_test
