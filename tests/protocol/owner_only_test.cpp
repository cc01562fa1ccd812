// Types replicated to their owner only (replicate_options::owner_only): the encoder's shared
// Delta and Snapshot leave them out, each owner gets its own values in an owner-only Delta,
// and the checksum each client receives adds its own terms.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "test_types.hpp"

namespace owner_only_test {

namespace proto = ecsnet::protocol;
namespace ecs = ecsnet::ecs;
using ::testing::HasSubstr;
using namespace ecsnet::testing;

bool apply_frame(proto::mirror& m, const proto::frame& f) {
    const auto* root = proto::verify_server_frame(*f);
    EXPECT_NE(root, nullptr);
    return root != nullptr && m.apply(*root);
}

const proto::frame* frame_for(const std::vector<proto::replication_encoder::owner_frame>& frames,
                              std::uint32_t owner) {
    for (const auto& f : frames) {
        if (f.owner == owner) {
            return &f.bytes;
        }
    }
    return nullptr;
}

class OwnerOnly : public ::testing::Test {
protected:
    OwnerOnly() {
        mine_ = world_->create();
        world_->emplace<proto::Owner>(mine_, 1U);
        world_->emplace<Secret>(mine_, 111U);
        world_->emplace<Spot>(mine_, 1.0F, 1.0F);
        theirs_ = world_->create();
        world_->emplace<proto::Owner>(theirs_, 2U);
        world_->emplace<Secret>(theirs_, 222U);
        servers_ = world_->create();
        world_->emplace<Secret>(servers_, 333U);  // no Owner: nobody sees it
        world_->discard_changes();
    }

    // Client `owner`'s mirror after a snapshot at tick 1.
    proto::mirror joined(std::uint32_t owner) {
        proto::mirror m{types_.types()};
        for (const auto& f : encoder_.encode_snapshot(*world_, 1)) {
            EXPECT_TRUE(apply_frame(m, f)) << m.error();
        }
        if (auto own = encoder_.encode_owner_only_snapshot(*world_, owner, 1)) {
            EXPECT_TRUE(apply_frame(m, *own)) << m.error();
        }
        return m;
    }

    // What the client of `owner` is sent as the checksum of the whole world.
    std::uint64_t checksum_for(std::uint32_t owner) {
        const auto shared = proto::checksum::of_world(*world_, types_, {});
        const auto terms = proto::checksum::owner_only_terms(*world_, types_, {});
        const auto own = terms.find(owner);
        return shared.hash + (own == terms.end() ? 0 : own->second);
    }

    proto::component_registry types_ = model_types();
    std::shared_ptr<ecs::World> world_ = ecs::World::make();
    proto::replication_encoder encoder_{types_};
    ecs::Entity mine_;
    ecs::Entity theirs_;
    ecs::Entity servers_;
};

TEST_F(OwnerOnly, ASnapshotCarriesEachOwnersValuesToItAlone) {
    const proto::mirror one = joined(1);
    EXPECT_EQ(one.get<Secret>(mine_), (Secret{111}));
    EXPECT_FALSE(one.get<Secret>(theirs_).has_value());
    EXPECT_FALSE(one.get<Secret>(servers_).has_value());
    EXPECT_EQ(one.get<Spot>(mine_), (Spot{1.0F, 1.0F}));
    const proto::mirror two = joined(2);
    EXPECT_EQ(two.get<Secret>(theirs_), (Secret{222}));
    EXPECT_FALSE(two.get<Secret>(mine_).has_value());
    const proto::mirror nobody = joined(7);
    EXPECT_FALSE(nobody.get<Secret>(mine_).has_value());
    EXPECT_EQ(nobody.size(), 3U);

    EXPECT_EQ(one.checksum(), checksum_for(1));
    EXPECT_EQ(two.checksum(), checksum_for(2));
    EXPECT_EQ(nobody.checksum(), checksum_for(7));
    EXPECT_NE(checksum_for(1), checksum_for(2));
}

TEST_F(OwnerOnly, DeltasSendChangesToTheirOwnerOnly) {
    proto::mirror one = joined(1);
    proto::mirror two = joined(2);
    world_->patch<Secret>(mine_, [](Secret& s) { s.code = 112; });
    const ecs::Entity spawned = world_->create();
    world_->emplace<proto::Owner>(spawned, 2U);
    world_->emplace<Secret>(spawned, 999U);
    world_->erase<Secret>(theirs_);
    auto changes = world_->take_changes();

    const proto::frame shared = encoder_.encode_delta(*world_, changes, 2);
    const auto owned = encoder_.encode_owner_only(*world_, changes, 2);
    ASSERT_EQ(owned.size(), 2U);
    ASSERT_TRUE(apply_frame(one, shared)) << one.error();
    EXPECT_EQ(one.get<Secret>(mine_), (Secret{111}));  // the shared delta does not carry it
    ASSERT_TRUE(apply_frame(one, *frame_for(owned, 1))) << one.error();
    EXPECT_EQ(one.get<Secret>(mine_), (Secret{112}));
    EXPECT_FALSE(one.get<Secret>(spawned).has_value());

    ASSERT_TRUE(apply_frame(two, shared)) << two.error();
    ASSERT_TRUE(apply_frame(two, *frame_for(owned, 2))) << two.error();
    EXPECT_EQ(two.get<Secret>(spawned), (Secret{999}));
    EXPECT_FALSE(two.get<Secret>(theirs_).has_value());
    EXPECT_FALSE(two.get<Secret>(mine_).has_value());

    EXPECT_EQ(one.checksum(), checksum_for(1));
    EXPECT_EQ(two.checksum(), checksum_for(2));
}

TEST_F(OwnerOnly, NoOwnerOnlyFramesWithoutOwnerOnlyChanges) {
    world_->patch<Spot>(mine_, [](Spot& s) { s.x = 5.0F; });
    const auto changes = world_->take_changes();
    EXPECT_TRUE(encoder_.encode_owner_only(*world_, changes, 2).empty());
}

TEST_F(OwnerOnly, TheMirrorRefusesOwnerOnlyDeltasThatBreakTheRules) {
    proto::mirror one = joined(1);
    world_->patch<Secret>(mine_, [](Secret& s) { s.code = 5; });
    const auto changes = world_->take_changes();
    const auto owned = encoder_.encode_owner_only(*world_, changes, 5);  // not this tick
    ASSERT_EQ(owned.size(), 1U);
    EXPECT_FALSE(apply_frame(one, owned[0].bytes));
    EXPECT_THAT(one.error(), HasSubstr("owner-only delta for tick 5 at tick 1"));

    // A Delta flagged owner_only that carries a type every client receives.
    proto::mirror fresh = joined(1);
    flatbuffers::FlatBufferBuilder fbb;
    const std::uint32_t index = mine_.index();
    const auto at = ecsnet::wire::CreateIndexSet(fbb, 0, fbb.CreateVector(&index, 1));
    const auto bytes = proto::pack(Spot{2.0F, 2.0F});
    const auto values = fbb.CreateVector(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    const auto column = ecsnet::wire::CreateColumn(fbb, *types_.id_of<Spot>(), at, values);
    const auto delta = ecsnet::wire::CreateDelta(fbb, 1, 0, 0, fbb.CreateVector(&column, 1), 0, true);
    const proto::frame f = proto::finish_frame(
        fbb, ecsnet::wire::CreateServerMessage(fbb, ecsnet::wire::ServerBody::Delta, delta.Union()));
    EXPECT_FALSE(apply_frame(fresh, f));
    EXPECT_THAT(fresh.error(), HasSubstr("owner-only delta carries spot"));
}

}  // namespace owner_only_test
