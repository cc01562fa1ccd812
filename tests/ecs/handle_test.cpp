#include "ecsnet/ecs/handle.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_set>

#include "ecsnet/ecs/world.hpp"

namespace handle_test {

using ecsnet::ecs::component_exists;
using ecsnet::ecs::component_missing;
using ecsnet::ecs::Entity;
using ecsnet::ecs::expired_world;
using ecsnet::ecs::Handle;
using ecsnet::ecs::invalid_entity;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using ::testing::AllOf;
using ::testing::HasSubstr;

struct Position {
    int x;
    int y;
    bool operator==(const Position&) const = default;
};
struct Velocity {
    int dx;
    int dy;
};
struct Health {
    int hp;
    bool operator==(const Health&) const = default;
};

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

std::shared_ptr<World> make_reusing_world() {
    world_options options;
    options.entities.min_free_indices = 0;
    return World::make(options);
}

// ---- validity -------------------------------------------------------------------------------

TEST(HandleValidity, DefaultHandleIsNotValid) {
    const Handle h;
    EXPECT_FALSE(h.valid());
    EXPECT_FALSE(static_cast<bool>(h));
    EXPECT_TRUE(h.expired());
    EXPECT_EQ(h.world(), nullptr);
    EXPECT_TRUE(h.entity().is_null());
}

TEST(HandleValidity, ValidWhileTheEntityLives) {
    const auto w = World::make();
    const Entity e = w->create();
    const Handle h = w->handle(e);
    EXPECT_TRUE(h.valid());
    EXPECT_TRUE(static_cast<bool>(h));
    EXPECT_FALSE(h.expired());
    EXPECT_EQ(h.entity(), e);
    EXPECT_EQ(h.world(), w);
}

TEST(HandleValidity, DoesNotKeepTheWorldAlive) {
    auto w = World::make();
    const Handle h = w->handle(w->create());
    EXPECT_EQ(w.use_count(), 1);
    w.reset();
    EXPECT_TRUE(h.expired());
}

TEST(HandleValidity, InvalidAfterDestroy) {
    const auto w = World::make();
    const Handle h = w->handle(w->create());
    w->destroy(h.entity());
    EXPECT_FALSE(h.valid());
    EXPECT_FALSE(h.expired());
}

TEST(HandleValidity, InvalidAfterTheSlotWasRecycledAtANewerVersion) {
    const auto w = make_reusing_world();
    const Handle old = w->handle(w->create());
    w->destroy(old.entity());
    const Entity now = w->create();
    ASSERT_EQ(now.index(), old.entity().index());
    ASSERT_GT(now.version(), old.entity().version());

    EXPECT_FALSE(old.valid());
    EXPECT_TRUE(w->handle(now).valid());
}

TEST(HandleValidity, InvalidAfterTheWorldIsGone) {
    auto w = World::make();
    const Handle h = w->handle(w->create());
    w.reset();
    EXPECT_FALSE(h.valid());
    EXPECT_TRUE(h.expired());
    EXPECT_EQ(h.world(), nullptr);
}

// ---- operations on a live entity ------------------------------------------------------------

TEST(HandleOperations, WorkOnALiveEntity) {
    const auto w = World::make();
    const Handle h = w->handle(w->create());

    h.emplace<Position>(1, 2);
    EXPECT_TRUE(h.has<Position>());
    EXPECT_EQ(h.get<Position>(), (Position{1, 2}));
    EXPECT_EQ(w->get<Position>(h.entity()), (Position{1, 2}));

    h.replace<Position>(3, 4);
    EXPECT_EQ(h.try_get<Position>(), (Position{3, 4}));
    h.patch<Position>([](Position& p) { p.x += 10; });
    EXPECT_EQ(h.get<Position>(), (Position{13, 4}));
    EXPECT_TRUE(h.try_patch<Position>([](Position& p) { p.y = 0; }));
    EXPECT_EQ(h.get<Position>(), (Position{13, 0}));
    h.emplace_or_replace<Position>(5, 6);
    EXPECT_EQ(h.get<Position>(), (Position{5, 6}));

    EXPECT_FALSE(h.try_emplace<Position>(0, 0));  // already there: unchanged
    EXPECT_EQ(h.get<Position>(), (Position{5, 6}));
    EXPECT_TRUE(h.try_emplace<Health>(9));
    EXPECT_EQ(h.get<Health>(), (Health{9}));

    h.erase<Position>();
    EXPECT_FALSE(h.has<Position>());
    EXPECT_EQ(h.try_get<Position>(), std::nullopt);
    EXPECT_FALSE(h.try_patch<Position>([](Position&) {}));
    EXPECT_EQ(h.remove<Position>(), 0U);
    EXPECT_EQ((h.remove<Position, Health>()), 1U);

    h.destroy();
    EXPECT_FALSE(w->valid(h.entity()));
}

TEST(HandleOperations, GetReturnsACopy) {
    const auto w = World::make();
    const Handle h = w->handle(w->create());
    h.emplace<Health>(5);
    static_assert(std::is_same_v<decltype(h.get<Health>()), Health>);
    static_assert(std::is_same_v<decltype(h.try_get<Health>()), std::optional<Health>>);
    Health copy = h.get<Health>();
    copy.hp = 99;
    EXPECT_EQ(copy.hp, 99);
    EXPECT_EQ(h.get<Health>().hp, 5);
}

TEST(HandleOperations, ComponentErrorsOnALiveEntityAreTheWorldErrors) {
    const auto w = World::make();
    const Handle h = w->handle(w->create());
    h.emplace<Health>(1);
    EXPECT_THROW(h.emplace<Health>(2), component_exists);
    EXPECT_THROW((void)h.get<Position>(), component_missing);
    w->register_component<Position>();
    EXPECT_THROW((void)h.get<Position>(), component_missing);
    EXPECT_THROW(h.erase<Position>(), component_missing);
    EXPECT_THROW(h.replace<Position>(1, 1), component_missing);
    EXPECT_THROW(h.patch<Position>([](Position&) {}), component_missing);
}

// ---- stale handles --------------------------------------------------------------------------

// A handle to entity 0:1 whose slot now holds 0:2, which has a Health and a Position.
class HandleStale : public ::testing::Test {
protected:
    void SetUp() override {
        old_ = w_->handle(w_->create());
        old_.emplace<Health>(1);
        old_.destroy();
        now_ = w_->create();
        ASSERT_EQ(now_, (Entity{0, 2}));
        w_->emplace<Health>(now_, 50);
        w_->emplace<Position>(now_, 5, 5);
    }

    void expect_untouched() const {
        EXPECT_TRUE(w_->valid(now_));
        EXPECT_EQ(w_->get<Health>(now_), (Health{50}));
        EXPECT_EQ(w_->get<Position>(now_), (Position{5, 5}));
        EXPECT_EQ(w_->alive(), 1U);
    }

    std::shared_ptr<World> w_ = make_reusing_world();
    Handle old_;
    Entity now_;
};

TEST_F(HandleStale, ThrowingFormsThrowInvalidEntityNamingTheEntity) {
    const auto names_it = AllOf(HasSubstr("entity 0:1"), HasSubstr("is now 0:2"));
    EXPECT_THAT(message_of<invalid_entity>([&] { old_.destroy(); }), names_it);
    EXPECT_THAT(message_of<invalid_entity>([&] { (void)old_.get<Health>(); }), names_it);
    EXPECT_THAT(message_of<invalid_entity>([&] { old_.emplace<Position>(1, 1); }), names_it);
    EXPECT_THAT(message_of<invalid_entity>([&] { old_.emplace_or_replace<Health>(2); }), names_it);
    EXPECT_THAT(message_of<invalid_entity>([&] { old_.replace<Health>(2); }), names_it);
    EXPECT_THAT(message_of<invalid_entity>([&] { old_.patch<Health>([](Health& h) { ++h.hp; }); }),
                names_it);
    EXPECT_THAT(message_of<invalid_entity>([&] { old_.erase<Health>(); }), names_it);
    expect_untouched();
}

TEST_F(HandleStale, TryFormsFailWithoutTouchingTheNewOwner) {
    EXPECT_FALSE(old_.valid());
    EXPECT_FALSE(old_.has<Health>());
    EXPECT_EQ(old_.try_get<Health>(), std::nullopt);
    EXPECT_FALSE(old_.try_emplace<Velocity>(1, 1));
    EXPECT_FALSE(old_.try_patch<Health>([](Health& h) { h.hp = 0; }));
    EXPECT_EQ((old_.remove<Health, Position>()), 0U);
    EXPECT_FALSE(old_.try_destroy());
    expect_untouched();
}

TEST(HandleDestroyed, TryFormsFailAfterAPlainDestroy) {
    const auto w = World::make();
    const Handle h = w->handle(w->create());
    h.emplace<Health>(3);
    EXPECT_TRUE(h.try_destroy());
    EXPECT_FALSE(h.try_destroy());
    EXPECT_FALSE(h.has<Health>());
    EXPECT_EQ(h.try_get<Health>(), std::nullopt);
    EXPECT_FALSE(h.try_emplace<Health>(1));
    EXPECT_FALSE(h.try_patch<Health>([](Health&) {}));
    EXPECT_EQ(h.remove<Health>(), 0U);
    EXPECT_THAT(message_of<invalid_entity>([&] { (void)h.get<Health>(); }),
                AllOf(HasSubstr("entity 0:1"), HasSubstr("destroyed")));
}

// ---- handles into a dead world --------------------------------------------------------------

class HandleExpiredWorld : public ::testing::Test {
protected:
    void SetUp() override {
        auto w = World::make();
        (void)w->create();
        h_ = w->handle(w->create());
        h_.emplace<Health>(7);
    }  // the only owner goes away here

    Handle h_;
};

TEST_F(HandleExpiredWorld, ThrowingFormsThrowExpiredWorld) {
    ASSERT_TRUE(h_.expired());
    const auto names_it = AllOf(HasSubstr("1:1"), HasSubstr("no longer exists"));
    EXPECT_THAT(message_of<expired_world>([&] { h_.destroy(); }), names_it);
    EXPECT_THAT(message_of<expired_world>([&] { (void)h_.get<Health>(); }), names_it);
    EXPECT_THAT(message_of<expired_world>([&] { h_.emplace<Position>(1, 1); }), names_it);
    EXPECT_THAT(message_of<expired_world>([&] { h_.emplace_or_replace<Health>(1); }), names_it);
    EXPECT_THAT(message_of<expired_world>([&] { h_.replace<Health>(1); }), names_it);
    EXPECT_THAT(message_of<expired_world>([&] { h_.patch<Health>([](Health&) {}); }), names_it);
    EXPECT_THAT(message_of<expired_world>([&] { h_.erase<Health>(); }), names_it);
}

TEST_F(HandleExpiredWorld, TryFormsReturnFalse) {
    EXPECT_FALSE(h_.valid());
    EXPECT_FALSE(h_.has<Health>());
    EXPECT_EQ(h_.try_get<Health>(), std::nullopt);
    EXPECT_FALSE(h_.try_emplace<Position>(1, 1));
    EXPECT_FALSE(h_.try_patch<Health>([](Health&) {}));
    EXPECT_EQ(h_.remove<Health>(), 0U);
    EXPECT_FALSE(h_.try_destroy());
    EXPECT_EQ(h_.entity(), (Entity{1, 1}));  // still tells which entity it was
}

// ---- equality and hashing -------------------------------------------------------------------

TEST(HandleEquality, ComparesWorldIndexAndVersion) {
    const auto w = make_reusing_world();
    const Entity a = w->create();
    const Entity b = w->create();
    EXPECT_EQ(w->handle(a), w->handle(a));
    EXPECT_NE(w->handle(a), w->handle(b));

    w->destroy(a);
    const Entity a2 = w->create();
    ASSERT_EQ(a2.index(), a.index());
    EXPECT_NE(w->handle(a), w->handle(a2));  // same index, other version

    EXPECT_EQ(Handle{}, Handle{});
    EXPECT_NE(Handle{}, w->handle(b));
}

TEST(HandleEquality, TheSameEntityInTwoWorldsIsNotEqual) {
    const auto w1 = World::make();
    const auto w2 = World::make();
    const Entity e1 = w1->create();
    const Entity e2 = w2->create();
    ASSERT_EQ(e1, e2);
    EXPECT_NE(w1->handle(e1), w2->handle(e2));
    EXPECT_NE(Handle(w1, e1), Handle(std::weak_ptr<World>{}, e1));
}

TEST(HandleEquality, StaysComparableAfterTheWorldDied) {
    auto w1 = World::make();
    const auto w2 = World::make();
    const Entity e = w1->create();
    (void)w2->create();
    const Handle a = w1->handle(e);
    const Handle b = w1->handle(e);
    const Handle other = w2->handle(e);
    w1.reset();
    EXPECT_EQ(a, b);
    EXPECT_NE(a, other);
    // A handle to a dead world does not turn equal to the default (empty) handle.
    EXPECT_NE(a, Handle{});
}

TEST(HandleHash, EqualHandlesHashEquallyAndWorkInUnorderedSets) {
    const auto w1 = World::make();
    const auto w2 = World::make();
    const Entity a = w1->create();
    const Entity b = w1->create();
    (void)w2->create();

    const std::hash<Handle> hash;
    EXPECT_EQ(hash(w1->handle(a)), hash(w1->handle(a)));

    std::unordered_set<Handle> set;
    EXPECT_TRUE(set.insert(w1->handle(a)).second);
    EXPECT_FALSE(set.insert(w1->handle(a)).second);
    EXPECT_TRUE(set.insert(w1->handle(b)).second);
    EXPECT_TRUE(set.insert(w2->handle(a)).second);  // same entity value, other world
    EXPECT_EQ(set.size(), 3U);
    EXPECT_EQ(set.count(w1->handle(b)), 1U);
    EXPECT_EQ(set.count(Handle{}), 0U);
}

}  // namespace handle_test
