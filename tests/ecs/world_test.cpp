#include "ecsnet/ecs/world.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace world_test {

using ecsnet::ecs::component_exists;
using ecsnet::ecs::component_id;
using ecsnet::ecs::component_missing;
using ecsnet::ecs::Entity;
using ecsnet::ecs::invalid_entity;
using ecsnet::ecs::signature;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Position {
    int x;
    int y;
    bool operator==(const Position&) const = default;
};
struct Velocity {
    int dx;
    int dy;
    bool operator==(const Velocity&) const = default;
};
struct Health {
    int hp;
    bool operator==(const Health&) const = default;
};

// Runs fn and returns the message of the E it throws, or a text that no assertion on an error
// message will accept.
template <typename E, typename Fn>
std::string message_of(Fn&& fn) {
    try {
        fn();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        return std::string{"<wrong exception type: "} + e.what() + ">";
    }
    return "<no exception>";
}

world_options reuse_at_once() {
    world_options options;
    options.entities.min_free_indices = 0;
    return options;
}

// ---- construction ---------------------------------------------------------------------------

static_assert(!std::is_default_constructible_v<World>);
static_assert(!std::is_constructible_v<World, world_options>);
static_assert(!std::is_copy_constructible_v<World>);
static_assert(!std::is_move_constructible_v<World>);
static_assert(!std::is_copy_assignable_v<World>);
static_assert(!std::is_move_assignable_v<World>);
static_assert(std::is_same_v<decltype(World::make()), std::shared_ptr<World>>);

TEST(WorldConstruction, MakeGivesASharedWorldThatKnowsItsOwner) {
    const auto w = World::make(world_options{});
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->weak_from_this().lock(), w);
    EXPECT_EQ(w->alive(), 0U);
    EXPECT_EQ(w->component_count(), 0U);
    EXPECT_TRUE(w->tracks_changes());
}

TEST(WorldConstruction, WorldsAreIndependent) {
    const auto a = World::make();
    const auto b = World::make();
    const Entity a0 = a->create();
    const Entity a1 = a->create();
    a->emplace<Position>(a1, 1, 2);

    // Component ids are per world: b registers Health first.
    b->register_component<Health>();
    const Entity b0 = b->create();
    b->emplace<Position>(b0, 7, 8);

    EXPECT_EQ(a0, b0);  // same value, different worlds
    EXPECT_EQ(a->alive(), 2U);
    EXPECT_EQ(b->alive(), 1U);
    EXPECT_EQ(a->component_of<Position>(), 0U);
    EXPECT_EQ(b->component_of<Position>(), 1U);
    EXPECT_FALSE(a->component_of<Health>().has_value());
    EXPECT_FALSE(a->has<Position>(a0));
    EXPECT_EQ(b->get<Position>(b0), (Position{7, 8}));
    EXPECT_FALSE(b->valid(a1));

    a->destroy(a0);
    EXPECT_TRUE(b->valid(b0));
    EXPECT_EQ(b->get<Position>(b0), (Position{7, 8}));
}

// ---- entities -------------------------------------------------------------------------------

TEST(WorldEntities, CreateGivesDistinctLiveEntities) {
    const auto w = World::make();
    std::set<Entity> seen;
    for (int i = 0; i < 100; ++i) {
        const Entity e = w->create();
        EXPECT_FALSE(e.is_null());
        EXPECT_TRUE(w->valid(e));
        EXPECT_TRUE(seen.insert(e).second) << e;
    }
    EXPECT_EQ(w->alive(), 100U);
    std::set<Entity> visited;
    w->each([&](Entity e) { visited.insert(e); });
    EXPECT_EQ(visited, seen);
}

TEST(WorldEntities, DestroyRemovesAllComponentsAndClearsTheSignature) {
    const auto w = World::make(reuse_at_once());
    const Entity e = w->create();
    const Entity other = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    w->emplace<Position>(other, 5, 6);

    w->destroy(e);

    EXPECT_FALSE(w->valid(e));
    EXPECT_EQ(w->alive(), 1U);
    EXPECT_FALSE(w->storage<Position>().contains(e));
    EXPECT_EQ(w->storage<Position>().size(), 1U);
    EXPECT_TRUE(w->storage<Velocity>().empty());
    EXPECT_EQ(w->get<Position>(other), (Position{5, 6}));

    // The recycled slot starts with nothing.
    const Entity again = w->create();
    ASSERT_EQ(again.index(), e.index());
    ASSERT_NE(again.version(), e.version());
    EXPECT_TRUE(w->signature_of(again).none());
    EXPECT_FALSE(w->has<Position>(again));
    EXPECT_FALSE(w->has<Velocity>(again));
}

TEST(WorldEntities, TryDestroyReportsWhetherTheEntityWasAlive) {
    const auto w = World::make();
    const Entity e = w->create();
    EXPECT_TRUE(w->try_destroy(e));
    EXPECT_FALSE(w->try_destroy(e));
    EXPECT_FALSE(w->try_destroy(Entity{}));
    EXPECT_FALSE(w->try_destroy(Entity{99, 1}));
    EXPECT_EQ(w->alive(), 0U);
}

TEST(WorldEntities, CurrentMapsAnIndexToItsLiveEntity) {
    const auto w = World::make(reuse_at_once());
    const Entity e = w->create();
    EXPECT_EQ(w->current(e.index()), e);
    w->destroy(e);
    EXPECT_TRUE(w->current(e.index()).is_null());
    const Entity again = w->create();
    EXPECT_EQ(w->current(e.index()), again);
    EXPECT_TRUE(w->current(12345).is_null());
}

// ---- errors name the entity and the type ----------------------------------------------------

class WorldStaleEntityErrors : public ::testing::Test {
protected:
    void SetUp() override {
        for (int i = 0; i < 6; ++i) {
            last_ = w_->create();
        }
        ASSERT_EQ(to_string(last_), "5:1");
        w_->emplace<Position>(last_, 1, 1);
        w_->destroy(last_);
        now_ = w_->create();
        ASSERT_EQ(to_string(now_), "5:2");
        w_->emplace<Position>(now_, 2, 2);
    }

    // The stale entity 5:1 is named, with what happened to its slot and the type if any.
    void expect_stale_error(const std::string& message, const char* type = nullptr) const {
        EXPECT_THAT(message,
                    AllOf(HasSubstr("entity 5:1"), HasSubstr("is now 5:2 (stale handle)")));
        if (type != nullptr) {
            EXPECT_THAT(message, HasSubstr(type));
        }
    }

    std::shared_ptr<World> w_ = World::make(reuse_at_once());
    Entity last_;
    Entity now_;
};

TEST_F(WorldStaleEntityErrors, EntityLevelCallsThrowInvalidEntity) {
    expect_stale_error(message_of<invalid_entity>([&] { w_->destroy(last_); }));
    expect_stale_error(message_of<invalid_entity>([&] { w_->set_name(last_, "x"); }));
    expect_stale_error(message_of<invalid_entity>([&] { (void)w_->signature_of(last_); }));
    expect_stale_error(message_of<invalid_entity>([&] { w_->clear(last_); }));
    EXPECT_TRUE(w_->valid(now_));
}

TEST_F(WorldStaleEntityErrors, ComponentCallsThrowInvalidEntityNamingTheType) {
    const char* type = "Position";
    expect_stale_error(message_of<invalid_entity>([&] { (void)w_->get<Position>(last_); }), type);
    expect_stale_error(message_of<invalid_entity>([&] { w_->emplace<Position>(last_, 0, 0); }),
                       type);
    expect_stale_error(
        message_of<invalid_entity>([&] { w_->emplace_or_replace<Position>(last_, 0, 0); }), type);
    expect_stale_error(message_of<invalid_entity>([&] { w_->replace<Position>(last_, 0, 0); }),
                       type);
    expect_stale_error(
        message_of<invalid_entity>([&] { w_->patch<Position>(last_, [](Position& p) { ++p.x; }); }),
        type);
    expect_stale_error(message_of<invalid_entity>([&] { w_->erase<Position>(last_); }), type);

    // None of them reached the slot's new owner.
    EXPECT_EQ(w_->get<Position>(now_), (Position{2, 2}));
}

// get() is checked in every build (ecs_config_test runs the release form); get_unchecked() is
// EnTT's contract, checked only where ECSNET_ECS_CHECKS is on (debug builds).
TEST_F(WorldStaleEntityErrors, GetUncheckedThrowsLikeGetWhereChecksAreOn) {
    EXPECT_EQ(w_->get_unchecked<Position>(now_), (Position{2, 2}));
    w_->emplace<Velocity>(now_, 7, 8);
    const auto [p, v] = w_->get_unchecked<Position, Velocity>(now_);
    EXPECT_EQ(p, (Position{2, 2}));
    EXPECT_EQ(v.dx, 7);
    if constexpr (!ecsnet::ecs::checks_enabled) {
        GTEST_SKIP() << "get_unchecked() is unchecked without ECSNET_ECS_CHECKS";
    }
    expect_stale_error(
        message_of<invalid_entity>([&] { (void)w_->get_unchecked<Position>(last_); }),
        "Position");
    EXPECT_THAT(message_of<component_missing>([&] { (void)w_->get_unchecked<Health>(now_); }),
                AllOf(HasSubstr("entity 5:2"), HasSubstr("Health")));
}

TEST_F(WorldStaleEntityErrors, GetNamesTheMissingType) {
    expect_stale_error(message_of<invalid_entity>([&] { (void)w_->get<Position>(last_); }),
                       "Position");
    EXPECT_THAT(message_of<component_missing>([&] { (void)w_->get<Velocity>(now_); }),
                AllOf(HasSubstr("entity 5:2"), HasSubstr("Velocity")));
    EXPECT_THAT(message_of<component_missing>([&] { (void)w_->get<Position, Velocity>(now_); }),
                HasSubstr("Velocity"));
    EXPECT_EQ(w_->get<Position>(now_), (Position{2, 2}));
}

TEST_F(WorldStaleEntityErrors, GetReadsSeveralTypesAtOnce) {
    w_->emplace<Velocity>(now_, 7, 8);
    const auto [p, v] = w_->get<Position, Velocity>(now_);
    EXPECT_EQ(p, (Position{2, 2}));
    EXPECT_EQ(v.dx, 7);
    EXPECT_THROW((void)(w_->get<Position, Health>(now_)), component_missing);
}

TEST_F(WorldStaleEntityErrors, UnregisteredTypeOnAStaleEntityIsStillAnInvalidEntity) {
    expect_stale_error(message_of<invalid_entity>([&] { (void)w_->get<Health>(last_); }), "Health");
    expect_stale_error(message_of<invalid_entity>([&] { w_->erase<Velocity>(last_); }),
                       "Velocity");
}

TEST_F(WorldStaleEntityErrors, QueriesAnswerWithoutThrowing) {
    EXPECT_FALSE(w_->valid(last_));
    EXPECT_EQ(w_->try_get<Position>(last_), nullptr);
    EXPECT_EQ(w_->try_get<Health>(last_), nullptr);
    EXPECT_FALSE(w_->has<Position>(last_));
    EXPECT_FALSE((w_->all_of<Position>(last_)));
    EXPECT_FALSE((w_->any_of<Position, Health>(last_)));
    EXPECT_TRUE(w_->name(last_).empty());
    EXPECT_FALSE(w_->try_destroy(last_));
    EXPECT_TRUE(w_->valid(now_));
}

TEST(WorldErrors, DestroyedEntitySaysItWasDestroyed) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->destroy(e);
    EXPECT_THAT(
        message_of<invalid_entity>([&] { (void)w->get<Position>(e); }),
        AllOf(HasSubstr("entity 0:1"), HasSubstr("it was destroyed"), HasSubstr("Position")));
    EXPECT_THAT(message_of<invalid_entity>([&] { w->destroy(e); }),
                AllOf(HasSubstr("destroy"), HasSubstr("entity 0:1"), HasSubstr("destroyed")));
}

TEST(WorldErrors, NullEntitySaysItIsNull) {
    const auto w = World::make();
    (void)w->create();
    w->register_component<Position>();
    EXPECT_THAT(message_of<invalid_entity>([&] { w->emplace<Position>(Entity{}, 1, 2); }),
                AllOf(HasSubstr("entity 0:0"), HasSubstr("null entity"), HasSubstr("Position")));
    EXPECT_THAT(message_of<invalid_entity>([&] { w->destroy(Entity{}); }),
                HasSubstr("null entity"));
}

TEST(WorldErrors, NeverCreatedIndexSaysSo) {
    const auto w = World::make();
    (void)w->create();
    EXPECT_THAT(
        message_of<invalid_entity>([&] {
            w->set_name(Entity{42, 1}, "x");
        }),
        AllOf(HasSubstr("entity 42:1"), HasSubstr("no entity was ever created at index 42")));
}

// ---- components -----------------------------------------------------------------------------

TEST(WorldComponents, EmplaceReturnsTheStoredValueAndGetReadsIt) {
    const auto w = World::make();
    const Entity e = w->create();
    Position& stored = w->emplace<Position>(e, 3, 4);
    EXPECT_EQ(stored, (Position{3, 4}));
    EXPECT_EQ(&stored, &w->get<Position>(e));
    EXPECT_EQ(w->try_get<Position>(e), &stored);
    EXPECT_TRUE(w->has<Position>(e));
    EXPECT_EQ(w->try_get<Velocity>(e), nullptr);
}

TEST(WorldComponents, GetReturnsConstReferences) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    static_assert(std::is_same_v<decltype(w->get<Position>(e)), const Position&>);
    static_assert(std::is_same_v<decltype(w->get<Position, Velocity>(e)),
                                 std::tuple<const Position&, const Velocity&>>);
    static_assert(std::is_same_v<decltype(w->try_get<Position>(e)), const Position*>);
    const auto [p, v] = w->get<Position, Velocity>(e);
    EXPECT_EQ(p, (Position{1, 2}));
    EXPECT_EQ(v, (Velocity{3, 4}));
    EXPECT_EQ(&p, &w->get<Position>(e));
}

// Issue 12.9: every read accessor of the world, and everything reached from a const World&,
// yields const; only the write calls (which record the change) hand out T&.
TEST(WorldComponents, EveryReadAccessorYieldsConst) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    const World& cw = *w;
    static_assert(std::is_same_v<decltype(cw.get<Position>(e)), const Position&>);
    static_assert(std::is_same_v<decltype(cw.try_get<Position>(e)), const Position*>);
    static_assert(
        std::is_same_v<decltype(w->storage<Position>()), const World::storage_type<Position>&>);
    static_assert(std::is_same_v<decltype(cw.find_storage<Position>()),
                                 const World::storage_type<Position>*>);
    static_assert(std::is_same_v<decltype(w->storage<Position>().get(e)), const Position&>);
    static_assert(std::is_same_v<decltype(w->storage<Position>().try_get(e)), const Position*>);
    static_assert(
        std::is_same_v<decltype(w->storage<Position>().values()), std::span<const Position>>);
    static_assert(std::is_same_v<decltype(*cw.view<const Position>().begin()),
                                 std::tuple<Entity, const Position&>>);
    static_assert(
        std::is_same_v<decltype(cw.view<const Position>().get<Position>(e)), const Position&>);
    // The write calls hand out T&: they record the write (change_set_test checks each).
    static_assert(std::is_same_v<decltype(w->patch<Position>(e)), Position&>);
    static_assert(std::is_same_v<decltype(w->replace<Position>(e, 1, 2)), Position&>);
    EXPECT_EQ(cw.get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(w->storage<Position>().values()[0], (Position{1, 2}));
    EXPECT_EQ(cw.find_storage<Position>()->get(e), (Position{1, 2}));
}

TEST(WorldComponents, EmplaceTwiceThrowsComponentExistsAndKeepsTheValue) {
    const auto w = World::make();
    (void)w->create();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    EXPECT_THAT(message_of<component_exists>([&] { w->emplace<Position>(e, 9, 9); }),
                AllOf(HasSubstr("entity 1:1"), HasSubstr("Position")));
    EXPECT_EQ(w->get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(w->storage<Position>().size(), 1U);
}

TEST(WorldComponents, MissingComponentThrowsComponentMissingNamingEntityAndType) {
    const auto w = World::make();
    (void)w->create();
    const Entity e = w->create();
    w->register_component<Velocity>();
    w->emplace<Position>(e, 1, 2);
    const auto names_it = AllOf(HasSubstr("entity 1:1"), HasSubstr("Velocity"));
    EXPECT_THAT(message_of<component_missing>([&] { w->erase<Velocity>(e); }), names_it);
    EXPECT_THAT(message_of<component_missing>([&] { (void)w->get<Velocity>(e); }), names_it);
    EXPECT_THAT(message_of<component_missing>([&] { w->replace<Velocity>(e, 1, 1); }), names_it);
    EXPECT_THAT(
        message_of<component_missing>([&] { w->patch<Velocity>(e, [](Velocity& v) { ++v.dx; }); }),
        names_it);
    EXPECT_THAT(message_of<component_missing>([&] { (void)w->write<Velocity>(e); }), names_it);
    EXPECT_THAT(message_of<component_missing>([&] { (void)w->get<Health>(e); }),
                HasSubstr("Health"));
    EXPECT_TRUE(w->has<Position>(e));
}

TEST(WorldComponents, EraseIsStrictAndRemovesNothingWhenOneIsMissing) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    EXPECT_THROW((w->erase<Position, Velocity>(e)), component_missing);
    EXPECT_TRUE(w->has<Position>(e)) << "the check comes before any removal";
    w->erase<Position>(e);
    EXPECT_FALSE(w->has<Position>(e));
    EXPECT_THROW(w->erase<Position>(e), component_missing);
}

TEST(WorldComponents, TryGetIsTheCheckedFormThatDoesNotThrow) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    ASSERT_NE(w->try_get<Position>(e), nullptr);
    EXPECT_EQ(*w->try_get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(w->try_get<Velocity>(e), nullptr) << "a type never registered";
    w->destroy(e);
    const Entity recycled = w->create();
    w->emplace<Position>(recycled, 3, 4);
    EXPECT_EQ(w->try_get<Position>(e), nullptr) << "a stale id never reads the new owner's value";
    EXPECT_EQ(w->try_get<Position>(Entity{}), nullptr);
}

TEST(WorldComponents, AtOnAStaleIdOfARecycledIndexThrows) {
    const auto w = World::make(world_options{.entities = {.min_free_indices = 0}});
    const Entity old = w->create();
    w->emplace<Position>(old, 1, 2);
    w->destroy(old);
    const Entity now = w->create();
    ASSERT_EQ(now.index(), old.index());
    w->emplace<Position>(now, 3, 4);
    EXPECT_THROW((void)w->get<Position>(old), invalid_entity);
    EXPECT_EQ(w->get<Position>(now), (Position{3, 4}));
    EXPECT_FALSE(w->storage<Position>().contains(old));
    EXPECT_EQ(w->storage<Position>().try_get(old), nullptr);
}

TEST(WorldComponents, WriteGivesAReferenceMarkedUpdatedWithoutSignals) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    (void)w->take_changes();
    int updates = 0;
    w->on_update<Position>().connect([&](World&, Entity) { ++updates; });

    w->write<Position>(e).x = 7;

    EXPECT_EQ(w->get<Position>(e), (Position{7, 2}));
    EXPECT_EQ(updates, 0) << "on_update runs only from patch";
    const auto changes = w->take_changes();
    ASSERT_NE(changes.find<Position>(), nullptr);
    EXPECT_THAT(changes.find<Position>()->updated, ElementsAre(e));
}

TEST(WorldComponents, StorageIsReadableFromAConstWorld) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    const World& read_only = *w;
    EXPECT_EQ(read_only.storage<Position>().get(e), (Position{1, 2}));
    EXPECT_EQ(read_only.storage<Position>().size(), 1U);
    // An unregistered type reads as empty, and stays unregistered.
    EXPECT_TRUE(read_only.storage<Velocity>().empty());
    EXPECT_FALSE(read_only.storage<Velocity>().contains(e));
    EXPECT_FALSE(read_only.component_of<Velocity>().has_value());
}

TEST(WorldComponents, RemoveIsTolerantAndCountsWhatItRemoved) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    EXPECT_EQ((w->remove<Position, Velocity, Health>(e)), 2U);
    EXPECT_FALSE((w->any_of<Position, Velocity, Health>(e)));
    EXPECT_EQ((w->remove<Position, Velocity, Health>(e)), 0U);
    EXPECT_TRUE(w->valid(e));
}

TEST(WorldComponents, RemoveSeveralTypesAtOnce) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    w->emplace<Health>(e, 5);
    w->erase<Position, Health>(e);
    EXPECT_FALSE(w->has<Position>(e));
    EXPECT_TRUE(w->has<Velocity>(e));
    EXPECT_FALSE(w->has<Health>(e));
}

TEST(WorldComponents, ClearRemovesEveryComponentAndKeepsTheEntityAlive) {
    const auto w = World::make();
    const Entity e = w->create();
    const Entity other = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    w->emplace<Position>(other, 5, 6);
    w->set_name(e, "player");

    w->clear(e);

    EXPECT_TRUE(w->valid(e));
    EXPECT_EQ(w->name(e), "player");
    EXPECT_TRUE(w->signature_of(e).none());
    EXPECT_FALSE((w->any_of<Position, Velocity>(e)));
    EXPECT_EQ(w->get<Position>(other), (Position{5, 6}));
    w->emplace<Health>(e, 10);  // still usable
    EXPECT_EQ(w->get<Health>(e).hp, 10);
}

TEST(WorldComponents, ReplacePatchAndEmplaceOrReplaceWriteInPlace) {
    const auto w = World::make();
    const Entity e = w->create();
    const Position* address = &w->emplace<Position>(e, 1, 2);

    EXPECT_EQ(w->replace<Position>(e, 3, 4), (Position{3, 4}));
    EXPECT_EQ(w->emplace_or_replace<Position>(e, 5, 6), (Position{5, 6}));
    // Several functions apply in order: (5 * 10) + 1, not (5 + 1) * 10.
    EXPECT_EQ(w->patch<Position>(
                  e, [](Position& p) { p.x *= 10; }, [](Position& p) { p.x += 1; }),
              (Position{51, 6}));
    EXPECT_EQ(&w->get<Position>(e), address);

    EXPECT_EQ(w->emplace_or_replace<Velocity>(e, 7, 8), (Velocity{7, 8}));
    EXPECT_TRUE(w->has<Velocity>(e));
}

TEST(WorldComponents, AllOfAndAnyOf) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 0, 0);
    w->emplace<Velocity>(e, 0, 0);
    EXPECT_TRUE((w->all_of<Position, Velocity>(e)));
    EXPECT_FALSE((w->all_of<Position, Velocity, Health>(e)));
    EXPECT_TRUE((w->any_of<Health, Velocity>(e)));
    EXPECT_FALSE((w->any_of<Health>(e)));
}

TEST(WorldComponents, MoveOnlyComponents) {
    struct Owned {
        std::unique_ptr<int> value;
    };
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Owned>(e, std::make_unique<int>(7));
    EXPECT_EQ(*w->get<Owned>(e).value, 7);
    w->replace<Owned>(e, std::make_unique<int>(8));
    EXPECT_EQ(*w->get<Owned>(e).value, 8);
    w->patch<Owned>(e, [](Owned& o) { *o.value += 1; });
    EXPECT_EQ(*w->get<Owned>(e).value, 9);
}

// ---- component types and signatures ---------------------------------------------------------

TEST(WorldSignatures, IdsFollowRegistrationOrderAndNamesAreKept) {
    const auto w = World::make();
    EXPECT_EQ(w->register_component<Velocity>("velocity"), 0U);
    EXPECT_EQ(w->register_component<Position>(), 1U);
    EXPECT_EQ(w->register_component<Velocity>(), 0U);  // again: same id, name kept
    EXPECT_EQ(w->component_count(), 2U);
    EXPECT_EQ(w->component_name(0), "velocity");
    EXPECT_THAT(std::string{w->component_name(1)}, HasSubstr("Position"));
    EXPECT_TRUE(w->component_name(2).empty());

    // Registering on first use.
    const Entity e = w->create();
    w->emplace<Health>(e, 1);
    EXPECT_EQ(w->component_of<Health>(), 2U);
    EXPECT_EQ(w->component_count(), 3U);
}

TEST(WorldSignatures, StayInSyncWithAddAndRemove) {
    const auto w = World::make();
    const Entity e = w->create();
    const component_id pos = w->register_component<Position>();
    const component_id vel = w->register_component<Velocity>();
    const component_id hp = w->register_component<Health>();

    EXPECT_TRUE(w->signature_of(e).none());
    w->emplace<Velocity>(e, 0, 0);
    EXPECT_EQ(w->signature_of(e), signature{}.set(vel));
    w->emplace<Health>(e, 1);
    w->emplace<Position>(e, 0, 0);
    EXPECT_EQ(w->signature_of(e), signature{}.set(pos).set(vel).set(hp));
    EXPECT_EQ(w->signature_of(e).to_string(), "111");
    w->erase<Velocity>(e);
    EXPECT_EQ(w->signature_of(e), signature{}.set(pos).set(hp));
    EXPECT_EQ(w->remove<Health>(e), 1U);
    EXPECT_EQ(w->signature_of(e), signature{}.set(pos));
    w->emplace_or_replace<Health>(e, 2);
    EXPECT_EQ(w->signature_of(e), signature{}.set(pos).set(hp));
    w->clear(e);
    EXPECT_TRUE(w->signature_of(e).none());
}

template <int N>
struct Tag {
    int v;
};

// kUsedTypes types live on one entity. Registering more afterwards widens every signature row
// past 512 bits (8 words), the point where destroy() copies a row to the heap.
constexpr int kUsedTypes = 260;
constexpr int kRegisteredOnlyTypes = 260;

// Array initializers rather than fold expressions: clang refuses a fold over more than 256
// operands (its nesting limit), and an initializer list has no such limit.
template <int... N>
void emplace_tags(World& w, Entity e, std::integer_sequence<int, N...>) {
    [[maybe_unused]] const int emplaced[] = {(w.emplace<Tag<N>>(e, N), 0)...};
}
template <int... N>
bool tags_hold_their_values(const World& w, Entity e, std::integer_sequence<int, N...>) {
    const bool held[] = {(w.get<Tag<N>>(e).v == N)...};
    return std::find(std::begin(held), std::end(held), false) == std::end(held);
}
template <int... N>
void register_more_tags(World& w, std::integer_sequence<int, N...>) {
    [[maybe_unused]] const int registered[] = {(w.register_component<Tag<kUsedTypes + N>>(), 0)...};
}

TEST(WorldSignatures, ManyComponentTypesOnOneEntity) {
    const auto used = std::make_integer_sequence<int, kUsedTypes>{};
    const auto w = World::make();
    const Entity bystander = w->create();
    w->emplace<Position>(bystander, 1, 1);
    const Entity e = w->create();

    emplace_tags(*w, e, used);

    EXPECT_EQ(w->component_count(), static_cast<std::size_t>(kUsedTypes) + 1);
    EXPECT_TRUE(tags_hold_their_values(*w, e, used));
    const signature all = w->signature_of(e);
    EXPECT_EQ(all.count(), static_cast<std::size_t>(kUsedTypes));
    EXPECT_FALSE(all.test(*w->component_of<Position>()));
    EXPECT_TRUE(all.test(*w->component_of<Tag<kUsedTypes - 1>>()));
    EXPECT_EQ(w->signature_of(bystander), signature{}.set(*w->component_of<Position>()));

    // Widening the rows keeps every bit where it was.
    register_more_tags(*w, std::make_integer_sequence<int, kRegisteredOnlyTypes>{});
    ASSERT_EQ(w->component_count(),
              static_cast<std::size_t>(kUsedTypes + kRegisteredOnlyTypes) + 1);
    ASSERT_GT(w->component_count(), 512U);
    EXPECT_EQ(w->signature_of(e), all);
    EXPECT_TRUE(tags_hold_their_values(*w, e, used));

    // Removing types from different signature words (ids are N + 1).
    w->erase<Tag<0>, Tag<62>, Tag<63>, Tag<127>, Tag<200>>(e);
    signature expected = all;
    for (const int n : {0, 62, 63, 127, 200}) {
        expected.reset(static_cast<ecsnet::ecs::component_id>(n + 1));
    }
    EXPECT_EQ(w->signature_of(e), expected);
    EXPECT_EQ(w->signature_of(e).count(), static_cast<std::size_t>(kUsedTypes) - 5);
    EXPECT_FALSE(w->has<Tag<63>>(e));
    EXPECT_TRUE(w->has<Tag<64>>(e));

    // destroy() walks the wide row and fires on_destroy for the last type too.
    int destroyed_last = 0;
    w->on_destroy<Tag<kUsedTypes - 1>>().connect([&](World&, Entity) { ++destroyed_last; });
    w->destroy(e);
    EXPECT_EQ(destroyed_last, 1);
    EXPECT_TRUE(w->storage<Tag<kUsedTypes - 1>>().empty());
    EXPECT_TRUE(w->storage<Tag<1>>().empty());
    EXPECT_EQ(w->get<Position>(bystander), (Position{1, 1}));
    EXPECT_EQ(w->signature_of(bystander), signature{}.set(*w->component_of<Position>()));
}

// ---- debug names ----------------------------------------------------------------------------

TEST(WorldNames, NamesAreSetReadAndDroppedOnDestroy) {
    const auto w = World::make(reuse_at_once());
    const Entity e = w->create();
    const Entity other = w->create();
    EXPECT_TRUE(w->name(e).empty());
    w->set_name(e, "player");
    w->set_name(other, "crate");
    EXPECT_EQ(w->name(e), "player");
    w->set_name(e, "hero");
    EXPECT_EQ(w->name(e), "hero");

    w->destroy(e);
    EXPECT_TRUE(w->name(e).empty());
    const Entity again = w->create();
    ASSERT_EQ(again.index(), e.index());
    EXPECT_TRUE(w->name(again).empty());  // the new owner does not inherit it
    EXPECT_EQ(w->name(other), "crate");
}

// ---- signals --------------------------------------------------------------------------------

struct Event {
    std::string what;
    Entity entity;
    bool operator==(const Event&) const = default;
};

void PrintTo(const Event& e, std::ostream* os) {
    *os << e.what << '@' << e.entity;
}

TEST(WorldSignals, FireInOrderWithWorldAndEntity) {
    const auto w = World::make();
    std::vector<Event> events;
    std::vector<Position> seen;
    const auto record = [&](const char* what) {
        return [&, what](World& world, Entity e) {
            EXPECT_EQ(&world, w.get());
            events.push_back(Event{what, e});
            seen.push_back(world.get<Position>(e));
        };
    };
    w->on_construct<Position>().connect(record("construct"));
    w->on_update<Position>().connect(record("update"));
    w->on_destroy<Position>().connect(record("destroy"));

    const Entity e = w->create();
    const Entity f = w->create();
    w->emplace<Position>(e, 1, 0);
    w->replace<Position>(e, 2, 0);
    w->patch<Position>(e, [](Position& p) { p.x = 3; });
    w->emplace_or_replace<Position>(e, 4, 0);
    w->emplace_or_replace<Position>(f, 5, 0);
    w->erase<Position>(e);
    w->emplace<Velocity>(e, 0, 0);  // another type: no Position event

    EXPECT_THAT(events,
                ElementsAre(Event{"construct", e}, Event{"update", e}, Event{"update", e},
                            Event{"update", e}, Event{"construct", f}, Event{"destroy", e}));
    // Construct and update listeners see the new value, destroy listeners the last one.
    EXPECT_THAT(seen, ElementsAre(Position{1, 0}, Position{2, 0}, Position{3, 0}, Position{4, 0},
                                  Position{5, 0}, Position{4, 0}));
}

TEST(WorldSignals, OnDestroyFiresBeforeRemoval) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Health>(e, 7);
    bool had_it = false;
    int value = 0;
    w->on_destroy<Health>().connect([&](World& world, Entity x) {
        had_it = world.has<Health>(x);
        value = world.get<Health>(x).hp;
    });
    EXPECT_EQ(w->remove<Health>(e), 1U);
    EXPECT_TRUE(had_it);
    EXPECT_EQ(value, 7);
    EXPECT_FALSE(w->has<Health>(e));
}

TEST(WorldSignals, DestroyFiresOnDestroyForEachComponentWhileStillReadable) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    std::vector<std::string> calls;
    w->on_destroy<Position>().connect([&](World& world, Entity x) {
        EXPECT_TRUE(world.valid(x));
        EXPECT_EQ(world.get<Position>(x), (Position{1, 2}));
        calls.emplace_back("position");
    });
    w->on_destroy<Velocity>().connect([&](World& world, Entity x) {
        EXPECT_TRUE(world.valid(x));
        EXPECT_EQ(world.get<Velocity>(x), (Velocity{3, 4}));
        calls.emplace_back("velocity");
    });
    w->on_destroy<Health>().connect([&](World&, Entity) { calls.emplace_back("health"); });

    w->destroy(e);

    EXPECT_THAT(calls, ElementsAre("position", "velocity"));  // component id order
    EXPECT_FALSE(w->valid(e));
}

TEST(WorldSignals, ClearFiresOnDestroyForEachComponent) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Health>(e, 3);
    int fired = 0;
    w->on_destroy<Position>().connect([&](World&, Entity) { ++fired; });
    w->on_destroy<Health>().connect([&](World&, Entity) { ++fired; });
    w->clear(e);
    EXPECT_EQ(fired, 2);
}

// Issue 12.4: structural operations are all-or-nothing with respect to their checks and
// listeners. Every on_destroy listener runs while the entity is still whole; one that throws
// leaves every component in place and the change set unchanged.
TEST(WorldAtomicity, AFailingDestroyLeavesEveryComponentInPlace) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    w->emplace<Health>(e, 5);
    w->set_name(e, "victim");
    (void)w->take_changes();
    std::vector<std::string> seen;
    w->on_destroy<Position>().connect([&](World& world, Entity x) {
        seen.push_back("position sees " + std::to_string(world.signature_of(x).count()));
    });
    const auto refuse = w->on_destroy<Health>().connect([&](World& world, Entity x) {
        seen.push_back("health sees " + std::to_string(world.signature_of(x).count()));
        throw std::runtime_error("listener refuses");
    });

    EXPECT_THROW(w->destroy(e), std::runtime_error);
    EXPECT_THAT(seen, ElementsAre("position sees 3", "health sees 3"));
    ASSERT_TRUE(w->valid(e));
    EXPECT_EQ(w->get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(w->get<Velocity>(e), (Velocity{3, 4}));
    EXPECT_EQ(w->get<Health>(e), (Health{5}));
    EXPECT_EQ(w->signature_of(e).count(), 3U);
    EXPECT_EQ(w->storage<Position>().size(), 1U);
    EXPECT_EQ(w->name(e), "victim");
    EXPECT_TRUE(w->take_changes().empty());

    w->on_destroy<Health>().disconnect(refuse);
    w->destroy(e);
    EXPECT_FALSE(w->valid(e));
    EXPECT_EQ(w->storage<Position>().size(), 0U);
    EXPECT_EQ(w->storage<Health>().size(), 0U);
    EXPECT_THAT(w->take_changes().destroyed, ElementsAre(e));
}

TEST(WorldAtomicity, RemovingSeveralTypesChecksThemAllFirst) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Position>(e, 1, 2);
    w->emplace<Velocity>(e, 3, 4);
    (void)w->take_changes();

    EXPECT_THROW((w->erase<Position, Health>(e)), component_missing);
    EXPECT_TRUE((w->all_of<Position, Velocity>(e)));
    EXPECT_EQ(w->signature_of(e).count(), 2U);
    EXPECT_TRUE(w->take_changes().empty());

    // A throwing listener of the second type stops the removal of both.
    const auto refuse = w->on_destroy<Velocity>().connect(
        [](World&, Entity) { throw std::runtime_error("listener refuses"); });
    EXPECT_THROW((w->erase<Position, Velocity>(e)), std::runtime_error);
    EXPECT_THROW((void)(w->remove<Position, Velocity>(e)), std::runtime_error);
    EXPECT_THROW(w->clear(e), std::runtime_error);
    EXPECT_TRUE((w->all_of<Position, Velocity>(e)));
    EXPECT_EQ(w->signature_of(e).count(), 2U);
    EXPECT_TRUE(w->take_changes().empty());

    w->on_destroy<Velocity>().disconnect(refuse);
    w->erase<Position, Velocity>(e);
    EXPECT_EQ(w->signature_of(e).count(), 0U);
    const auto changes = w->take_changes();
    ASSERT_NE(changes.find<Position>(), nullptr);
    ASSERT_NE(changes.find<Velocity>(), nullptr);
    EXPECT_THAT(changes.find<Position>()->removed, ElementsAre(e));
    EXPECT_THAT(changes.find<Velocity>()->removed, ElementsAre(e));
}

TEST(WorldSignals, DisconnectedListenersAreNotCalled) {
    const auto w = World::make();
    int fired = 0;
    const auto id = w->on_construct<Health>().connect([&](World&, Entity) { ++fired; });
    const Entity e = w->create();
    w->emplace<Health>(e, 1);
    EXPECT_TRUE(w->on_construct<Health>().disconnect(id));
    w->erase<Health>(e);
    w->emplace<Health>(e, 1);
    EXPECT_EQ(fired, 1);
}

// ---- index recycling ------------------------------------------------------------------------

TEST(WorldRecycling, DefaultOptionsReuseAFreedIndexAtOnceAtTheNextVersion) {
    const auto w = World::make();
    const Entity e = w->create();
    const auto stale = w->handle(e);
    w->destroy(e);
    const Entity next = w->create();
    EXPECT_EQ(next, (Entity{e.index(), e.version() + 1}));
    EXPECT_FALSE(w->valid(e));
    EXPECT_FALSE(stale.valid()) << "the version tells the stale handle apart";
}

TEST(WorldRecycling, MinFreeIndicesDelaysReuse) {
    world_options options;
    options.entities.min_free_indices = 2;
    const auto w = World::make(options);
    const Entity a = w->create();  // 0
    const Entity b = w->create();  // 1
    const Entity c = w->create();  // 2
    w->destroy(a);
    w->destroy(b);
    EXPECT_EQ(w->create().index(), 3U);  // two free: not more than the minimum

    w->destroy(c);  // three free: the oldest comes back, one version up
    const Entity reused = w->create();
    EXPECT_EQ(reused, (Entity{a.index(), a.version() + 1}));
    EXPECT_FALSE(w->valid(a));
    EXPECT_TRUE(w->valid(reused));
    EXPECT_EQ(w->create().index(), 4U);
}

TEST(WorldRecycling, ZeroMinFreeIndicesReusesAtOnceAtANewVersion) {
    const auto w = World::make(reuse_at_once());
    Entity e = w->create();
    for (std::uint32_t version = 2; version < 6; ++version) {
        w->destroy(e);
        e = w->create();
        EXPECT_EQ(e, (Entity{0, version}));
    }
}

// ---- property test --------------------------------------------------------------------------

struct PropA {
    int v;
};
struct PropB {
    int v;
};
struct PropC {
    int v;
};

using ModelEntity = std::tuple<std::optional<int>, std::optional<int>, std::optional<int>>;

template <typename T>
std::optional<int>& slot_of(ModelEntity& m) {
    if constexpr (std::is_same_v<T, PropA>) {
        return std::get<0>(m);
    } else if constexpr (std::is_same_v<T, PropB>) {
        return std::get<1>(m);
    } else {
        return std::get<2>(m);
    }
}

// Calls fn(std::type_identity<T>{}) for the k-th property type.
template <typename Fn>
void with_type(unsigned k, Fn&& fn) {
    switch (k % 3) {
        case 0:
            fn(std::type_identity<PropA>{});
            break;
        case 1:
            fn(std::type_identity<PropB>{});
            break;
        default:
            fn(std::type_identity<PropC>{});
            break;
    }
}

class WorldProperty : public ::testing::Test {
protected:
    static constexpr std::uint64_t kSeed = 0x5eed'ec5'2024ULL;
    static constexpr int kOperations = 100'000;
    static constexpr int kCheckEvery = 500;
    static constexpr std::size_t kTargetPopulation = 200;

    std::shared_ptr<World> w_;
    std::map<Entity, ModelEntity> model_;
    std::vector<Entity> stale_;
    std::mt19937_64 rng_{kSeed};

    unsigned roll(unsigned n) { return static_cast<unsigned>(rng_() % n); }

    Entity pick_alive() {
        auto it = model_.begin();
        std::advance(it, roll(static_cast<unsigned>(model_.size())));
        return it->first;
    }

    void remember_stale(Entity e) {
        if (stale_.size() < 256) {
            stale_.push_back(e);
        } else {
            stale_[roll(256)] = e;
        }
    }

    void step() {
        if (model_.empty() || roll(100) < (model_.size() < kTargetPopulation ? 15U : 5U)) {
            const Entity e = w_->create();
            ASSERT_TRUE(w_->valid(e));
            ASSERT_FALSE(model_.contains(e)) << "create returned a live entity again: " << e;
            model_.emplace(e, ModelEntity{});
            return;
        }
        const unsigned op = roll(100);
        const Entity e = pick_alive();
        ModelEntity& m = model_.at(e);
        const int value = static_cast<int>(roll(1'000'000));
        if (op < 8) {
            w_->destroy(e);
            model_.erase(e);
            remember_stale(e);
        } else if (op < 10) {
            w_->clear(e);
            m = ModelEntity{};
        } else if (op < 15 && !stale_.empty()) {
            step_on_stale(stale_[roll(static_cast<unsigned>(stale_.size()))]);
        } else {
            with_type(roll(3), [&](auto type) {
                component_op<typename decltype(type)::type>(op, e, m, value);
            });
        }
    }

    template <typename T>
    void component_op(unsigned op, Entity e, ModelEntity& m, int value) {
        std::optional<int>& slot = slot_of<T>(m);
        const bool present = slot.has_value();
        if (op < 35) {
            if (present) {
                ASSERT_THROW(w_->emplace<T>(e, value), component_exists) << e;
            } else {
                ASSERT_EQ(w_->emplace<T>(e, value).v, value);
                slot = value;
            }
        } else if (op < 45) {
            if (present) {
                ASSERT_EQ(w_->replace<T>(e, value).v, value);
                slot = value;
            } else {
                ASSERT_THROW(w_->replace<T>(e, value), component_missing) << e;
            }
        } else if (op < 55) {
            if (present) {
                w_->patch<T>(e, [&](T& c) { c.v += value; });
                *slot += value;
            } else {
                ASSERT_THROW(w_->patch<T>(e, [](T&) {}), component_missing) << e;
            }
        } else if (op < 65) {
            ASSERT_EQ(w_->emplace_or_replace<T>(e, value).v, value);
            slot = value;
        } else if (op < 85) {
            if (present) {
                w_->erase<T>(e);
                slot.reset();
            } else {
                ASSERT_THROW(w_->erase<T>(e), component_missing) << e;
            }
        } else {
            ASSERT_EQ(w_->remove<T>(e), present ? 1U : 0U);
            slot.reset();
        }
    }

    void step_on_stale(Entity e) {
        ASSERT_FALSE(w_->valid(e)) << e;
        ASSERT_FALSE(w_->has<PropA>(e));
        ASSERT_EQ(w_->try_get<PropB>(e), nullptr);
        ASSERT_FALSE(w_->try_destroy(e));
        switch (roll(4)) {
            case 0:
                ASSERT_THROW(w_->emplace<PropA>(e, 1), invalid_entity) << e;
                break;
            case 1:
                ASSERT_THROW(w_->patch<PropB>(e, [](PropB&) {}), invalid_entity) << e;
                break;
            case 2:
                ASSERT_THROW(w_->erase<PropC>(e), invalid_entity) << e;
                break;
            default:
                ASSERT_THROW(w_->destroy(e), invalid_entity) << e;
                break;
        }
    }

    template <typename T>
    void check_type(Entity e, ModelEntity& m, signature& expected) {
        const std::optional<int>& slot = slot_of<T>(m);
        ASSERT_EQ(w_->has<T>(e), slot.has_value()) << e << " " << ecsnet::ecs::type_name_v<T>;
        if (slot.has_value()) {
            ASSERT_EQ(w_->get<T>(e).v, *slot) << e << " " << ecsnet::ecs::type_name_v<T>;
            expected.set(*w_->component_of<T>());
        }
    }

    void check() {
        ASSERT_EQ(w_->alive(), model_.size());
        std::size_t counts[3] = {0, 0, 0};
        std::set<Entity> with_ab;
        for (auto& [e, m] : model_) {
            ASSERT_TRUE(w_->valid(e)) << e;
            signature expected;
            check_type<PropA>(e, m, expected);
            check_type<PropB>(e, m, expected);
            check_type<PropC>(e, m, expected);
            ASSERT_EQ(w_->signature_of(e), expected) << e;
            counts[0] += std::get<0>(m).has_value() ? 1U : 0U;
            counts[1] += std::get<1>(m).has_value() ? 1U : 0U;
            counts[2] += std::get<2>(m).has_value() ? 1U : 0U;
            if (std::get<0>(m) && std::get<1>(m)) {
                with_ab.insert(e);
            }
        }
        for (const Entity e : stale_) {
            ASSERT_FALSE(w_->valid(e)) << e;
        }
        ASSERT_EQ(w_->storage<PropA>().size(), counts[0]);
        ASSERT_EQ(w_->storage<PropB>().size(), counts[1]);
        ASSERT_EQ(w_->storage<PropC>().size(), counts[2]);

        std::set<Entity> visited;
        for (auto [e, a, b] : w_->view<const PropA, const PropB>()) {
            ASSERT_TRUE(visited.insert(e).second) << "visited twice: " << e;
            ASSERT_EQ(a.v, *std::get<0>(model_.at(e)));
            ASSERT_EQ(b.v, *std::get<1>(model_.at(e)));
        }
        ASSERT_EQ(visited, with_ab);
    }

    void run(std::size_t min_free) {
        world_options options;
        options.entities.min_free_indices = min_free;
        w_ = World::make(options);
        SCOPED_TRACE("seed " + std::to_string(kSeed) + ", min_free_indices " +
                     std::to_string(min_free));
        for (int i = 1; i <= kOperations; ++i) {
            step();
            ASSERT_FALSE(HasFatalFailure()) << "operation " << i;
            if (i % kCheckEvery == 0) {
                check();
                ASSERT_FALSE(HasFatalFailure()) << "check after operation " << i;
                w_->discard_changes();
            }
        }
        check();
    }
};

TEST_F(WorldProperty, RandomOperationsMatchAReferenceModelWithImmediateReuse) {
    run(0);
}

TEST_F(WorldProperty, RandomOperationsMatchAReferenceModelWithDelayedReuse) {
    run(8);
}

// ---- persistence: save_entities / restore_entities / revive --------------------------------

world_options immediate_reuse() {
    world_options options;
    options.entities.min_free_indices = 0;
    return options;
}

// A world after some history: live entities, freed ones waiting in a non-sorted order, one
// index reused at version 2.
std::shared_ptr<World> world_with_history() {
    auto w = World::make(immediate_reuse());
    std::vector<Entity> entities;
    for (int i = 0; i < 8; ++i) {
        entities.push_back(w->create());
    }
    for (const std::uint32_t index : {6U, 1U, 4U}) {
        w->destroy(entities[index]);
    }
    (void)w->create();  // 6 at version 2
    w->discard_changes();
    return w;
}

TEST(WorldPersistence, RestoreGivesTheSameIdsAndRecyclingOrder) {
    auto original = world_with_history();
    auto restored = World::make(immediate_reuse());
    restored->restore_entities(original->save_entities());

    std::vector<Entity> a;
    std::vector<Entity> b;
    original->each([&](Entity e) { a.push_back(e); });
    restored->each([&](Entity e) { b.push_back(e); });
    EXPECT_EQ(a, b);
    EXPECT_EQ(restored->alive(), 6U);
    EXPECT_TRUE(restored->valid({6, 2}));
    EXPECT_FALSE(restored->valid({6, 1}));
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(restored->create(), original->create()) << "create #" << i;
    }
}

TEST(WorldPersistence, RestoredEntitiesAppearAsCreatedInTheNextChangeSet) {
    auto original = world_with_history();
    auto restored = World::make(immediate_reuse());
    restored->restore_entities(original->save_entities());
    const auto changes = restored->take_changes();
    std::set<Entity> created{changes.created.begin(), changes.created.end()};
    std::set<Entity> alive;
    original->each([&](Entity e) { alive.insert(e); });
    EXPECT_EQ(created, alive);
    EXPECT_EQ(changes.created.size(), alive.size()) << "each once";
    EXPECT_TRUE(changes.destroyed.empty());
    EXPECT_TRUE(restored->take_changes().created.empty()) << "only in the first change set";
}

TEST(WorldPersistence, ComponentsAddedAfterRestoreOnTheSameTickAreNotSeparateUpdates) {
    // The checkpoint's values go in with emplace right after restore_entities: they belong to
    // the created entities, not to updates.
    auto original = world_with_history();
    auto restored = World::make(immediate_reuse());
    restored->restore_entities(original->save_entities());
    restored->emplace<Health>(Entity{6, 2}, Health{9});
    const auto changes = restored->take_changes();
    for (const auto& c : changes.components) {
        EXPECT_TRUE(c.updated.empty()) << c.name;
        EXPECT_TRUE(c.removed.empty()) << c.name;
    }
    EXPECT_EQ(restored->get<Health>(Entity{6, 2}).hp, 9);
}

TEST(WorldPersistence, RestoreIsRefusedOnAWorldThatHadAnEntity) {
    const auto saved = world_with_history()->save_entities();
    auto w = World::make();
    const Entity e = w->create();
    w->destroy(e);  // none alive, but it had one
    EXPECT_THAT(message_of<std::logic_error>([&] { w->restore_entities(saved); }),
                HasSubstr("never had an entity"));
    EXPECT_EQ(w->alive(), 0U);
    EXPECT_EQ(w->entities().slots(), 1U);
    EXPECT_EQ(w->create(), (Entity{0, 2})) << "the world is as it was";
}

TEST(WorldPersistence, InconsistentStateIsRefusedAndTheWorldStaysEmpty) {
    auto saved = world_with_history()->save_entities();
    saved.free.push_back(0);  // alive
    auto w = World::make();
    EXPECT_THROW(w->restore_entities(saved), std::invalid_argument);
    EXPECT_EQ(w->alive(), 0U);
    EXPECT_EQ(w->entities().slots(), 0U);
    EXPECT_TRUE(w->take_changes().created.empty());
}

TEST(WorldPersistence, HandlesFromRestoredIdsAreValidStaleOnesAreNot) {
    auto original = world_with_history();
    auto restored = World::make(immediate_reuse());
    restored->restore_entities(original->save_entities());
    const auto live = restored->handle(Entity{6, 2});
    const auto stale = restored->handle(Entity{6, 1});
    const auto dead = restored->handle(Entity{1, 1});
    EXPECT_TRUE(live.valid());
    EXPECT_FALSE(stale.valid());
    EXPECT_FALSE(dead.valid());
    restored->emplace<Position>(Entity{6, 2}, Position{1, 2});
    EXPECT_THROW(restored->emplace<Position>(Entity{6, 1}, Position{3, 4}), invalid_entity);
    restored->destroy(Entity{6, 2});
    EXPECT_FALSE(live.valid());
}

TEST(WorldPersistence, ReviveRecreatesExactlyTheIdAndRecordsItAsCreated) {
    auto w = world_with_history();  // free: 1, 4 (version 2)
    const Entity revived = w->revive(Entity{4, 2});
    EXPECT_EQ(revived, (Entity{4, 2}));
    EXPECT_TRUE(w->valid(revived));
    w->emplace<Health>(revived, Health{3});
    const auto changes = w->take_changes();
    EXPECT_THAT(changes.created, ElementsAre(Entity{4, 2}));
    EXPECT_EQ(w->create(), (Entity{1, 2})) << "the revived index left the free queue";
    EXPECT_EQ(w->create(), (Entity{8, 1}));
}

TEST(WorldPersistence, ReviveBeyondTheEndAndRefusedOnAnAliveSlot) {
    auto w = World::make(immediate_reuse());
    (void)w->create();
    (void)w->take_changes();
    w->revive(Entity{3, 5});
    EXPECT_TRUE(w->valid({3, 5}));
    EXPECT_THAT(w->take_changes().created, ElementsAre(Entity{3, 5}));
    EXPECT_THROW(w->revive(Entity{3, 5}), std::invalid_argument);
    EXPECT_THROW(w->revive(Entity{0, 9}), std::invalid_argument);
    EXPECT_EQ(w->alive(), 2U);
    EXPECT_EQ(w->create(), (Entity{1, 1}));
    EXPECT_EQ(w->create(), (Entity{2, 1}));
    EXPECT_EQ(w->create(), (Entity{4, 1}));
}

TEST(WorldPersistence, DestroyThenReviveTheSameIndexInOneTick) {
    // Journal replay: a slot alive at an older version is destroyed, the journaled id revived.
    auto w = World::make(immediate_reuse());
    const Entity old = w->create();
    w->emplace<Health>(old, Health{1});
    (void)w->take_changes();
    w->destroy(old);
    w->revive(Entity{0, 4});
    w->emplace<Health>(Entity{0, 4}, Health{2});
    const auto changes = w->take_changes();
    EXPECT_THAT(changes.destroyed, ElementsAre(old));
    EXPECT_THAT(changes.created, ElementsAre(Entity{0, 4}));
    EXPECT_EQ(w->get<Health>(Entity{0, 4}).hp, 2);
    EXPECT_FALSE(w->valid(old));
}

}  // namespace world_test
