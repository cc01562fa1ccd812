// command_processor applied directly to a World: ownership, version checks, quotas.
#include "ecsnet/server/commands.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/messages.hpp"

namespace {

using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::protocol::command_result;
using ecsnet::protocol::component_set;
using ecsnet::protocol::Health;
using ecsnet::protocol::Lifetime;
using ecsnet::protocol::Name;
using ecsnet::protocol::Owner;
using ecsnet::protocol::Position;
using ecsnet::protocol::Velocity;
using ecsnet::protocol::wire_id_v;
using ecsnet::server::command_limits;
using ecsnet::server::command_processor;
using ecsnet::wire::ErrorCode;
using testing::HasSubstr;

namespace protocol = ecsnet::protocol;

constexpr std::uint32_t alice = 1;
constexpr std::uint32_t bob = 2;

template <typename... T>
std::uint64_t mask_of() {
    return ((std::uint64_t{1} << wire_id_v<T>) | ...);
}

class CommandProcessor : public testing::Test {
protected:
    // Freed indices are reused at once, so that a stale handle is one destroy away.
    std::shared_ptr<World> world_ =
        World::make(ecsnet::ecs::world_options{.entities = {.min_free_indices = 0}});

    command_result spawn(command_processor& commands, std::uint32_t client,
                         component_set components = {}) {
        return commands.apply(client, protocol::spawn{++request_id_, std::move(components)});
    }
    Entity spawn_ok(command_processor& commands, std::uint32_t client,
                    component_set components = {}) {
        const command_result result = spawn(commands, client, std::move(components));
        EXPECT_TRUE(result.ok) << result.message;
        return result.entity;
    }
    command_result destroy(command_processor& commands, std::uint32_t client, Entity e) {
        return commands.apply(client, protocol::destroy{++request_id_, e});
    }

    std::uint32_t request_id_{0};
};

TEST_F(CommandProcessor, SpawnCreatesTheEntityWithItsComponentsAndOwner) {
    command_processor commands{*world_, command_limits{}};
    const command_result result = commands.apply(
        alice, protocol::spawn{41, component_set{}.set(Position{1.0F, 2.0F}).set(Name{"box"})});

    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.request_id, 41U);
    EXPECT_EQ(result.code, ErrorCode::None);
    ASSERT_TRUE(world_->valid(result.entity));
    EXPECT_EQ(world_->get<Owner>(result.entity), Owner{alice});
    EXPECT_EQ(world_->get<Position>(result.entity), (Position{1.0F, 2.0F}));
    EXPECT_EQ(world_->get<Name>(result.entity).value, "box");
    EXPECT_FALSE(world_->has<Velocity>(result.entity));
    EXPECT_EQ(commands.owned_by(alice), 1U);
    EXPECT_EQ(commands.owned_by(bob), 0U);
    EXPECT_EQ(commands.counters().applied, 1U);
    EXPECT_EQ(commands.counters().rejected, 0U);
}

TEST_F(CommandProcessor, SpawnWithoutComponentsStillSetsOwner) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, bob);
    EXPECT_EQ(world_->get<Owner>(e), Owner{bob});
}

TEST_F(CommandProcessor, DestroyOwnedEntity) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    const command_result result = destroy(commands, alice, e);
    EXPECT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.entity, e);
    EXPECT_FALSE(world_->valid(e));
    EXPECT_EQ(commands.owned_by(alice), 0U);
}

TEST_F(CommandProcessor, DestroyUnknownEntityIsRejected) {
    command_processor commands{*world_, command_limits{}};
    const command_result result = commands.apply(alice, protocol::destroy{9, Entity{42, 1}});
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.request_id, 9U);
    EXPECT_EQ(result.code, ErrorCode::UnknownEntity);
    EXPECT_EQ(result.message, "entity 42:1 does not exist");
    EXPECT_EQ(commands.counters().rejected, 1U);
}

TEST_F(CommandProcessor, DestroyTwiceIsUnknownTheSecondTime) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    ASSERT_TRUE(destroy(commands, alice, e).ok);
    EXPECT_EQ(destroy(commands, alice, e).code, ErrorCode::UnknownEntity);
}

TEST_F(CommandProcessor, StaleVersionIsRejectedAndTheNewEntitySurvives) {
    command_processor commands{*world_, command_limits{}};
    Entity fifth;
    for (int i = 0; i < 6; ++i) {
        fifth = spawn_ok(commands, alice);
    }
    ASSERT_EQ(fifth, (Entity{5, 1}));
    ASSERT_TRUE(destroy(commands, alice, fifth).ok);
    const Entity reborn = spawn_ok(commands, alice);
    ASSERT_EQ(reborn, (Entity{5, 2}));

    const command_result result = destroy(commands, alice, fifth);
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::StaleVersion);
    EXPECT_EQ(result.message, "entity 5 is at version 2, not 1 (stale handle)");
    EXPECT_EQ(result.entity, fifth);
    EXPECT_TRUE(world_->valid(reborn));
}

// StaleVersion means "another version is alive at this index", whichever is higher; an index
// with nothing alive is UnknownEntity, even for the version that lived there last.
TEST_F(CommandProcessor, VersionHigherThanTheLiveOneIsAlsoStale) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    ASSERT_EQ(e, (Entity{0, 1}));
    const command_result result = destroy(commands, alice, Entity{0, 7});
    EXPECT_EQ(result.code, ErrorCode::StaleVersion);
    EXPECT_EQ(result.message, "entity 0 is at version 1, not 7 (stale handle)");
    EXPECT_TRUE(world_->valid(e));
}

TEST_F(CommandProcessor, FreedIndexIsUnknownForEveryVersion) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    ASSERT_TRUE(destroy(commands, alice, e).ok);
    EXPECT_EQ(destroy(commands, alice, e).code, ErrorCode::UnknownEntity);
    EXPECT_EQ(destroy(commands, alice, Entity{e.index(), e.version() + 1}).code,
              ErrorCode::UnknownEntity);
}

// The checks run in a fixed order: UnknownEntity, StaleVersion, NotOwner, ComponentMissing.
TEST_F(CommandProcessor, VersionIsCheckedBeforeOwnership) {
    command_processor commands{*world_, command_limits{}};
    const Entity theirs = spawn_ok(commands, bob, component_set{}.set(Health{1}));
    EXPECT_EQ(destroy(commands, alice, Entity{theirs.index(), theirs.version() + 1}).code,
              ErrorCode::StaleVersion);
    EXPECT_EQ(
        commands.apply(alice, protocol::remove_components{1, theirs, mask_of<Position>()}).code,
        ErrorCode::NotOwner);
}

TEST_F(CommandProcessor, ForeignEntitiesCannotBeTouched) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Health{10}));

    const command_result destroyed = destroy(commands, bob, e);
    EXPECT_EQ(destroyed.code, ErrorCode::NotOwner);
    EXPECT_EQ(destroyed.message, "entity " + ecsnet::ecs::to_string(e) + " belongs to client 1");

    const command_result set =
        commands.apply(bob, protocol::set_components{1, e, component_set{}.set(Health{0})});
    EXPECT_EQ(set.code, ErrorCode::NotOwner);
    const command_result removed =
        commands.apply(bob, protocol::remove_components{2, e, mask_of<Health>()});
    EXPECT_EQ(removed.code, ErrorCode::NotOwner);

    EXPECT_TRUE(world_->valid(e));
    EXPECT_EQ(world_->get<Health>(e), Health{10});
    EXPECT_EQ(commands.owned_by(alice), 1U);
}

TEST_F(CommandProcessor, ServerOwnedEntitiesBelongToNoClient) {
    command_processor commands{*world_, command_limits{}};
    const Entity demo = world_->create();  // no Owner: the server's
    const command_result result = destroy(commands, alice, demo);
    EXPECT_EQ(result.code, ErrorCode::NotOwner);
    EXPECT_THAT(result.message, HasSubstr("belongs to the server"));
    EXPECT_TRUE(world_->valid(demo));
}

TEST_F(CommandProcessor, SetAddsAndReplacesComponents) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Position{1.0F, 1.0F}));
    const command_result result = commands.apply(
        alice, protocol::set_components{
                   7, e, component_set{}.set(Position{3.0F, 4.0F}).set(Velocity{1.0F, 0.0F})});
    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.request_id, 7U);
    EXPECT_EQ(world_->get<Position>(e), (Position{3.0F, 4.0F}));
    EXPECT_EQ(world_->get<Velocity>(e), (Velocity{1.0F, 0.0F}));
    EXPECT_EQ(world_->get<Owner>(e), Owner{alice});
}

TEST_F(CommandProcessor, RemoveDropsTheNamedComponents) {
    command_processor commands{*world_, command_limits{}};
    const Entity e =
        spawn_ok(commands, alice,
                 component_set{}.set(Position{}).set(Velocity{}).set(Health{3}).set(Lifetime{9}));
    const command_result result =
        commands.apply(alice, protocol::remove_components{8, e, mask_of<Velocity, Lifetime>()});
    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_TRUE(world_->has<Position>(e));
    EXPECT_FALSE(world_->has<Velocity>(e));
    EXPECT_TRUE(world_->has<Health>(e));
    EXPECT_FALSE(world_->has<Lifetime>(e));
    EXPECT_TRUE(world_->has<Owner>(e));
}

TEST_F(CommandProcessor, RemoveOfAMissingComponentChangesNothing) {
    command_processor commands{*world_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Position{}).set(Velocity{}));
    const command_result result =
        commands.apply(alice, protocol::remove_components{8, e, mask_of<Velocity, Health>()});
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::ComponentMissing);
    EXPECT_EQ(result.message, "entity " + ecsnet::ecs::to_string(e) + " has no health");
    EXPECT_TRUE(world_->has<Velocity>(e)) << "all or nothing";
}

TEST_F(CommandProcessor, PerClientQuota) {
    command_processor commands{*world_, command_limits{.max_entities_per_client = 2}};
    const Entity first = spawn_ok(commands, alice);
    spawn_ok(commands, alice);

    const command_result refused = spawn(commands, alice);
    EXPECT_FALSE(refused.ok);
    EXPECT_EQ(refused.code, ErrorCode::EntityQuota);
    EXPECT_EQ(refused.message, "client 1 already owns 2 entities, its limit");
    EXPECT_EQ(world_->alive(), 2U);

    spawn_ok(commands, bob);  // the quota is per client
    ASSERT_TRUE(destroy(commands, alice, first).ok);
    spawn_ok(commands, alice);  // room again
    EXPECT_EQ(commands.owned_by(alice), 2U);
}

TEST_F(CommandProcessor, GlobalCap) {
    command_processor commands{*world_, command_limits{.max_entities = 3}};
    (void)world_->create();  // server entities count too
    spawn_ok(commands, alice);
    spawn_ok(commands, bob);
    const command_result refused = spawn(commands, bob);
    EXPECT_EQ(refused.code, ErrorCode::WorldFull);
    EXPECT_EQ(refused.message, "the world holds 3 entities, its limit");
    EXPECT_EQ(world_->alive(), 3U);
}

TEST_F(CommandProcessor, NonCommandsAreMalformed) {
    command_processor commands{*world_, command_limits{}};
    const command_result result = commands.apply(alice, protocol::ping{1});
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::Malformed);
    EXPECT_EQ(commands.counters().rejected, 1U);
}

TEST_F(CommandProcessor, DespawnAllOfDestroysOnlyThatClientsEntities) {
    command_processor commands{*world_, command_limits{}};
    const Entity a1 = spawn_ok(commands, alice);
    const Entity b1 = spawn_ok(commands, bob);
    const Entity a2 = spawn_ok(commands, alice);
    const Entity demo = world_->create();

    EXPECT_EQ(commands.despawn_all_of(alice), 2U);
    EXPECT_FALSE(world_->valid(a1));
    EXPECT_FALSE(world_->valid(a2));
    EXPECT_TRUE(world_->valid(b1));
    EXPECT_TRUE(world_->valid(demo));
    EXPECT_EQ(commands.owned_by(alice), 0U);
    EXPECT_EQ(commands.owned_by(bob), 1U);
    EXPECT_EQ(commands.despawn_all_of(alice), 0U);
}

TEST_F(CommandProcessor, OwnershipCountsFollowDestroysByOtherMeans) {
    command_processor commands{*world_, command_limits{.max_entities_per_client = 2}};
    const Entity a1 = spawn_ok(commands, alice);
    spawn_ok(commands, alice);
    ASSERT_EQ(spawn(commands, alice).code, ErrorCode::EntityQuota);

    world_->destroy(a1);  // e.g. the lifetime system
    EXPECT_EQ(commands.owned_by(alice), 1U);
    spawn_ok(commands, alice);  // the freed quota is usable

    world_->remove<Owner>(world_->current(1));  // ownership taken away by the server
    EXPECT_EQ(commands.owned_by(alice), 1U);
}

TEST_F(CommandProcessor, DisconnectsItsSignalsOnDestruction) {
    {
        command_processor commands{*world_, command_limits{}};
        spawn_ok(commands, alice);
    }
    // Would call into the destroyed processor if its signal handlers were still connected.
    const Entity e = world_->create();
    world_->emplace<Owner>(e, alice);
    world_->destroy(e);
    EXPECT_FALSE(world_->valid(e));
}

}  // namespace
