// A game's component types evolve between releases: a client built with an older release keeps
// working when types or fields are added at the end, and detects a changed type by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "test_types.hpp"

namespace evolution_test {

namespace proto = ecsnet::protocol;
namespace ecs = ecsnet::ecs;
using ::testing::HasSubstr;
using namespace ecsnet::testing;

bool apply_frame(proto::mirror& m, const proto::frame& f) {
    const auto* root = proto::verify_server_frame(*f);
    return root != nullptr && m.apply(*root);
}

// The newer server: SpotV2 (a field added at the end) and a type the old client never heard of.
proto::component_registry newer_server() {
    proto::component_registry types;
    types.add<Gauge>();  // new: the old release registered spot first
    types.add<SpotV2>();
    return types;
}

TEST(Evolution, AnOlderClientReadsTheFieldsItKnowsAndChecksEverything) {
    const proto::component_registry types = newer_server();
    auto world = ecs::World::make();
    const ecs::Entity e = world->create();
    world->emplace<SpotV2>(e, 12.5F, 100.0F, -3);
    world->emplace<Gauge>(e, 0.5F);
    world->discard_changes();
    proto::replication_encoder encoder{types};

    // What an old client knows: Spot. It checks the server's schema, then decodes with it.
    const proto::component_info expected = proto::describe<Spot>();
    ASSERT_FALSE(proto::incompatibility(expected, *types.types().find("spot")).has_value());
    proto::mirror m{types.types()};
    for (const auto& f : encoder.encode_snapshot(*world, 1)) {
        ASSERT_TRUE(apply_frame(m, f)) << m.error();
    }
    EXPECT_EQ(m.get<Spot>(e), (Spot{12.5F, 100.0F}));
    world->patch<SpotV2>(e, [](SpotV2& s) {
        s.x = 13.0F;
        s.floor = 4;
    });
    ASSERT_TRUE(apply_frame(m, encoder.encode_delta(*world, world->take_changes(), 2))) << m.error();
    EXPECT_EQ(m.get<Spot>(e), (Spot{13.0F, 100.0F}));
    // The checksum covers the fields the old client does not know: it holds their bytes.
    EXPECT_EQ(m.checksum(), proto::checksum::of_world(*world, types));
}

TEST(Evolution, AnOlderClientsCommandsGiveAddedFieldsZero) {
    const proto::component_registry types = newer_server();
    const proto::frame f =
        proto::encode(proto::client_message{proto::spawn{1, proto::component_set{}.set(Spot{2.0F, 3.0F})}},
                      types.types());
    const proto::decoded_client decoded = proto::decode_client_frame(*f, types.types());
    ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
    const auto& spawn = std::get<proto::spawn>(*decoded.message);
    const auto value = spawn.components.get<SpotV2>();
    ASSERT_TRUE(value.has_value());
    EXPECT_EQ(value->x, 2.0F);
    EXPECT_EQ(value->y, 3.0F);
    EXPECT_EQ(value->floor, 0);
}

TEST(Evolution, AReorderedTypeIsDetectedByName) {
    proto::component_registry types;
    types.add<SpotSwapped>();
    const auto problem = proto::incompatibility(proto::describe<Spot>(), *types.types().find("spot"));
    ASSERT_TRUE(problem.has_value());
    EXPECT_THAT(*problem, HasSubstr("component 'spot': field 0 is 'y' float quantized"));
    EXPECT_THAT(*problem, HasSubstr("'x' float quantized"));
}

// Typed access checks itself: a mirror read of the reordered type, and a command carrying it,
// fail with the difference named instead of swapping x and y.
TEST(Evolution, ATypedReadOrCommandOfAReorderedTypeThrows) {
    proto::component_registry types;
    types.add<SpotSwapped>();
    auto world = ecs::World::make();
    const ecs::Entity e = world->create();
    world->emplace<SpotSwapped>(e, 1.0F, 2.0F);
    world->discard_changes();
    proto::replication_encoder encoder{types};
    proto::mirror m{types.types()};
    for (const auto& f : encoder.encode_snapshot(*world, 1)) {
        ASSERT_TRUE(apply_frame(m, f)) << m.error();
    }
    const auto read = m.get<SpotSwapped>(e);
    ASSERT_TRUE(read.has_value());
    EXPECT_EQ(read->y, 1.0F);
    EXPECT_EQ(read->x, 2.0F);
    EXPECT_THROW((void)m.get<Spot>(e), proto::schema_mismatch);
    try {
        (void)proto::encode(
            proto::client_message{proto::spawn{1, proto::component_set{}.set(Spot{})}}, m.types());
        ADD_FAILURE() << "encoded";
    } catch (const proto::schema_mismatch& ex) {
        EXPECT_THAT(ex.what(), HasSubstr("component 'spot': field 0 is 'y' float quantized"));
    }
    EXPECT_NO_THROW((void)proto::encode(
        proto::client_message{proto::spawn{1, proto::component_set{}.set(SpotSwapped{})}},
        m.types()));
}

TEST(Evolution, ACommandForATypeTheServerLacksFailsBeforeItIsSent) {
    proto::component_registry types;  // owner only
    try {
        (void)proto::encode(proto::client_message{proto::spawn{1, proto::component_set{}.set(Spot{})}},
                            types.types());
        ADD_FAILURE() << "encoded";
    } catch (const std::invalid_argument& e) {
        EXPECT_THAT(e.what(), HasSubstr("the server has no component 'spot'"));
    }
}

}  // namespace evolution_test
