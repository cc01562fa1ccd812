// The ECS as release builds compile it: this executable is built with ECSNET_ECS_CHECKS=0, so
// get_unchecked and view iteration take their unchecked paths. What must still hold there:
// the fast forms read the right values and record what they hand out for writing, and the
// checked forms (get, view.get, try_get, handles, writes, system access) keep checking.
#include "ecsnet/ecs/config.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <tuple>

#include "ecsnet/ecs/handle.hpp"
#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/ecs/world.hpp"

namespace {

using ecsnet::ecs::access_violation;
using ecsnet::ecs::component_access;
using ecsnet::ecs::component_missing;
using ecsnet::ecs::Entity;
using ecsnet::ecs::invalid_entity;
using ecsnet::ecs::World;
using ::testing::ElementsAre;

static_assert(!ecsnet::ecs::checks_enabled, "this test is built with ECSNET_ECS_CHECKS=0");

struct Position {
    int x;
    int y;
};
struct Velocity {
    int dx;
    int dy;
};

class UncheckedBuild : public ::testing::Test {
protected:
    void SetUp() override {
        for (auto& e : e_) {
            e = w_->create();
        }
        w_->emplace<Position>(e_[0], 1, 2);
        w_->emplace<Position>(e_[1], 3, 4);
        w_->emplace<Velocity>(e_[1], 5, 6);
        w_->emplace<Position>(e_[2], 7, 8);
        w_->destroy(e_[2]);
        stale_ = e_[2];
        e_[2] = w_->create();  // the same index at a new version
        w_->emplace<Position>(e_[2], 9, 10);
        w_->discard_changes();
    }

    std::shared_ptr<World> w_ =
        World::make(ecsnet::ecs::world_options{.entities = {.min_free_indices = 0}});
    Entity e_[3];
    Entity stale_;
};

TEST_F(UncheckedBuild, GetUncheckedReadsTheValuesOfPresentComponents) {
    ASSERT_EQ(stale_.index(), e_[2].index());
    EXPECT_EQ(w_->get_unchecked<Position>(e_[0]).x, 1);
    const auto [p, v] = w_->get_unchecked<Position, Velocity>(e_[1]);
    EXPECT_EQ(p.y, 4);
    EXPECT_EQ(v.dy, 6);
    EXPECT_EQ(w_->get_unchecked<Position>(e_[2]).x, 9);
    EXPECT_EQ(w_->view<const Position>().get_unchecked<const Position>(e_[2]).x, 9);
    EXPECT_EQ(w_->storage<Position>().get(e_[2]).y, 10);
}

// Issue 24.4: what the README promises holds in release builds too.
TEST_F(UncheckedBuild, GetAndViewGetStillCheck) {
    EXPECT_THROW((void)w_->get<Velocity>(e_[0]), component_missing);
    EXPECT_THROW((void)w_->get<Position>(stale_), invalid_entity);
    EXPECT_THROW((void)(w_->get<Position, Velocity>(stale_)), invalid_entity);
    const auto view = w_->view<const Position, const Velocity>();
    EXPECT_THROW((void)view.get<const Position>(stale_), component_missing);
    EXPECT_THROW((void)view.get<const Velocity>(e_[0]), component_missing) << "no Velocity";
    EXPECT_EQ(view.get<const Position>(e_[0]).x, 1) << "a Position, read in every build";
    EXPECT_EQ(view.get<const Velocity>(e_[1]).dy, 6);
    EXPECT_EQ(w_->get<Position>(e_[2]).x, 9);
    EXPECT_EQ(w_->try_get<Position>(stale_), nullptr);
    EXPECT_EQ(w_->try_get<Velocity>(e_[0]), nullptr);
    EXPECT_THROW(w_->patch<Velocity>(e_[0], [](Velocity&) {}), component_missing);
    EXPECT_THROW((void)w_->write<Position>(stale_), invalid_entity);
    EXPECT_THROW(w_->erase<Velocity>(e_[0]), component_missing);
    // A type never registered has no storage to read from: an error in every build.
    struct NeverRegistered {};
    EXPECT_THROW((void)w_->get<NeverRegistered>(e_[0]), component_missing);

    const ecsnet::ecs::Handle h{w_, stale_};
    EXPECT_THROW((void)h.get<Position>(), invalid_entity);
    const ecsnet::ecs::Handle fresh{w_, e_[0]};
    EXPECT_THROW((void)fresh.get<Velocity>(), component_missing);
    EXPECT_EQ(fresh.get<Position>().y, 2);
}

TEST_F(UncheckedBuild, ViewGetReadsAndAWritingViewGetRecordsTheUpdate) {
    const auto reading = w_->view<const Position, const Velocity>();
    ASSERT_TRUE(reading.contains(e_[1]));
    EXPECT_EQ(reading.get<const Velocity>(e_[1]).dx, 5);

    auto writing = w_->view<Position>();
    writing.get<Position>(e_[2]).x = 90;
    EXPECT_EQ(w_->get<Position>(e_[2]).x, 90);
    const auto changes = w_->take_changes();
    ASSERT_EQ(changes.components.size(), 1U);
    EXPECT_THAT(changes.components[0].updated, ElementsAre(e_[2]));
}

TEST_F(UncheckedBuild, SystemAccessIsCheckedInEveryBuild) {
    ecsnet::ecs::Scheduler s(0.1);
    s.add("reader", component_access{}.reads<Position>(),
          [this](ecsnet::ecs::SystemContext& ctx) { (void)ctx.world.get<Velocity>(e_[1]); });
    const auto report = s.run(*w_);
    ASSERT_EQ(report.system_failures.size(), 1U);
    EXPECT_THROW(std::rethrow_exception(report.system_failures[0].error), access_violation);
}

}  // namespace
