// grid_interest and interest_manager over a real world with the demo's components: the policy
// follows the world's change sets, and collect() lists what a player should see.
#include "ecsnet/server/replication/interest.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <vector>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"

namespace interest_test {

using ecsnet::demo::Health;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::protocol::Owner;
using ecsnet::server::grid_interest;
using ecsnet::server::interest_manager;
using ecsnet::server::point;

class InterestTest : public testing::Test {
protected:
    InterestTest() {
        grid_ = &interest_.use_grid<Position>(10.0F, [](const Position& p) {
            return point{p.x, p.y};
        });
    }

    Entity at(float x, float y) {
        const Entity e = world_->create();
        world_->emplace<Position>(e, x, y);
        return e;
    }
    Entity owned_at(std::uint32_t owner, float x, float y) {
        const Entity e = at(x, y);
        world_->emplace<Owner>(e, owner);
        return e;
    }
    void tick() { interest_.update(*world_, world_->take_changes()); }

    // What `owner` sees, sorted; fails the test when an entity is listed twice.
    std::vector<Entity> seen_by(std::uint32_t owner) {
        std::vector<Entity> out;
        interest_.policy()->collect(*world_, owner, interest_.player(owner), out);
        std::sort(out.begin(), out.end());
        EXPECT_EQ(std::adjacent_find(out.begin(), out.end()), out.end())
            << "an entity was collected twice";
        return out;
    }
    static std::vector<Entity> sorted(std::vector<Entity> v) {
        std::sort(v.begin(), v.end());
        return v;
    }

    // Indices come back at once: index reuse within a tick is tested.
    std::shared_ptr<World> world_ =
        World::make(ecsnet::ecs::world_options{ecsnet::ecs::entity_pool_options{0}});
    interest_manager interest_;
    grid_interest* grid_{nullptr};
};

TEST_F(InterestTest, UseGridTurnsInterestOn) {
    EXPECT_TRUE(interest_.enabled());
    interest_manager off;
    EXPECT_FALSE(off.enabled());
    EXPECT_FALSE(off.player(1).focus.has_value());
    EXPECT_EQ(off.player(1).radius, off.default_settings().radius);
}

TEST_F(InterestTest, UpdateFollowsCreateMoveDestroy) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 5);  // cells -1..0 on each axis: [-10, 10)
    const Entity near = at(1, 1);
    const Entity far = at(100, 100);
    tick();
    EXPECT_EQ(grid_->grid().size(), 2U);
    EXPECT_EQ(seen_by(1), std::vector<Entity>{near});

    world_->replace<Position>(far, 2.0F, -3.0F);
    world_->replace<Position>(near, 50.0F, 0.0F);
    tick();
    EXPECT_EQ(seen_by(1), std::vector<Entity>{far}) << "moves follow Position updates";

    world_->destroy(far);
    tick();
    EXPECT_TRUE(seen_by(1).empty());
    EXPECT_EQ(grid_->grid().size(), 1U);
}

TEST_F(InterestTest, AnEntityWithoutPositionIsGlobal) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 5);
    const Entity placed_far = at(500, 500);
    const Entity bare = world_->create();  // never had a position
    world_->emplace<Health>(bare, 3);
    tick();
    EXPECT_EQ(seen_by(1), std::vector<Entity>{bare});
    EXPECT_EQ(seen_by(2), std::vector<Entity>{bare}) << "no focus: global ones still";

    world_->erase<Position>(placed_far);
    tick();
    EXPECT_EQ(seen_by(1), sorted({bare, placed_far})) << "lost its position: global";
    EXPECT_FALSE(grid_->grid().placed(placed_far));

    world_->emplace<Position>(placed_far, 1.0F, 1.0F);
    world_->emplace<Position>(bare, 900.0F, 900.0F);
    tick();
    EXPECT_EQ(seen_by(1), std::vector<Entity>{placed_far}) << "placed again: by position";
    EXPECT_TRUE(seen_by(2).empty());
}

TEST_F(InterestTest, CollectIsViewPlusOwnedPlusAlwaysPlusGlobalMinusNever) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 5);
    const Entity near = at(1, 1);
    const Entity near_owned = owned_at(1, 2, 2);      // in view and owned: once
    const Entity far_owned = owned_at(1, 400, -400);  // owned, out of view
    const Entity others = owned_at(2, 300, 300);      // another player's
    const Entity far = at(-300, 50);
    const Entity marked = at(700, 700);
    const Entity hidden = at(3, 3);  // in view, but never relevant
    tick();
    grid_->set_global(marked, true);
    interest_.always_relevant(1, far);
    interest_.never_relevant(1, hidden);
    EXPECT_EQ(seen_by(1), sorted({near, near_owned, far_owned, far, marked}));
    EXPECT_EQ(seen_by(2), sorted({others, marked})) << "player 2 has no focus";

    // never wins over ownership too, and undoing it restores the entity.
    interest_.never_relevant(1, far_owned);
    EXPECT_EQ(seen_by(1), sorted({near, near_owned, far, marked}));
    interest_.never_relevant(1, far_owned, false);
    interest_.always_relevant(1, far, false);
    grid_->set_global(marked, false);
    EXPECT_EQ(seen_by(1), sorted({near, near_owned, far_owned}));
    // always_relevant() lifts a never.
    interest_.always_relevant(1, hidden);
    EXPECT_EQ(seen_by(1), sorted({near, near_owned, far_owned, hidden}));
}

TEST_F(InterestTest, OwnershipFollowsTheOwnerComponent) {
    const Entity e = owned_at(1, 100, 100);
    tick();
    EXPECT_EQ(seen_by(1), std::vector<Entity>{e});
    world_->replace<Owner>(e, 2U);
    tick();
    EXPECT_TRUE(seen_by(1).empty());
    EXPECT_EQ(seen_by(2), std::vector<Entity>{e});
    world_->erase<Owner>(e);
    tick();
    EXPECT_TRUE(seen_by(2).empty());
    world_->emplace<Owner>(e, 3U);
    tick();
    EXPECT_EQ(seen_by(3), std::vector<Entity>{e});
    world_->destroy(e);
    tick();
    EXPECT_TRUE(seen_by(3).empty());
}

TEST_F(InterestTest, AReusedIndexIsTheNewEntityOnly) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 5);
    const Entity old_one = owned_at(1, 1, 1);
    tick();
    interest_.always_relevant(2, old_one);
    world_->destroy(old_one);
    const Entity new_one = at(500, 500);  // the same index, far away, nobody's
    ASSERT_EQ(new_one.index(), old_one.index());
    tick();
    EXPECT_TRUE(seen_by(1).empty()) << "neither the old one's cell nor its ownership remain";
    EXPECT_TRUE(seen_by(2).empty()) << "always_relevant(old) does not carry over";
    EXPECT_TRUE(interest_.player(2).always.empty()) << "dropped with the destroyed entity";
    interest_.set_focus(1, {500, 500});
    EXPECT_EQ(seen_by(1), std::vector<Entity>{new_one});
}

TEST_F(InterestTest, FollowMovesTheFocus) {
    const Entity avatar = at(100, 100);
    const Entity near_avatar = at(102, 101);
    const Entity origin = at(0, 0);
    tick();
    interest_.set_radius(1, 5);
    interest_.follow(1, avatar);
    tick();
    ASSERT_TRUE(interest_.player(1).focus.has_value());
    EXPECT_EQ(*interest_.player(1).focus, (point{100, 100}));
    EXPECT_EQ(seen_by(1), sorted({avatar, near_avatar}));

    world_->replace<Position>(avatar, 1.0F, 1.0F);
    tick();
    EXPECT_EQ(*interest_.player(1).focus, (point{1, 1}));
    EXPECT_EQ(seen_by(1), sorted({avatar, origin}));

    // Once the followed entity is gone the focus stays where it was last.
    world_->destroy(avatar);
    tick();
    EXPECT_EQ(*interest_.player(1).focus, (point{1, 1}));
    EXPECT_EQ(seen_by(1), std::vector<Entity>{origin});
}

TEST_F(InterestTest, PriorityOwnAboveNearAboveFar) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 100);
    const Entity own = owned_at(1, 90, 0);
    const Entity at_focus = at(0, 0);
    const Entity near = at(30, 0);
    const Entity edge = at(100, 0);
    const Entity beyond = at(0, 500);
    const Entity bare = world_->create();
    tick();
    const auto& p = interest_.player(1);
    const auto priority = [&](Entity e) { return interest_.policy()->priority(*world_, 1, p, e); };
    EXPECT_FLOAT_EQ(priority(own), 2.0F);
    EXPECT_FLOAT_EQ(priority(at_focus), 1.0F);
    EXPECT_GT(priority(at_focus), priority(near));
    EXPECT_GT(priority(near), priority(edge));
    EXPECT_FLOAT_EQ(priority(edge), 1.0F / 3.0F);
    EXPECT_FLOAT_EQ(priority(beyond), 1.0F / 3.0F) << "beyond the radius: the floor";
    EXPECT_FLOAT_EQ(priority(bare), 1.0F) << "no position: normal";
    for (const Entity e : {own, at_focus, near, edge, beyond, bare}) {
        EXPECT_GT(priority(e), 0.0F);
        EXPECT_TRUE(std::isfinite(priority(e)));
    }
    // Another player does not get player 1's ownership bonus.
    EXPECT_LT(interest_.policy()->priority(*world_, 2, p, own), 2.0F);
}

// The priority reads where an entity is from the grid: it follows moves, a position removed
// (priority of an entity without one), and moves made while the grid was not kept up to date.
TEST_F(InterestTest, PriorityFollowsMovesTrackedOrNot) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 100);
    const Entity e = at(0, 0);
    tick();
    const auto& p = interest_.player(1);
    const auto priority = [&] { return interest_.policy()->priority(*world_, 1, p, e); };
    EXPECT_FLOAT_EQ(priority(), 1.0F);
    world_->replace<Position>(e, 100.0F, 0.0F);
    tick();
    EXPECT_FLOAT_EQ(priority(), 1.0F / 3.0F);
    world_->erase<Position>(e);
    tick();
    EXPECT_FLOAT_EQ(priority(), 1.0F) << "no position: normal";
    world_->emplace<Position>(e, 50.0F, 0.0F);
    tick();
    EXPECT_FLOAT_EQ(priority(), 0.5F);

    // No view needed: the grid stops following moves, the priority does not.
    interest_.policy()->views_needed(false);
    world_->replace<Position>(e, 0.0F, 0.0F);
    tick();
    EXPECT_FLOAT_EQ(priority(), 1.0F);
}

// priorities() is priority() for many entities at once, read another way: a player owning a few
// entities is compared by index, one owning many through the table, a stale grid through the
// world. Each answer must be priority()'s.
TEST_F(InterestTest, PrioritiesAreEachEntitysPriority) {
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 100);
    interest_.set_focus(2, {50, 50});
    interest_.set_radius(2, 60);
    interest_.set_focus(3, {0, 0});  // radius 0: every priority is normal but the own ones
    interest_.set_radius(3, 0);
    std::vector<Entity> entities;
    for (int i = 0; i < 3; ++i) {
        entities.push_back(owned_at(1, static_cast<float>(10 * i), 5));
    }
    for (int i = 0; i < 12; ++i) {  // more than priorities() compares by index
        entities.push_back(owned_at(2, static_cast<float>(-20 * i), 40));
    }
    entities.push_back(owned_at(3, 500, 500));
    for (int i = 0; i < 40; ++i) {
        entities.push_back(
            at(static_cast<float>(i * 7 % 230) - 100.0F, static_cast<float>(i * 13 % 190) - 80.0F));
    }
    entities.push_back(world_->create());  // no position
    const Entity unowned_later = owned_at(1, 1, 1);
    entities.push_back(unowned_later);
    tick();
    world_->erase<Owner>(unowned_later);  // its owner leaves the table and the set
    tick();
    const auto check = [&](const char* when) {
        for (const std::uint32_t owner : {0U, 1U, 2U, 3U, 4U}) {
            const auto& p = interest_.player(owner);
            std::vector<float> batch(entities.size(), -1.0F);
            interest_.policy()->priorities(*world_, owner, p, entities, batch);
            for (std::size_t i = 0; i < entities.size(); ++i) {
                EXPECT_EQ(batch[i], interest_.policy()->priority(*world_, owner, p, entities[i]))
                    << when << ", owner " << owner << ", entity " << i;
            }
        }
    };
    check("tracked");
    EXPECT_FLOAT_EQ(interest_.policy()->priority(*world_, 2, interest_.player(2), entities[10]),
                    2.0F)
        << "owner 2's own entity through the table";
    // Moves while no view is needed leave the grid stale: both read the world.
    interest_.policy()->views_needed(false);
    for (std::size_t i = 15; i < 30; ++i) {
        world_->replace<Position>(entities[i], static_cast<float>(i), 0.0F);
    }
    tick();
    check("stale");
}

TEST_F(InterestTest, PriorityIsPositiveAndFiniteForAnyPosition) {
    // The byte budget sorts by accumulated priority: NaN would break the ordering.
    interest_.set_focus(1, {0, 0});
    interest_.set_radius(1, 100);
    constexpr float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr float inf = std::numeric_limits<float>::infinity();
    const Entity a = at(nan, 0);
    const Entity b = at(inf, -inf);
    tick();
    for (const Entity e : {a, b}) {
        const float priority = interest_.policy()->priority(*world_, 1, interest_.player(1), e);
        EXPECT_TRUE(std::isfinite(priority) && priority > 0.0F) << priority;
    }
}

TEST_F(InterestTest, WeightsArePositive) {
    EXPECT_FLOAT_EQ(interest_.weight(3), 1.0F);
    interest_.set_weight(3, 4.0F);
    EXPECT_FLOAT_EQ(interest_.weight(3), 4.0F);
    EXPECT_FLOAT_EQ(interest_.weight(2), 1.0F);
    for (const float bad : {0.0F, -1.0F, std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity()}) {
        EXPECT_THROW(interest_.set_weight(3, bad), std::invalid_argument) << bad;
    }
    EXPECT_FLOAT_EQ(interest_.weight(3), 4.0F) << "a refused weight changes nothing";
}

TEST_F(InterestTest, PlayerDefaultsAndBudget) {
    interest_.set_defaults(interest_manager::defaults{77.0F, 1000.0});
    EXPECT_EQ(interest_.player(9).radius, 77.0F);
    EXPECT_EQ(interest_.budget_of(interest_.player(9)), 1000.0);
    interest_.set_budget(9, 50.0);
    EXPECT_EQ(interest_.budget_of(interest_.player(9)), 50.0);
    interest_.forget(9);
    EXPECT_EQ(interest_.budget_of(interest_.player(9)), 1000.0);
}

}  // namespace interest_test
