#include "ecsnet/ecs/view.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ecsnet/ecs/config.hpp"
#include "ecsnet/ecs/world.hpp"

namespace view_test {

using ecsnet::ecs::component_missing;
using ecsnet::ecs::Entity;
using ecsnet::ecs::exclude;
using ecsnet::ecs::iteration_invalidated;
using ecsnet::ecs::World;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

struct Position {
    int x;
    int y;
};
struct Velocity {
    int dx;
    int dy;
};
struct Health {
    int hp;
};
struct Frozen {};
struct NeverUsed {
    int v;
};
struct AlsoNeverUsed {};

template <typename View>
std::vector<Entity> entities_of(const View& view) {
    std::vector<Entity> out;
    for (const auto& item : view) {
        out.push_back(std::get<0>(item));
    }
    return out;
}

// e0: P V, e1: P, e2: V, e3: P V H, e4: nothing, e5: P V Frozen.
class ViewFixture : public ::testing::Test {
protected:
    void SetUp() override {
        for (auto& e : e_) {
            e = w_->create();
        }
        w_->emplace<Position>(e_[0], 0, 0);
        w_->emplace<Velocity>(e_[0], 1, 1);
        w_->emplace<Position>(e_[1], 10, 10);
        w_->emplace<Velocity>(e_[2], 2, 2);
        w_->emplace<Position>(e_[3], 30, 30);
        w_->emplace<Velocity>(e_[3], 3, 3);
        w_->emplace<Health>(e_[3], 100);
        w_->emplace<Position>(e_[5], 50, 50);
        w_->emplace<Velocity>(e_[5], 5, 5);
        w_->emplace<Frozen>(e_[5]);
    }

    std::shared_ptr<World> w_ = World::make();
    Entity e_[6];
};

// ---- membership -----------------------------------------------------------------------------

TEST_F(ViewFixture, VisitsExactlyTheEntitiesWithEveryType) {
    EXPECT_THAT(entities_of(w_->view<Position, Velocity>()),
                UnorderedElementsAre(e_[0], e_[3], e_[5]));
    EXPECT_THAT(entities_of(w_->view<Velocity, Position>()),
                UnorderedElementsAre(e_[0], e_[3], e_[5]));
    EXPECT_THAT(entities_of(w_->view<Position>()),
                UnorderedElementsAre(e_[0], e_[1], e_[3], e_[5]));
    EXPECT_THAT(entities_of(w_->view<Position, Velocity, Health>()), ElementsAre(e_[3]));

    std::vector<Entity> via_each;
    w_->view<Position, Velocity>().each(
        [&](Entity e, Position&, Velocity&) { via_each.push_back(e); });
    EXPECT_THAT(via_each, UnorderedElementsAre(e_[0], e_[3], e_[5]));
}

TEST_F(ViewFixture, ExcludeLeavesOutEntitiesThatHaveTheType) {
    EXPECT_THAT(entities_of(w_->view<Position, Velocity>(exclude<Frozen>)),
                UnorderedElementsAre(e_[0], e_[3]));
    EXPECT_THAT(entities_of(w_->view<Position>(exclude<Health, Frozen>)),
                UnorderedElementsAre(e_[0], e_[1]));
    EXPECT_THAT(entities_of(w_->view<Position>(exclude<NeverUsed>)),
                UnorderedElementsAre(e_[0], e_[1], e_[3], e_[5]));

    std::vector<Entity> via_each;
    w_->view<Velocity>(exclude<Position>).each([&](Entity e, Velocity&) { via_each.push_back(e); });
    EXPECT_THAT(via_each, ElementsAre(e_[2]));
}

TEST_F(ViewFixture, ContainsAndGet) {
    const auto view = w_->view<Position, const Velocity>(exclude<Frozen>);
    EXPECT_TRUE(view.contains(e_[0]));
    EXPECT_FALSE(view.contains(e_[1]));  // no Velocity
    EXPECT_FALSE(view.contains(e_[5]));  // Frozen
    EXPECT_EQ(view.get<Position>(e_[3]).x, 30);
    EXPECT_EQ(view.get<const Velocity>(e_[3]).dx, 3);
    static_assert(std::is_same_v<decltype(view.get<Position>(e_[3])), Position&>);
    static_assert(std::is_same_v<decltype(view.get<const Velocity>(e_[3])), const Velocity&>);
    // An entity without the type asked for is an error in every build (ecs_config_test runs
    // the release form); one that has it but fails the view's other types or exclusions only
    // where ECSNET_ECS_CHECKS is on (contains(e) is the test).
    EXPECT_THROW((void)view.get<const Velocity>(e_[1]), component_missing);  // no Velocity
    EXPECT_THROW((void)view.get<Position>(e_[4]), component_missing);        // has nothing
    if constexpr (ecsnet::ecs::checks_enabled) {
        EXPECT_THROW((void)view.get<Position>(e_[1]), component_missing);  // not in view
        EXPECT_THROW((void)view.get<Position>(e_[5]), component_missing);  // Frozen
    }
    // get_unchecked() is EnTT's view.get: contains(e) is the caller's promise, checked only
    // where ECSNET_ECS_CHECKS is on (debug builds).
    EXPECT_EQ(view.get_unchecked<Position>(e_[3]).x, 30);
    static_assert(std::is_same_v<decltype(view.get_unchecked<Position>(e_[3])), Position&>);
    if constexpr (ecsnet::ecs::checks_enabled) {
        EXPECT_THROW((void)view.get_unchecked<Position>(e_[5]), component_missing);
    } else {
        EXPECT_EQ(view.get_unchecked<Position>(e_[1]).x, 10);
    }
}

TEST_F(ViewFixture, GetOnAStaleIdThrows) {
    const Entity stale = e_[3];
    w_->destroy(stale);
    const auto view = w_->view<const Position>();
    EXPECT_FALSE(view.contains(stale));
    EXPECT_THROW((void)view.get<const Position>(stale), component_missing);
}

TEST_F(ViewFixture, AViewOverANeverRegisteredTypeIsEmpty) {
    const auto view = w_->view<NeverUsed>();
    EXPECT_EQ(view.size_hint(), 0U);
    EXPECT_TRUE(view.begin() == view.end());
    int calls = 0;
    view.each([&](Entity, NeverUsed&) { ++calls; });
    EXPECT_EQ(calls, 0);
    EXPECT_THAT(entities_of(w_->view<Position, NeverUsed>()), IsEmpty());
    EXPECT_FALSE((w_->view<Position, NeverUsed>().contains(e_[0])));

    // Through a const world, nothing gets registered either.
    const World& cw = *w_;
    EXPECT_THAT(entities_of(cw.view<const AlsoNeverUsed>()), IsEmpty());
    EXPECT_THAT(entities_of(cw.view<const Position, const AlsoNeverUsed>()), IsEmpty());
    EXPECT_FALSE(w_->component_of<AlsoNeverUsed>().has_value());
}

// ---- driving storage ------------------------------------------------------------------------

TEST(ViewDriver, TheSmallestStorageDrivesTheIteration) {
    const auto w = World::make();
    std::vector<Entity> e;
    for (int i = 0; i < 10; ++i) {
        e.push_back(w->create());
        w->emplace<Position>(e.back(), i, 0);
    }
    // Velocity's packed order is 7, 2, 5 (plus one entity without Position).
    w->emplace<Velocity>(e[7], 7, 0);
    w->emplace<Velocity>(e[2], 2, 0);
    w->emplace<Velocity>(w->create(), -1, 0);
    w->emplace<Velocity>(e[5], 5, 0);

    const auto pv = w->view<Position, Velocity>();
    const auto vp = w->view<Velocity, Position>();
    EXPECT_EQ(pv.size_hint(), 4U);
    EXPECT_EQ(vp.size_hint(), 4U);
    EXPECT_EQ(w->view<Position>().size_hint(), 10U);

    // Iteration follows Velocity's order, whatever the order of the types.
    EXPECT_THAT(entities_of(pv), ElementsAre(e[7], e[2], e[5]));
    EXPECT_THAT(entities_of(vp), ElementsAre(e[7], e[2], e[5]));
    std::vector<int> order;
    pv.each([&](Position& p, Velocity&) { order.push_back(p.x); });
    EXPECT_THAT(order, ElementsAre(7, 2, 5));
}

// ---- iteration forms ------------------------------------------------------------------------

TEST_F(ViewFixture, RangeForWithStructuredBindingsWritesThrough) {
    for (auto [e, p, v] : w_->view<Position, const Velocity>()) {
        static_assert(std::is_same_v<decltype(e), Entity>);
        static_assert(std::is_same_v<decltype(p), Position&>);
        static_assert(std::is_same_v<decltype(v), const Velocity&>);
        EXPECT_EQ(&p, &w_->get<Position>(e));
        p.x += v.dx;
    }
    EXPECT_EQ(w_->get<Position>(e_[0]).x, 1);
    EXPECT_EQ(w_->get<Position>(e_[1]).x, 10);  // not in the view
    EXPECT_EQ(w_->get<Position>(e_[3]).x, 33);
    EXPECT_EQ(w_->get<Position>(e_[5]).x, 55);
}

TEST_F(ViewFixture, EachWithAndWithoutTheEntity) {
    // One type (the packed fast path).
    int sum = 0;
    w_->view<Position>().each([&](Position& p) { sum += p.x; });
    EXPECT_EQ(sum, 0 + 10 + 30 + 50);
    std::vector<Entity> seen;
    w_->view<Position>().each([&](Entity e, Position& p) {
        EXPECT_EQ(&p, &w_->get<Position>(e));
        p.y = -1;
        seen.push_back(e);
    });
    EXPECT_THAT(seen, UnorderedElementsAre(e_[0], e_[1], e_[3], e_[5]));
    EXPECT_EQ(w_->get<Position>(e_[1]).y, -1);

    // Several types.
    w_->view<Position, const Velocity>().each([](Position& p, const Velocity& v) { p.x = v.dx; });
    EXPECT_EQ(w_->get<Position>(e_[3]).x, 3);
    EXPECT_EQ(w_->get<Position>(e_[1]).x, 10);
    seen.clear();
    w_->view<const Position, const Velocity>(exclude<Frozen>)
        .each([&](Entity e, const Position& p, const Velocity& v) {
            EXPECT_EQ(p.x, v.dx);
            seen.push_back(e);
        });
    EXPECT_THAT(seen, UnorderedElementsAre(e_[0], e_[3]));
}

TEST_F(ViewFixture, AConstWorldGivesReadOnlyViews) {
    const World& cw = *w_;
    const auto view = cw.view<const Position, const Velocity>(exclude<Frozen, NeverUsed>);
    using item = decltype(*view.begin());
    static_assert(std::is_same_v<item, std::tuple<Entity, const Position&, const Velocity&>>);

    EXPECT_THAT(entities_of(view), UnorderedElementsAre(e_[0], e_[3]));
    int sum = 0;
    view.each([&](const Position& p, const Velocity& v) { sum += p.x + v.dx; });
    EXPECT_EQ(sum, 0 + 1 + 30 + 3);
}

// Issue 12.9: a read-only view hands out const references only, whatever the caller asks for.
TEST_F(ViewFixture, AReadOnlyViewYieldsOnlyConstReferences) {
    const auto view = w_->view<const Position, const Velocity>();
    static_assert(std::is_same_v<decltype(view.get<Position>(e_[0])), const Position&>);
    static_assert(std::is_same_v<decltype(view.get<const Position>(e_[0])), const Position&>);
    static_assert(std::is_same_v<decltype(view.get<Velocity>(e_[0])), const Velocity&>);
    using item = decltype(*view.begin());
    static_assert(std::is_same_v<item, std::tuple<Entity, const Position&, const Velocity&>>);
    // each() offers const references only: a fn taking Position& does not fit.
    using writer = void (*)(Position&, const Velocity&);
    static_assert(!std::is_invocable_v<writer, const Position&, const Velocity&>);

    const World& cw = *w_;
    const auto from_const = cw.view<const Position>();
    static_assert(std::is_same_v<decltype(from_const.get<Position>(e_[0])), const Position&>);
    static_assert(
        std::is_same_v<decltype(*from_const.begin()), std::tuple<Entity, const Position&>>);

    // A writing view gives const access where const is asked for.
    const auto mixed = w_->view<Position, const Velocity>();
    static_assert(std::is_same_v<decltype(mixed.get<const Position>(e_[0])), const Position&>);
    static_assert(std::is_same_v<decltype(mixed.get<Velocity>(e_[0])), const Velocity&>);

    EXPECT_EQ(view.get<Position>(e_[3]).x, 30);
    EXPECT_EQ(from_const.get<Position>(e_[1]).x, 10);
    EXPECT_EQ(mixed.get<Velocity>(e_[3]).dx, 3);
    EXPECT_TRUE(w_->take_changes().components.empty());  // none of the reads above is a write
}

// ---- change tracking ------------------------------------------------------------------------

TEST_F(ViewFixture, AWritingViewMarksEveryVisitedComponentUpdated) {
    (void)w_->take_changes();
    for (auto [e, p, v] : w_->view<Position, const Velocity>(exclude<Frozen>)) {
        (void)e;
        (void)p;
        (void)v;
    }
    auto changes = w_->take_changes();
    ASSERT_EQ(changes.components.size(), 1U);
    const auto* position = changes.find<Position>();
    ASSERT_NE(position, nullptr);
    EXPECT_THAT(position->updated, UnorderedElementsAre(e_[0], e_[3]));
    EXPECT_THAT(position->added, IsEmpty());
    EXPECT_THAT(position->removed, IsEmpty());

    w_->view<Velocity, Health>().each([](Velocity&, Health&) {});
    changes = w_->take_changes();
    ASSERT_NE(changes.find<Velocity>(), nullptr);
    ASSERT_NE(changes.find<Health>(), nullptr);
    EXPECT_THAT(changes.find<Velocity>()->updated, ElementsAre(e_[3]));
    EXPECT_THAT(changes.find<Health>()->updated, ElementsAre(e_[3]));
    EXPECT_EQ(changes.find<Position>(), nullptr);
}

TEST_F(ViewFixture, AWritingEachReturningBoolMarksOnlyWhereItReturnsTrue) {
    (void)w_->take_changes();
    // Multi-type (driven) loop: writes e_[3] only.
    w_->view<Position, const Velocity>().each([&](Entity e, Position& p, const Velocity&) {
        if (e != e_[3]) {
            return false;
        }
        p.x += 1;
        return true;
    });
    // Single-type loop: writes e_[1] only.
    w_->view<Position>().each([&](Entity e, Position& p) {
        p.y += e == e_[1] ? 1.0F : 0.0F;
        return e == e_[1];
    });
    auto changes = w_->take_changes();
    ASSERT_EQ(changes.components.size(), 1U);
    ASSERT_NE(changes.find<Position>(), nullptr);
    EXPECT_THAT(changes.find<Position>()->updated, UnorderedElementsAre(e_[1], e_[3]));
    EXPECT_EQ(w_->get<Position>(e_[3]).x, 31.0F);

    w_->view<Position>().each([](Position&) { return false; });
    EXPECT_TRUE(w_->take_changes().empty());
}

// Issue 12.9: every mutable reference a writing view hands out is a recorded write.
TEST_F(ViewFixture, AWritingViewsGetMarksTheComponentItHandsOut) {
    (void)w_->take_changes();
    const auto view = w_->view<Position, const Velocity>();
    view.get<Position>(e_[3]).x = 42;
    auto changes = w_->take_changes();
    ASSERT_NE(changes.find<Position>(), nullptr)
        << "a write through view.get<T>() was not recorded";
    EXPECT_THAT(changes.find<Position>()->updated, ElementsAre(e_[3]));
    EXPECT_EQ(changes.find<Velocity>(), nullptr);
    EXPECT_EQ(w_->get<Position>(e_[3]).x, 42);

    // Asking for const through the same view is a read.
    EXPECT_EQ(view.get<const Position>(e_[0]).x, 0);
    EXPECT_TRUE(w_->take_changes().empty());
}

TEST_F(ViewFixture, AReadOnlyViewRecordsNothing) {
    (void)w_->take_changes();
    int visited = 0;
    for (auto [e, p, v] : w_->view<const Position, const Velocity>()) {
        (void)e;
        (void)p;
        (void)v;
        ++visited;
    }
    w_->view<const Position>().each([&](const Position&) { ++visited; });
    const World& cw = *w_;
    cw.view<const Health>().each([&](const Health&) { ++visited; });
    EXPECT_EQ(visited, 3 + 4 + 1);
    EXPECT_TRUE(w_->take_changes().empty());
}

// ---- changes during iteration ---------------------------------------------------------------

class ViewInvalidation : public ViewFixture {
protected:
    void SetUp() override {
        if (!ecsnet::ecs::checks_enabled) {
            GTEST_SKIP() << "iteration checks are compiled out (ECSNET_ECS_CHECKS=0)";
        }
        ViewFixture::SetUp();
    }
};

TEST_F(ViewInvalidation, EmplacingAViewedTypeDuringRangeForThrows) {
    const auto loop = [&] {
        for (auto [e, p] : w_->view<Position>()) {
            (void)p;
            if (e == e_[0]) {
                w_->emplace<Position>(e_[2], 0, 0);
            }
        }
    };
    EXPECT_THROW(loop(), iteration_invalidated);
    EXPECT_TRUE(w_->has<Position>(e_[2]));  // the emplace itself happened
}

TEST_F(ViewInvalidation, EmplacingTheLookedUpTypeThrows) {
    // Position (4 entities) drives and Velocity (5) is looked up: a change to it counts too.
    w_->emplace<Velocity>(w_->create(), 9, 9);
    const auto view = w_->view<Position, Velocity>();
    ASSERT_EQ(view.size_hint(), 4U);
    const auto loop = [&] {
        view.each([&](Entity e, Position&, Velocity&) {
            if (e == e_[0]) {
                w_->emplace<Velocity>(e_[1], 0, 0);
            }
        });
    };
    EXPECT_THROW(loop(), iteration_invalidated);
}

TEST_F(ViewInvalidation, RemovingDuringEachThrows) {
    const auto loop = [&] {
        w_->view<Position, Velocity>().each(
            [&](Entity e, Position&, Velocity&) { w_->erase<Velocity>(e); });
    };
    EXPECT_THROW(loop(), iteration_invalidated);
}

TEST_F(ViewInvalidation, RemovingDuringSingleTypeEachThrows) {
    const auto loop = [&] {
        w_->view<const Position>().each([&](Entity e, const Position&) {
            if (e == e_[1]) {
                w_->erase<Position>(e_[3]);
            }
        });
    };
    EXPECT_THROW(loop(), iteration_invalidated);
}

TEST_F(ViewInvalidation, DestroyingAnEntityWithAViewedTypeThrows) {
    const auto range_for = [&] {
        for (auto [e, p, v] : w_->view<Position, const Velocity>()) {
            (void)p;
            (void)v;
            w_->destroy(e);
        }
    };
    EXPECT_THROW(range_for(), iteration_invalidated);

    const auto each = [&] {
        w_->view<const Position>().each([&](Entity e, const Position&) { w_->destroy(e); });
    };
    EXPECT_THROW(each(), iteration_invalidated);
}

TEST_F(ViewFixture, WritingValuesAndCreatingEntitiesDuringIterationIsAllowed) {
    std::vector<Entity> visited;
    std::vector<Entity> created;
    for (auto [e, p, v] : w_->view<Position, const Velocity>()) {
        p.x += v.dx;
        w_->patch<Position>(e, [](Position& q) { q.y += 1; });
        w_->emplace<Health>(e_[4], static_cast<int>(visited.size()));  // not viewed
        w_->erase<Health>(e_[4]);
        const Entity fresh = w_->create();
        w_->emplace<Health>(fresh, 1);
        created.push_back(fresh);
        visited.push_back(e);
    }
    w_->view<Position>().each([&](Entity e, Position& p) {
        p.x *= 2;
        const Entity fresh = w_->create();
        w_->emplace<Frozen>(fresh);
        created.push_back(fresh);
        visited.push_back(e);
    });

    EXPECT_THAT(visited, UnorderedElementsAre(e_[0], e_[3], e_[5], e_[0], e_[1], e_[3], e_[5]));
    EXPECT_EQ(w_->get<Position>(e_[0]).x, 2);
    EXPECT_EQ(w_->get<Position>(e_[0]).y, 1);
    EXPECT_EQ(w_->get<Position>(e_[1]).x, 20);
    EXPECT_EQ(w_->get<Position>(e_[3]).x, 66);
    EXPECT_EQ(w_->alive(), 6U + 7U);
    for (const Entity e : created) {
        EXPECT_TRUE(w_->valid(e));
    }
}

}  // namespace view_test
