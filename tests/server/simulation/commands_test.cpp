// command_processor applied directly to a World: ownership, version checks, quotas, and
// who may write which type (writer::owner, writer::any, writer::server) and with which values
// (valid()), over the demo's types and over types that exist only in this test.
#include "ecsnet/server/simulation/commands.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands_test_generated.h"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"

// The test's own game: its components are registered by the test and nowhere else.
namespace commands_test {

struct Tag {
    std::uint8_t color{};
    friend bool operator==(const Tag&, const Tag&) = default;
};

struct Score {
    std::int32_t points{};
    friend bool operator==(const Score&, const Score&) = default;
};

struct Armor {
    std::uint16_t rating{};
    friend bool operator==(const Armor&, const Armor&) = default;
};

struct Speed {
    float value{};
    // 13 stands for a game whose own check throws (GameFailed), not refuses (InvalidValue).
    [[nodiscard]] bool valid() const {
        if (value == 13.0F) {
            throw std::runtime_error("unlucky speed");
        }
        return value >= 0.0F;
    }
    friend bool operator==(const Speed&, const Speed&) = default;
};

}  // namespace commands_test

namespace ecsnet::protocol {
template <>
struct replicated<commands_test::Tag>
    : replicate<test::wire::Tag, "tag", replicate_options{.written_by = writer::any}> {};
template <>
struct replicated<commands_test::Score>
    : replicate<test::wire::Score, "score", replicate_options{.written_by = writer::owner}> {};
template <>
struct replicated<commands_test::Armor>
    : replicate<test::wire::Armor, "armor", replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<commands_test::Speed> : replicate<test::wire::Speed, "speed"> {};
}  // namespace ecsnet::protocol

namespace commands_test {

using commands_test::Armor;
using commands_test::Score;
using commands_test::Speed;
using commands_test::Tag;
using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::protocol::command_result;
using ecsnet::protocol::component_registry;
using ecsnet::protocol::component_set;
using ecsnet::protocol::component_value;
using ecsnet::protocol::Owner;
using ecsnet::protocol::replicated;
using ecsnet::server::command_limits;
using ecsnet::server::command_processor;
using ecsnet::wire::ErrorCode;
using testing::HasSubstr;

namespace protocol = ecsnet::protocol;

constexpr std::uint32_t alice = 1;
constexpr std::uint32_t bob = 2;

// RemoveComponent's list of wire names.
template <typename... T>
std::vector<std::string> names_of() {
    return {std::string{replicated<T>::name}...};
}

component_registry make_types() {
    component_registry types;
    types.add<Position>();
    types.add<Velocity>();
    types.add<Health>();
    types.add<Lifetime>();
    types.add<Name>();
    types.add<Tag>();
    types.add<Score>();
    types.add<Armor>();
    types.add<Speed>();
    return types;
}

class CommandProcessor : public testing::Test {
protected:
    const component_registry types_ = make_types();
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
    command_processor commands{*world_, types_, command_limits{}};
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
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, bob);
    EXPECT_EQ(world_->get<Owner>(e), Owner{bob});
}

TEST_F(CommandProcessor, DestroyOwnedEntity) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    const command_result result = destroy(commands, alice, e);
    EXPECT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.entity, e);
    EXPECT_FALSE(world_->valid(e));
    EXPECT_EQ(commands.owned_by(alice), 0U);
}

TEST_F(CommandProcessor, DestroyUnknownEntityIsRejected) {
    command_processor commands{*world_, types_, command_limits{}};
    const command_result result = commands.apply(alice, protocol::destroy{9, Entity{42, 1}});
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.request_id, 9U);
    EXPECT_EQ(result.code, ErrorCode::UnknownEntity);
    EXPECT_EQ(result.message, "entity 42:1 does not exist");
    EXPECT_EQ(commands.counters().rejected, 1U);
}

TEST_F(CommandProcessor, DestroyTwiceIsUnknownTheSecondTime) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    ASSERT_TRUE(destroy(commands, alice, e).ok);
    EXPECT_EQ(destroy(commands, alice, e).code, ErrorCode::UnknownEntity);
}

TEST_F(CommandProcessor, StaleVersionIsRejectedAndTheNewEntitySurvives) {
    command_processor commands{*world_, types_, command_limits{}};
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
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    ASSERT_EQ(e, (Entity{0, 1}));
    const command_result result = destroy(commands, alice, Entity{0, 7});
    EXPECT_EQ(result.code, ErrorCode::StaleVersion);
    EXPECT_EQ(result.message, "entity 0 is at version 1, not 7 (stale handle)");
    EXPECT_TRUE(world_->valid(e));
}

TEST_F(CommandProcessor, FreedIndexIsUnknownForEveryVersion) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice);
    ASSERT_TRUE(destroy(commands, alice, e).ok);
    EXPECT_EQ(destroy(commands, alice, e).code, ErrorCode::UnknownEntity);
    EXPECT_EQ(destroy(commands, alice, Entity{e.index(), e.version() + 1}).code,
              ErrorCode::UnknownEntity);
}

// The checks run in a fixed order: UnknownEntity, StaleVersion, NotOwner, ComponentMissing.
TEST_F(CommandProcessor, VersionIsCheckedBeforeOwnership) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity theirs = spawn_ok(commands, bob, component_set{}.set(Health{1}));
    EXPECT_EQ(destroy(commands, alice, Entity{theirs.index(), theirs.version() + 1}).code,
              ErrorCode::StaleVersion);
    EXPECT_EQ(
        commands.apply(alice, protocol::remove_components{1, theirs, names_of<Position>()}).code,
        ErrorCode::NotOwner);
}

TEST_F(CommandProcessor, ForeignEntitiesCannotBeTouched) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Health{10}));

    const command_result destroyed = destroy(commands, bob, e);
    EXPECT_EQ(destroyed.code, ErrorCode::NotOwner);
    EXPECT_EQ(destroyed.message, "entity " + ecsnet::ecs::to_string(e) + " belongs to client 1");

    const command_result set =
        commands.apply(bob, protocol::set_components{1, e, component_set{}.set(Health{0})});
    EXPECT_EQ(set.code, ErrorCode::NotOwner);
    const command_result removed =
        commands.apply(bob, protocol::remove_components{2, e, names_of<Health>()});
    EXPECT_EQ(removed.code, ErrorCode::NotOwner);

    EXPECT_TRUE(world_->valid(e));
    EXPECT_EQ(world_->get<Health>(e), Health{10});
    EXPECT_EQ(commands.owned_by(alice), 1U);
}

TEST_F(CommandProcessor, ServerOwnedEntitiesBelongToNoClient) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity demo = world_->create();  // no Owner: the server's
    const command_result result = destroy(commands, alice, demo);
    EXPECT_EQ(result.code, ErrorCode::NotOwner);
    EXPECT_THAT(result.message, HasSubstr("belongs to the server"));
    EXPECT_TRUE(world_->valid(demo));
}

// Owner 0 is the server: the owner index must let go of its entities like any owner's (the
// commands fuzzer found the index keeping a destroyed entity of owner 0).
TEST_F(CommandProcessor, TheIndexForgetsDestroyedEntitiesOfOwnerZero) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, 0);
    EXPECT_EQ(commands.owned_by(0), 1U);
    EXPECT_EQ(commands.despawn_all_of(0), 1U);
    EXPECT_FALSE(world_->valid(e));
    EXPECT_EQ(commands.owned_by(0), 0U);

    const Entity f = world_->create();
    world_->emplace<Owner>(f, Owner{0});
    EXPECT_EQ(commands.owned_by(0), 1U);
    world_->destroy(f);
    EXPECT_EQ(commands.owned_by(0), 0U);
}

TEST_F(CommandProcessor, SetAddsAndReplacesComponents) {
    command_processor commands{*world_, types_, command_limits{}};
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
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e =
        spawn_ok(commands, alice,
                 component_set{}.set(Position{}).set(Velocity{}).set(Health{3}).set(Lifetime{9}));
    const command_result result =
        commands.apply(alice, protocol::remove_components{8, e, names_of<Velocity, Lifetime>()});
    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_TRUE(world_->has<Position>(e));
    EXPECT_FALSE(world_->has<Velocity>(e));
    EXPECT_TRUE(world_->has<Health>(e));
    EXPECT_FALSE(world_->has<Lifetime>(e));
    EXPECT_TRUE(world_->has<Owner>(e));
}

TEST_F(CommandProcessor, RemoveOfAMissingComponentChangesNothing) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Position{}).set(Velocity{}));
    const command_result result =
        commands.apply(alice, protocol::remove_components{8, e, names_of<Velocity, Health>()});
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::ComponentMissing);
    EXPECT_EQ(result.message, "entity " + ecsnet::ecs::to_string(e) + " has no health");
    EXPECT_TRUE(world_->has<Velocity>(e)) << "all or nothing";
}

TEST_F(CommandProcessor, PerClientQuota) {
    command_processor commands{*world_, types_, command_limits{.max_entities_per_client = 2}};
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
    command_processor commands{*world_, types_, command_limits{.max_entities = 3}};
    (void)world_->create();  // server entities count too
    spawn_ok(commands, alice);
    spawn_ok(commands, bob);
    const command_result refused = spawn(commands, bob);
    EXPECT_EQ(refused.code, ErrorCode::WorldFull);
    EXPECT_EQ(refused.message, "the world holds 3 entities, its limit");
    EXPECT_EQ(world_->alive(), 3U);
}

TEST_F(CommandProcessor, NonCommandsAreMalformed) {
    command_processor commands{*world_, types_, command_limits{}};
    const command_result result = commands.apply(alice, protocol::ping{1});
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::Malformed);
    EXPECT_EQ(commands.counters().rejected, 1U);
}

TEST_F(CommandProcessor, DespawnAllOfDestroysOnlyThatClientsEntities) {
    command_processor commands{*world_, types_, command_limits{}};
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
    command_processor commands{*world_, types_, command_limits{.max_entities_per_client = 2}};
    const Entity a1 = spawn_ok(commands, alice);
    spawn_ok(commands, alice);
    ASSERT_EQ(spawn(commands, alice).code, ErrorCode::EntityQuota);

    world_->destroy(a1);  // e.g. the lifetime system
    EXPECT_EQ(commands.owned_by(alice), 1U);
    spawn_ok(commands, alice);  // the freed quota is usable

    world_->erase<Owner>(world_->current(1));  // ownership taken away by the server
    EXPECT_EQ(commands.owned_by(alice), 1U);
}

TEST_F(CommandProcessor, DisconnectsItsSignalsOnDestruction) {
    {
        command_processor commands{*world_, types_, command_limits{}};
        spawn_ok(commands, alice);
    }
    // Would call into the destroyed processor if its signal handlers were still connected.
    const Entity e = world_->create();
    world_->emplace<Owner>(e, alice);
    world_->destroy(e);
    EXPECT_FALSE(world_->valid(e));
}

// ---- who may write which type: the test's own components -----------------------------------

TEST_F(CommandProcessor, AnyWriterTypeMayBeSetAndRemovedOnEntitiesTheClientDoesNotOwn) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity theirs = spawn_ok(commands, alice, component_set{}.set(Score{5}));

    const command_result set =
        commands.apply(bob, protocol::set_components{1, theirs, component_set{}.set(Tag{3})});
    ASSERT_TRUE(set.ok) << set.message;
    EXPECT_EQ(world_->get<Tag>(theirs), Tag{3});
    EXPECT_EQ(world_->get<Owner>(theirs), Owner{alice}) << "setting a tag does not take it over";

    const command_result removed =
        commands.apply(bob, protocol::remove_components{2, theirs, names_of<Tag>()});
    ASSERT_TRUE(removed.ok) << removed.message;
    EXPECT_FALSE(world_->has<Tag>(theirs));

    // Server entities too: writer::any means any entity.
    const Entity server_entity = world_->create();
    const command_result on_server = commands.apply(
        bob, protocol::set_components{3, server_entity, component_set{}.set(Tag{7})});
    ASSERT_TRUE(on_server.ok) << on_server.message;
    EXPECT_EQ(world_->get<Tag>(server_entity), Tag{7});
    EXPECT_FALSE(world_->has<Owner>(server_entity));

    // The entity must still exist at the version named.
    EXPECT_EQ(
        commands
            .apply(bob, protocol::set_components{4, Entity{theirs.index(), theirs.version() + 1},
                                                 component_set{}.set(Tag{1})})
            .code,
        ErrorCode::StaleVersion);
}

TEST_F(CommandProcessor, OwnerWriterTypeIsRefusedOnEntitiesTheClientDoesNotOwn) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity theirs = spawn_ok(commands, alice, component_set{}.set(Score{5}).set(Tag{1}));

    const command_result set =
        commands.apply(bob, protocol::set_components{1, theirs, component_set{}.set(Score{0})});
    EXPECT_FALSE(set.ok);
    EXPECT_EQ(set.code, ErrorCode::NotOwner);
    EXPECT_EQ(set.message, "entity " + ecsnet::ecs::to_string(theirs) + " belongs to client 1");

    // One owner-written type in the command makes the whole command the owner's.
    const command_result mixed = commands.apply(
        bob, protocol::set_components{2, theirs, component_set{}.set(Tag{9}).set(Score{0})});
    EXPECT_EQ(mixed.code, ErrorCode::NotOwner);
    const command_result removed =
        commands.apply(bob, protocol::remove_components{3, theirs, names_of<Tag, Score>()});
    EXPECT_EQ(removed.code, ErrorCode::NotOwner);
    EXPECT_EQ(commands.apply(bob, protocol::remove_components{4, theirs, names_of<Score>()}).code,
              ErrorCode::NotOwner);

    EXPECT_EQ(world_->get<Score>(theirs), Score{5});
    EXPECT_EQ(world_->get<Tag>(theirs), Tag{1}) << "all or nothing";

    // Its owner may.
    const command_result own =
        commands.apply(alice, protocol::set_components{5, theirs, component_set{}.set(Score{6})});
    ASSERT_TRUE(own.ok) << own.message;
    EXPECT_EQ(world_->get<Score>(theirs), Score{6});
}

TEST_F(CommandProcessor, ServerWriterTypeIsRefusedEvenToTheOwner) {
    command_processor commands{*world_, types_, command_limits{}};

    const command_result spawned = spawn(commands, alice, component_set{}.set(Armor{10}));
    EXPECT_FALSE(spawned.ok);
    EXPECT_EQ(spawned.code, ErrorCode::InvalidValue);
    EXPECT_EQ(spawned.message, "armor is set by the server only");
    EXPECT_EQ(world_->alive(), 0U) << "nothing spawned";
    EXPECT_EQ(commands.owned_by(alice), 0U);

    const Entity mine = spawn_ok(commands, alice, component_set{}.set(Score{1}));
    world_->emplace<Armor>(mine, std::uint16_t{4});  // the server's systems may
    const command_result set = commands.apply(
        alice, protocol::set_components{1, mine, component_set{}.set(Score{2}).set(Armor{99})});
    EXPECT_EQ(set.code, ErrorCode::InvalidValue);
    EXPECT_EQ(set.message, "armor is set by the server only");
    EXPECT_EQ(world_->get<Score>(mine), Score{1}) << "all or nothing";
    EXPECT_EQ(world_->get<Armor>(mine), Armor{4});

    const command_result removed =
        commands.apply(alice, protocol::remove_components{2, mine, names_of<Score, Armor>()});
    EXPECT_EQ(removed.code, ErrorCode::InvalidValue);
    EXPECT_EQ(removed.message, "armor is set by the server only");
    EXPECT_TRUE(world_->has<Score>(mine));
    EXPECT_TRUE(world_->has<Armor>(mine));

    // The core's Owner is server-written: a client cannot give itself or anyone an entity.
    const command_result owner =
        commands.apply(alice, protocol::set_components{3, mine, component_set{}.set(Owner{bob})});
    EXPECT_EQ(owner.code, ErrorCode::InvalidValue);
    EXPECT_EQ(owner.message, "owner is set by the server only");
    const command_result spawn_owned = spawn(commands, alice, component_set{}.set(Owner{bob}));
    EXPECT_EQ(spawn_owned.code, ErrorCode::InvalidValue);
    EXPECT_EQ(commands.apply(alice, protocol::remove_components{4, mine, names_of<Owner>()}).code,
              ErrorCode::InvalidValue);
    EXPECT_EQ(world_->get<Owner>(mine), Owner{alice});
    EXPECT_EQ(commands.owned_by(alice), 1U);
    EXPECT_EQ(commands.owned_by(bob), 0U);
    EXPECT_EQ(world_->alive(), 1U);
}

TEST_F(CommandProcessor, ValueItsTypeFindsInvalidIsRefusedAndNothingChanges) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Score{1}).set(Speed{2.0F}));

    // A valid value and an invalid one, in both orders: neither is applied.
    for (const bool valid_first : {true, false}) {
        component_set values;
        if (valid_first) {
            values.set(Score{9}).set(Speed{-1.0F});
        } else {
            values.set(Speed{-1.0F}).set(Score{9});
        }
        const command_result result =
            commands.apply(alice, protocol::set_components{5, e, std::move(values)});
        EXPECT_FALSE(result.ok);
        EXPECT_EQ(result.code, ErrorCode::InvalidValue) << "valid first: " << valid_first;
        EXPECT_EQ(result.message, "the speed value is not valid");
        EXPECT_EQ(world_->get<Score>(e), Score{1}) << "valid first: " << valid_first;
        EXPECT_EQ(world_->get<Speed>(e), Speed{2.0F});
    }
    // A valid value of the same type is applied.
    ASSERT_TRUE(
        commands.apply(alice, protocol::set_components{6, e, component_set{}.set(Speed{0.0F})}).ok);
    EXPECT_EQ(world_->get<Speed>(e), Speed{0.0F});

    // A spawn with an invalid value creates nothing.
    const command_result spawned =
        spawn(commands, alice, component_set{}.set(Tag{1}).set(Speed{-3.0F}));
    EXPECT_EQ(spawned.code, ErrorCode::InvalidValue);
    EXPECT_EQ(world_->alive(), 1U);
    EXPECT_EQ(commands.owned_by(alice), 1U);

    // The demo's own check: positions are finite.
    const command_result nan = commands.apply(
        alice,
        protocol::set_components{
            7, e, component_set{}.set(Position{std::numeric_limits<float>::quiet_NaN(), 0.0F})});
    EXPECT_EQ(nan.code, ErrorCode::InvalidValue);
    EXPECT_EQ(nan.message, "the position value is not valid");
    EXPECT_FALSE(world_->has<Position>(e));
}

TEST_F(CommandProcessor, RemoveIsAllOrNothing) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Score{1}).set(Tag{2}));

    // One missing type: none removed, whichever position it has.
    EXPECT_EQ(
        commands.apply(alice, protocol::remove_components{1, e, names_of<Score, Speed>()}).code,
        ErrorCode::ComponentMissing);
    EXPECT_EQ(commands.apply(alice, protocol::remove_components{2, e, names_of<Speed, Tag>()}).code,
              ErrorCode::ComponentMissing);
    // One unknown type: none removed.
    const command_result unknown = commands.apply(
        alice, protocol::remove_components{3, e, std::vector<std::string>{"score", "no-such"}});
    EXPECT_EQ(unknown.code, ErrorCode::Malformed);
    EXPECT_EQ(unknown.message, "unknown component no-such");
    EXPECT_TRUE(world_->has<Score>(e));
    EXPECT_TRUE(world_->has<Tag>(e));

    const command_result both =
        commands.apply(alice, protocol::remove_components{4, e, names_of<Score, Tag>()});
    ASSERT_TRUE(both.ok) << both.message;
    EXPECT_FALSE(world_->has<Score>(e));
    EXPECT_FALSE(world_->has<Tag>(e));
    EXPECT_TRUE(world_->has<Owner>(e));
}

TEST_F(CommandProcessor, UnknownComponentInAValueSetIsMalformedAndNothingChanges) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Score{1}));
    const command_result result = commands.apply(
        alice, protocol::set_components{
                   1, e, component_set{}.set(Score{2}).set(component_value{"no-such", {}, {}})});
    EXPECT_EQ(result.code, ErrorCode::Malformed);
    EXPECT_EQ(result.message, "unknown component no-such");
    EXPECT_EQ(world_->get<Score>(e), Score{1});
}

// ---- the game's code throws (issue 24.1) ---------------------------------------------------

// The shields tutorial's bug, in this test's types: an on_construct<Tag> listener emplaces a
// Score that is already there the second time a Tag is set. Spawn{tag}, RemoveComponent{tag},
// SetComponent{tag}: the third throws component_exists in the game's listener. It used to end
// the tick loop; now the command is refused with GameFailed and undone.
TEST_F(CommandProcessor, AListenerThatThrowsRefusesTheCommandWithGameFailedAndUndoesIt) {
    command_processor commands{*world_, types_, command_limits{}};
    world_->on_construct<Tag>().connect([](World& w, Entity e) { w.emplace<Score>(e, 0); });

    const Entity e = spawn_ok(commands, alice, component_set{}.set(Tag{1}));
    ASSERT_EQ(world_->get<Score>(e), Score{0});
    ASSERT_TRUE(commands.apply(alice, protocol::remove_components{2, e, names_of<Tag>()}).ok);
    const command_result failed =
        commands.apply(alice, protocol::set_components{3, e, component_set{}.set(Tag{2})});

    EXPECT_FALSE(failed.ok);
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(failed.request_id, 3U);
    EXPECT_EQ(failed.entity, e);
    EXPECT_THAT(failed.message, HasSubstr("the game refused it: "));
    EXPECT_THAT(failed.message, HasSubstr("already has"));
    EXPECT_THAT(failed.message, HasSubstr("(component tag)"));
    EXPECT_EQ(commands.failure().component, "tag");
    EXPECT_TRUE(commands.failure().undone);
    EXPECT_FALSE(world_->has<Tag>(e)) << "the Tag the command added is taken back";
    EXPECT_EQ(world_->get<Score>(e), Score{0});
    EXPECT_EQ(commands.counters().game_failures, 1U);
    EXPECT_EQ(commands.counters().undo_failures, 0U);

    // The world goes on: the same entity takes other commands, others spawn.
    EXPECT_TRUE(
        commands.apply(alice, protocol::set_components{4, e, component_set{}.set(Score{5})}).ok);
    EXPECT_EQ(world_->get<Score>(e), Score{5});
    spawn_ok(commands, bob, component_set{}.set(Speed{1.0F}));
    EXPECT_EQ(commands.owned_by(alice), 1U);
    EXPECT_EQ(commands.owned_by(bob), 1U);
}

TEST_F(CommandProcessor, ASpawnWhoseListenerThrowsLeavesNoEntity) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity before = spawn_ok(commands, alice);
    (void)world_->take_changes();
    bool fail = true;
    world_->on_construct<Score>().connect([&](World&, Entity) {
        if (fail) {
            throw std::runtime_error("no scores today");
        }
    });
    // Owner comes first: the game's listeners see who spawns.
    std::vector<std::uint32_t> owners_seen;
    world_->on_construct<Tag>().connect(
        [&](World& w, Entity e) { owners_seen.push_back(w.get<Owner>(e).client); });

    const command_result failed =
        spawn(commands, alice, component_set{}.set(Tag{1}).set(Score{2}).set(Speed{3.0F}));
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(failed.message, "the game refused it: no scores today (component score)");
    EXPECT_TRUE(failed.entity.is_null()) << "no entity remains to name";
    EXPECT_EQ(owners_seen, std::vector<std::uint32_t>{alice});
    EXPECT_EQ(world_->alive(), 1U);
    EXPECT_TRUE(world_->valid(before));
    EXPECT_EQ(commands.owned_by(alice), 1U);
    // Created and destroyed within the tick: nothing of it reaches the change set's clients.
    const auto changes = world_->take_changes();
    EXPECT_TRUE(changes.created.empty());

    fail = false;
    const Entity after = spawn_ok(commands, alice, component_set{}.set(Score{2}));
    EXPECT_EQ(world_->get<Score>(after), Score{2});
}

TEST_F(CommandProcessor, ASetWhoseListenerThrowsPutsEveryValueBackExactly) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice,
                              component_set{}.set(Score{1}).set(Tag{2}).set(Position{0.1F, 0.2F}));
    world_->on_construct<Speed>().connect(
        [](World&, Entity) { throw std::runtime_error("no speed here"); });

    // Score, Position and Tag replaced, then Speed's listener throws.
    const command_result failed = commands.apply(
        alice, protocol::set_components{
                   9, e, component_set{}.set(Score{5}).set(Position{7, 8}).set(Tag{3}).set(
                             Speed{4.0F})});
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(failed.message, "the game refused it: no speed here (component speed)");
    EXPECT_TRUE(commands.failure().undone);
    EXPECT_FALSE(world_->has<Speed>(e)) << "added by the command: removed again";
    EXPECT_EQ(world_->get<Score>(e), Score{1});
    EXPECT_EQ(world_->get<Tag>(e), Tag{2});
    // The exact value, not the wire's (Position is quantized on the wire).
    EXPECT_EQ(world_->get<Position>(e), (Position{0.1F, 0.2F}));
}

// An on_update listener that always throws also throws when the undo writes the old value
// back: the value is back (patch writes before its listeners run), and the reply says the
// undo failed, since the game's code refused it too.
TEST_F(CommandProcessor, AnUndoWhoseListenerThrowsAgainIsSaid) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Score{1}).set(Tag{2}));
    world_->on_update<Tag>().connect(
        [](World&, Entity) { throw std::runtime_error("tags are frozen"); });

    const command_result failed = commands.apply(
        alice, protocol::set_components{9, e, component_set{}.set(Score{5}).set(Tag{3})});
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(failed.message,
              "the game refused it: tags are frozen (component tag); undoing it failed too, part "
              "of it may remain");
    EXPECT_FALSE(commands.failure().undone);
    EXPECT_EQ(world_->get<Tag>(e), Tag{2});
    EXPECT_EQ(world_->get<Score>(e), Score{1});
}

TEST_F(CommandProcessor, ARemoveWhoseListenerThrowsPutsTheRemovedBack) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Score{1}).set(Tag{2}));
    world_->on_destroy<Tag>().connect(
        [](World&, Entity) { throw std::runtime_error("tags stay"); });

    const command_result failed =
        commands.apply(alice, protocol::remove_components{2, e, names_of<Score, Tag>()});
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(world_->get<Score>(e), Score{1});
    EXPECT_EQ(world_->get<Tag>(e), Tag{2});
}

TEST_F(CommandProcessor, ADestroyWhoseListenerThrowsLeavesTheEntityWhole) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Score{1}).set(Tag{2}));
    world_->on_destroy<Score>().connect(
        [](World&, Entity) { throw std::runtime_error("scores are forever"); });

    const command_result failed = destroy(commands, alice, e);
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(failed.entity, e);
    EXPECT_THAT(failed.message, HasSubstr("scores are forever"));
    EXPECT_TRUE(world_->valid(e));
    EXPECT_EQ(world_->get<Score>(e), Score{1});
    EXPECT_EQ(world_->get<Tag>(e), Tag{2});
    EXPECT_EQ(commands.owned_by(alice), 1U) << "the core's on_destroy<Owner> had run first";
    EXPECT_EQ(commands.despawn_all_of(bob), 0U);
    std::size_t failed_despawns = 0;
    EXPECT_EQ(commands.despawn_all_of(alice, &failed_despawns), 0U);
    EXPECT_EQ(failed_despawns, 1U) << "still listed under its owner";
}

TEST_F(CommandProcessor, AValidThatThrowsIsGameFailedNotInvalidValue) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity e = spawn_ok(commands, alice, component_set{}.set(Speed{1.0F}));
    const command_result failed =
        commands.apply(alice, protocol::set_components{2, e, component_set{}.set(Speed{13.0F})});
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_EQ(failed.message, "the game refused it: unlucky speed (component speed)");
    EXPECT_EQ(world_->get<Speed>(e), Speed{1.0F});
    EXPECT_EQ(spawn(commands, alice, component_set{}.set(Speed{13.0F})).code,
              ErrorCode::GameFailed);
    EXPECT_EQ(world_->alive(), 1U);
}

TEST_F(CommandProcessor, AnUndoThatThrowsTooIsSaidAndTheEntityStaysWithItsSender) {
    command_processor commands{*world_, types_, command_limits{}};
    world_->on_construct<Score>().connect(
        [](World&, Entity) { throw std::runtime_error("no scores"); });
    world_->on_destroy<Tag>().connect([](World&, Entity) { throw std::runtime_error("no"); });

    const command_result failed = spawn(commands, alice, component_set{}.set(Tag{1}).set(Score{2}));
    EXPECT_EQ(failed.code, ErrorCode::GameFailed);
    EXPECT_THAT(failed.message, HasSubstr("undoing it failed too"));
    EXPECT_FALSE(commands.failure().undone);
    EXPECT_EQ(commands.counters().undo_failures, 1U);
    ASSERT_TRUE(world_->valid(failed.entity)) << "named, since it remains";
    EXPECT_EQ(world_->get<Owner>(failed.entity), Owner{alice});
    EXPECT_EQ(commands.owned_by(alice), 1U);
}

// The owner index follows Owner however it changes: a game may hand an entity to another
// player, and despawn_all_of reads the index, not every entity.
TEST_F(CommandProcessor, TheOwnerIndexFollowsAnOwnerThatChangesHands) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity given = spawn_ok(commands, alice);
    const Entity kept = spawn_ok(commands, alice);
    std::vector<std::uint32_t> gone;
    commands.on_last_entity_gone = [&](std::uint32_t client) { gone.push_back(client); };

    world_->replace<Owner>(given, bob);
    EXPECT_EQ(commands.owned_by(alice), 1U);
    EXPECT_EQ(commands.owned_by(bob), 1U);
    EXPECT_EQ(commands.despawn_all_of(bob), 1U);
    EXPECT_FALSE(world_->valid(given));
    EXPECT_TRUE(world_->valid(kept));
    EXPECT_EQ(gone, std::vector<std::uint32_t>{bob});
    EXPECT_EQ(commands.despawn_all_of(bob), 0U);
}

TEST_F(CommandProcessor, DespawnAllOfSkipsAnEntityWhoseListenerThrowsAndSaysSo) {
    command_processor commands{*world_, types_, command_limits{}};
    const Entity stuck = spawn_ok(commands, alice, component_set{}.set(Tag{1}));
    spawn_ok(commands, alice);
    spawn_ok(commands, alice);
    world_->on_destroy<Tag>().connect([](World&, Entity) { throw std::runtime_error("stuck"); });

    std::size_t failed = 0;
    std::string what;
    EXPECT_EQ(commands.despawn_all_of(alice, &failed, &what), 2U);
    EXPECT_EQ(failed, 1U);
    EXPECT_EQ(what, "stuck");
    EXPECT_TRUE(world_->valid(stuck));
    EXPECT_EQ(commands.owned_by(alice), 1U);
}

}  // namespace commands_test
