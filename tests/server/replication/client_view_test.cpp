// client_view: one client's replication under interest management, driven tick by tick over a
// real world (the demo's components) and the default grid policy. Every planned frame is
// encoded (encode_view_delta) and applied to a protocol::mirror, as the client would, and the
// view's checksum is checked by that mirror.
#include "ecsnet/server/replication/client_view.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/mirror.hpp"

namespace client_view_test {

// A value only its owner receives, shaped like the demo's Velocity.
struct Hidden {
    float x{};
    float y{};
    friend bool operator==(const Hidden&, const Hidden&) = default;
};

}  // namespace client_view_test

template <>
struct ecsnet::protocol::replicated<client_view_test::Hidden>
    : replicate<ecsnet::demo::wire::Velocity, "hidden", replicate_options{.owner_only = true}> {};

namespace client_view_test {

namespace protocol = ecsnet::protocol;
using ecsnet::demo::Health;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::server::client_view;
using ecsnet::server::interest_manager;
using ecsnet::server::point;
using ecsnet::server::tick_changes;
using protocol::Owner;

constexpr std::uint32_t me = 7;
constexpr std::uint32_t someone_else = 8;
constexpr double tick_rate = 10.0;
constexpr double unlimited = 1e12;  // bytes per second: a budget nothing exceeds

protocol::component_registry demo_types() {
    protocol::component_registry r;  // as the demo game registers them
    r.add<Position>();
    r.add<Velocity>();
    r.add<Health>();
    r.add<ecsnet::demo::Lifetime>();
    r.add<Name>();
    return r;
}

std::vector<Entity> sorted(std::vector<Entity> v) {
    std::sort(v.begin(), v.end());
    return v;
}
template <typename Span>
std::vector<Entity> entities_of(const Span& s) {
    return sorted(std::vector<Entity>(s.begin(), s.end()));
}

// The world, the policy, one client_view and the mirror of its client.
class ViewTest : public testing::Test {
protected:
    ViewTest() {
        // No budget by default (0: unlimited); tests set one per player.
        interest_.set_defaults(interest_manager::defaults{10.0F, 0.0});
        interest_.use_grid<Position>(10.0F, [](const Position& p) { return point{p.x, p.y}; });
        interest_.set_focus(me, {0, 0});  // radius 10: cells -1..1 on each axis, [-10, 20)
        auto& e = mirror_.events();
        e.on_spawn = [this](Entity x) { events_.push_back("spawn " + ecsnet::ecs::to_string(x)); };
        e.on_enter = [this](Entity x) { events_.push_back("enter " + ecsnet::ecs::to_string(x)); };
        e.on_leave = [this](Entity x) { events_.push_back("leave " + ecsnet::ecs::to_string(x)); };
        e.on_destroy = [this](Entity x) {
            events_.push_back("destroy " + ecsnet::ecs::to_string(x));
        };
        apply(encoder_.encode_empty_snapshot(tick_));
        EXPECT_TRUE(mirror_.ready());
    }

    Entity at(float x, float y, std::uint32_t owner = 0) {
        const Entity e = world_->create();
        world_->emplace<Position>(e, x, y);
        world_->emplace<Health>(e, 100);
        if (owner != 0) {
            world_->emplace<Owner>(e, owner);
        }
        return e;
    }
    void move(Entity e, float x, float y) { world_->replace<Position>(e, x, y); }

    void apply(const protocol::frame& f) {
        const auto* message = protocol::verify_server_frame(*f);
        ASSERT_NE(message, nullptr);
        ASSERT_TRUE(mirror_.apply(*message)) << mirror_.error();
    }

    // One server tick for this client: the policy catches up, the view plans, the frame is
    // encoded, charged and applied, and the view's checksum is checked by the mirror.
    // `listed`: the list to plan with instead of the policy's.
    const protocol::replication_encoder::view_changes& step(
        const std::vector<Entity>* listed = nullptr) {
        const auto changes = world_->take_changes();
        interest_.update(*world_, changes);
        tick_changes_.build(*world_, changes, types_);
        ++tick_;
        desired_.clear();
        if (listed != nullptr) {
            desired_ = *listed;
        } else {
            interest_.policy()->collect(*world_, me, interest_.player(me), desired_);
        }
        const client_view::context ctx{*world_, types_,    tick_changes_, interest_,
                                       tick_,   tick_rate, scratch_};
        const auto& planned = view_.plan(ctx, desired_);
        const protocol::frame f = encoder_.encode_view_delta(*world_, planned, tick_);
        const std::size_t empty = encoder_.encode_view_delta(*world_, {}, tick_)->size();
        view_.sent(f->size(), empty);
        charged_ += f->size() - empty;
        largest_frame_ = std::max(largest_frame_, f->size());
        apply(f);
        const auto matched = mirror_.statistics().checksums_matched;
        apply(protocol::encode(
            protocol::server_control{view_.checksum(*world_, types_, tick_, scratch_)}));
        EXPECT_EQ(mirror_.statistics().checksums_matched, matched + 1)
            << "tick " << tick_ << ": the mirror disagrees with client_view::checksum";
        EXPECT_EQ(mirror_.statistics().checksums_mismatched, 0U);
        EXPECT_EQ(mirror_.statistics().inconsistencies, 0U) << mirror_.error();
        return planned;
    }

    std::vector<std::string> take_events() { return std::exchange(events_, {}); }

    // The mirror holds exactly `expected`, each with the world's current values.
    void expect_mirror_holds(const std::vector<Entity>& expected) {
        std::vector<Entity> held;
        mirror_.each([&](Entity e) { held.push_back(e); });
        EXPECT_EQ(sorted(held), sorted(expected));
        for (const Entity e : expected) {
            if (!mirror_.contains(e)) {
                continue;
            }
            const auto same = [&]<typename T>(const T* in_world) {
                const auto in_mirror = mirror_.get<T>(e);
                EXPECT_EQ(in_world != nullptr, in_mirror.has_value())
                    << ecsnet::ecs::to_string(e) << " " << protocol::replicated<T>::name;
                if (in_world != nullptr && in_mirror) {
                    EXPECT_TRUE(*in_world == *in_mirror)
                        << ecsnet::ecs::to_string(e) << " " << protocol::replicated<T>::name;
                }
            };
            same(world_->try_get<Position>(e));
            same(world_->try_get<Velocity>(e));
            same(world_->try_get<Health>(e));
            same(world_->try_get<Name>(e));
            same(world_->try_get<Owner>(e));
        }
    }

    std::shared_ptr<World> world_ =
        World::make(ecsnet::ecs::world_options{ecsnet::ecs::entity_pool_options{0}});
    protocol::component_registry types_ = demo_types();
    interest_manager interest_;
    tick_changes tick_changes_;
    client_view::scratch scratch_;
    protocol::replication_encoder encoder_{types_};
    protocol::mirror mirror_{types_.types()};
    client_view view_{me};
    std::uint64_t tick_{1};
    std::vector<Entity> desired_;
    std::vector<std::string> events_;
    std::size_t largest_frame_{0};
    std::size_t charged_{0};  // bytes beyond the empty frames: what the budget bounds
};

std::string str(Entity e) {
    return ecsnet::ecs::to_string(e);
}

TEST_F(ViewTest, SpawnEnterLeaveDestroy) {
    const Entity a = at(1, 1);
    const Entity b = at(100, 100);
    const auto& first = step();
    EXPECT_EQ(entities_of(first.spawned), std::vector<Entity>{a}) << "created in view: a spawn";
    EXPECT_TRUE(first.entered.empty());
    EXPECT_EQ(take_events(), std::vector<std::string>{"spawn " + str(a)});

    move(b, 2, 2);
    const auto& second = step();
    EXPECT_EQ(entities_of(second.entered), std::vector<Entity>{b}) << "old, into view: an entry";
    EXPECT_TRUE(second.spawned.empty());
    EXPECT_EQ(take_events(), std::vector<std::string>{"enter " + str(b)});

    move(a, 500, 500);
    const auto& third = step();
    EXPECT_EQ(entities_of(third.left), std::vector<Entity>{a});
    EXPECT_TRUE(third.destroyed.empty()) << "out of view is not destroyed";
    EXPECT_EQ(take_events(), std::vector<std::string>{"leave " + str(a)});
    expect_mirror_holds({b});

    // Destroys of what the mirror holds only.
    world_->destroy(a);
    world_->destroy(b);
    const auto& fourth = step();
    EXPECT_EQ(entities_of(fourth.destroyed), std::vector<Entity>{b});
    EXPECT_TRUE(fourth.left.empty());
    EXPECT_EQ(take_events(), std::vector<std::string>{"destroy " + str(b)});
    expect_mirror_holds({});
    EXPECT_EQ(view_.stats().entered, 2U);
    EXPECT_EQ(view_.stats().left, 1U);
}

TEST_F(ViewTest, AnIndexReusedInOneTickIsDestroyThenSpawn) {
    const Entity old_one = at(1, 1);
    step();
    world_->destroy(old_one);
    const Entity new_one = at(2, 2);
    ASSERT_EQ(new_one.index(), old_one.index());
    const auto& planned = step();
    EXPECT_EQ(entities_of(planned.destroyed), std::vector<Entity>{old_one});
    EXPECT_EQ(entities_of(planned.spawned), std::vector<Entity>{new_one});
    take_events();
    expect_mirror_holds({new_one});
}

TEST_F(ViewTest, OwnAndGlobalEntitiesAreSeenAnywhere) {
    const Entity mine = at(900, 900, me);
    const Entity theirs = at(-900, 900, someone_else);
    const Entity global = world_->create();
    world_->emplace<Health>(global, 1);
    step();
    expect_mirror_holds({mine, global});
    (void)theirs;
}

TEST_F(ViewTest, ADeferredEntityIsSentLaterWithEveryChangedType) {
    const Entity e = at(1, 1);
    world_->emplace<Velocity>(e, 1.0F, 1.0F);
    step();
    ASSERT_TRUE(mirror_.contains(e));

    // A budget of almost nothing: the first frame overdraws it, then nothing fits for long.
    interest_.set_budget(me, 1.0);
    move(e, 2, 2);
    EXPECT_EQ(step().updated.size(), 1U) << "the most urgent goes while the allowance is positive";
    world_->replace<Health>(e, 50);
    EXPECT_TRUE(step().updated.empty());
    move(e, 3, 3);
    world_->erase<Velocity>(e);
    EXPECT_TRUE(step().updated.empty());
    EXPECT_EQ(view_.waiting(), 1U);
    EXPECT_GE(view_.stats().deferred, 2U);
    const auto report = view_.checksum(*world_, types_, tick_, scratch_);
    EXPECT_EQ(report.excluded, std::vector<std::uint32_t>{e.index()});
    EXPECT_EQ(report.entity_count, 0U);

    interest_.set_budget(me, unlimited);
    const auto& planned = step();
    ASSERT_EQ(planned.updated.size(), 1U);
    const std::uint64_t bits = (std::uint64_t{1} << *types_.id_of<Position>()) |
                               (std::uint64_t{1} << *types_.id_of<Health>()) |
                               (std::uint64_t{1} << *types_.id_of<Velocity>());
    EXPECT_EQ(planned.updated[0].first, e);
    EXPECT_EQ(planned.updated[0].second, bits) << "every type changed since last sent";
    expect_mirror_holds({e});
    EXPECT_EQ(view_.waiting(), 0U);
}

TEST_F(ViewTest, ATypeAddedAndRemovedWhileWaitingIsNoRemovalForTheMirror) {
    const Entity e = world_->create();  // global, without Velocity
    world_->emplace<Health>(e, 1);
    const Entity other = at(1, 1);
    step();
    interest_.set_budget(me, 1.0);
    move(other, 2, 2);
    (void)step();  // overdraws the allowance
    world_->emplace<Velocity>(e, 1.0F, 1.0F);
    EXPECT_TRUE(step().updated.empty());
    world_->erase<Velocity>(e);
    world_->replace<Health>(e, 2);
    EXPECT_TRUE(step().updated.empty());
    interest_.set_budget(me, unlimited);
    const auto& planned = step();  // step() checks that the mirror took the frame
    ASSERT_EQ(planned.updated.size(), 1U);
    EXPECT_EQ(planned.updated[0].second, std::uint64_t{1} << *types_.id_of<Health>())
        << "Velocity never reached the mirror: no removal of it";
    expect_mirror_holds({e, other});
}

TEST_F(ViewTest, ChecksumSumsHeldEntitiesWithNothingDue) {
    const Entity a = at(1, 1);
    const Entity b = at(2, 2);
    const Entity c = at(3, 3, me);
    step();
    interest_.set_budget(me, 1.0);
    move(a, 4, 4);
    (void)step();  // a goes (the allowance was positive)
    move(b, 5, 5);
    move(c, 6, 6);
    (void)step();  // nothing fits: b and c wait
    const auto report = view_.checksum(*world_, types_, tick_, scratch_);
    EXPECT_EQ(report.excluded, (std::vector<std::uint32_t>{b.index(), c.index()}));
    EXPECT_EQ(report.entity_count, 1U);
    EXPECT_EQ(report.hash, protocol::checksum::of_entity(*world_, types_, a, me));
    EXPECT_EQ(report.tick, tick_);
}

TEST_F(ViewTest, BudgetBoundsBytesAndEverythingArrives) {
    std::vector<Entity> all;
    for (int i = 0; i < 60; ++i) {
        all.push_back(
            at(static_cast<float>(i % 20) * 0.4F - 5.0F, static_cast<float>(i / 20) - 5.0F));
    }
    const double budget = 4000.0;  // 400 bytes a tick
    interest_.set_budget(me, budget);
    const double per_tick = budget / tick_rate;
    const std::size_t before = charged_;
    int ticks = 0;
    // Everything enters, then every entity moves every tick for a while, then rests.
    for (; ticks < 300 && (ticks < 40 || view_.waiting() > 0); ++ticks) {
        if (ticks < 40) {
            for (const Entity e : all) {
                const Position p = world_->get<Position>(e);
                move(e, p.x, p.y + 0.01F);
            }
        }
        step();
        // At most the allowance of the ticks so far, the two saved, and the one candidate
        // that may overdraw it (the largest frame bounds it).
        EXPECT_LE(static_cast<double>(charged_ - before),
                  per_tick * (ticks + 1 + 2) + static_cast<double>(largest_frame_))
            << "tick " << ticks;
    }
    EXPECT_EQ(view_.waiting(), 0U) << "the churn stopped: everything drained within 260 ticks";
    EXPECT_GT(view_.stats().deferred, 0U) << "the budget must have been binding";
    expect_mirror_holds(all);
}

TEST_F(ViewTest, TheMostUrgentGoFirstAndNoneStarves) {
    // 3N candidates, a budget for about N: own (far away) > near > far, each N of them.
    constexpr int n = 8;
    interest_.set_radius(me, 100.0F);
    interest_.set_focus(me, {0, 0});
    std::vector<Entity> own;
    std::vector<Entity> near;
    std::vector<Entity> far;
    for (int i = 0; i < n; ++i) {
        own.push_back(at(90.0F, static_cast<float>(i), me));
        near.push_back(at(1.0F, static_cast<float>(i)));
        far.push_back(at(95.0F, static_cast<float>(-i - 1)));
    }
    step();  // all enter, unlimited
    const std::uint32_t position = *types_.id_of<Position>();
    // About N updates a tick (an update is 4 + 8 bytes on the budget's estimate, the frame
    // carries more: a generous frame overhead keeps N a rough figure).
    interest_.set_budget(me, tick_rate * n * 12.0);
    std::map<Entity, int> sent_count;
    for (int t = 0; t < 90; ++t) {
        for (const auto* group : {&own, &near, &far}) {
            for (const Entity e : *group) {
                const Position p = world_->get<Position>(e);
                move(e, p.x, p.y + 0.001F);
            }
        }
        const auto& planned = step();
        if (t == 0) {
            // Equal accumulators: the first budgeted tick is ordered by priority alone.
            std::set<Entity> sent;
            for (const auto& [e, due] : planned.updated) {
                sent.insert(e);
                EXPECT_EQ(due, std::uint64_t{1} << position);
            }
            ASSERT_FALSE(sent.empty());
            ASSERT_LT(sent.size(), own.size() + near.size()) << "the budget must bind";
            const auto rank = [&](Entity e) {
                return std::count(own.begin(), own.end(), e)     ? 0
                       : std::count(near.begin(), near.end(), e) ? 1
                                                                 : 2;
            };
            int worst_sent = 0;
            for (const Entity e : sent) {
                worst_sent = std::max(worst_sent, rank(e));
            }
            for (const auto* group : {&own, &near, &far}) {
                for (const Entity e : *group) {
                    if (!sent.contains(e)) {
                        EXPECT_GE(rank(e), worst_sent)
                            << str(e) << " waits while a less urgent one went";
                    }
                }
            }
            EXPECT_TRUE(sent.contains(own[0])) << "own entities are the most urgent";
        }
        for (const auto& [e, due] : planned.updated) {
            ++sent_count[e];
        }
    }
    for (const auto* group : {&own, &near, &far}) {
        for (const Entity e : *group) {
            EXPECT_GE(sent_count[e], 2) << str(e) << " starved: the accumulator serves all";
        }
    }
    int own_sent = 0;
    int far_sent = 0;
    for (int i = 0; i < n; ++i) {
        own_sent += sent_count[own[i]];
        far_sent += sent_count[far[i]];
    }
    EXPECT_GT(own_sent, far_sent) << "own entities are sent more often than far ones";
    EXPECT_GT(view_.stats().deferred, 0U);
}

// A player's own entity that enters its view (its spawn) goes before the others, however long
// they waited: with the accumulator alone it started at 0 behind updates grown for ticks, and
// waited ticks under a binding budget (13 once in issue 42's spawn probe).
TEST_F(ViewTest, AnOwnEntityEnteringGoesBeforeUpdatesThatWaitedLonger) {
    constexpr int n = 8;
    interest_.set_radius(me, 100.0F);
    std::vector<Entity> others;
    for (int i = 0; i < 5 * n; ++i) {
        others.push_back(at(1.0F, static_cast<float>(i)));
    }
    step();  // all enter, unlimited
    // About N updates a tick of the 5N due: most wait, and their accumulators grow.
    interest_.set_budget(me, tick_rate * n * 12.0);
    const auto move_all = [&] {
        for (const Entity e : others) {
            const Position p = world_->get<Position>(e);
            move(e, p.x, p.y + 0.001F);
        }
    };
    for (int t = 0; t < 10; ++t) {
        move_all();
        step();
    }
    const auto deferred = view_.stats().deferred;
    ASSERT_GT(deferred, 0U) << "the budget must bind";
    const Entity own = at(90.0F, 0.0F, me);  // far from the focus: no help from distance
    move_all();
    const auto& planned = step();
    EXPECT_EQ(entities_of(planned.spawned), std::vector<Entity>{own})
        << "an own entity waited behind " << planned.updated.size() << " updates";
    EXPECT_LT(planned.updated.size(), others.size()) << "the budget still binds";
    EXPECT_TRUE(mirror_.contains(own));
}

TEST_F(ViewTest, HeavierTypesGoFirst) {
    constexpr int n = 6;
    std::vector<Entity> moved;
    std::vector<Entity> hurt;
    for (int i = 0; i < n; ++i) {
        moved.push_back(at(1.0F, static_cast<float>(-i)));
        hurt.push_back(at(1.0F, static_cast<float>(-i)));  // the same distance
    }
    step();
    interest_.set_weight(*types_.id_of<Health>(), 5.0F);
    interest_.set_budget(me, tick_rate * n * 10.0);
    for (int i = 0; i < n; ++i) {
        move(moved[i], 1.0F, static_cast<float>(-i) - 0.001F);
        world_->replace<Health>(hurt[i], 1);
    }
    const auto& planned = step();
    ASSERT_FALSE(planned.updated.empty());
    ASSERT_LT(planned.updated.size(), 2U * n) << "the budget must bind";
    std::size_t health_sent = 0;
    for (const auto& [e, due] : planned.updated) {
        health_sent += std::count(hurt.begin(), hurt.end(), e);
    }
    EXPECT_EQ(health_sent, std::min<std::size_t>(planned.updated.size(), n))
        << "the Health updates (weight 5) go before the Position ones";
}

TEST_F(ViewTest, ABudgetSetLaterStartsFromAFreshAllowance) {
    // Unlimited for a while: the frames sent then are no debt once a budget is set.
    std::vector<Entity> all;
    for (int i = 0; i < 40; ++i) {
        all.push_back(at(static_cast<float>(i % 10) - 5.0F, static_cast<float>(i / 10)));
    }
    for (int t = 0; t < 20; ++t) {
        for (const Entity e : all) {
            move(e, world_->get<Position>(e).x, world_->get<Position>(e).y + 0.001F);
        }
        step();
    }
    interest_.set_budget(me, 2000.0);
    move(all[0], 0, 0);
    EXPECT_EQ(step().updated.size(), 1U) << "allowance " << view_.allowance();
    EXPECT_GT(view_.allowance(), -200.0 - static_cast<double>(largest_frame_));
}

// Issue 24.9: in whole-world mode the shared Delta is charged like the client's own frame, the
// bytes beyond an empty Delta of the tick (a budget below the empty frames had a client fall out
// of the mode and back every tick, rebuilding its view of the world each time), and the
// allowance is added once per tick (leaving the mode asks afford() and then plan()).
TEST_F(ViewTest, ASharedFrameIsChargedBeyondTheEmptyFrameAndRefilledOncePerTick) {
    interest_.set_budget(me, 1000.0);  // 100 bytes a tick at 10 Hz
    constexpr std::size_t empty = 60;
    const client_view::context ctx{*world_, types_,    tick_changes_, interest_,
                                   ++tick_, tick_rate, scratch_};
    EXPECT_TRUE(view_.afford(ctx, empty, empty));
    EXPECT_DOUBLE_EQ(view_.allowance(), 100.0) << "an empty frame is free";
    EXPECT_TRUE(view_.afford(ctx, empty + 30, empty));
    EXPECT_DOUBLE_EQ(view_.allowance(), 70.0) << "30 bytes charged, and no second refill";
    EXPECT_FALSE(view_.afford(ctx, empty + 71, empty));
    EXPECT_DOUBLE_EQ(view_.allowance(), 70.0) << "refused: nothing charged, nothing added";
    desired_.clear();
    (void)view_.plan(ctx, desired_);  // the same tick, out of whole-world mode
    EXPECT_DOUBLE_EQ(view_.allowance(), 70.0) << "plan() in the same tick adds nothing";
    const client_view::context next{*world_, types_,    tick_changes_, interest_,
                                    ++tick_, tick_rate, scratch_};
    EXPECT_TRUE(view_.afford(next, empty, empty));
    EXPECT_DOUBLE_EQ(view_.allowance(), 170.0) << "one tick's allowance per tick";
    const client_view::context later{*world_, types_,    tick_changes_, interest_,
                                     ++tick_, tick_rate, scratch_};
    EXPECT_TRUE(view_.afford(later, 0, empty)) << "a frame smaller than the empty one costs 0";
    EXPECT_DOUBLE_EQ(view_.allowance(), 200.0) << "at most two ticks' worth";
}

TEST_F(ViewTest, AnEmptySharedFrameFitsAnyBudget) {
    interest_.set_budget(me, 1.0);  // 0.1 byte a tick: far below any frame
    const client_view::context ctx{*world_, types_,    tick_changes_, interest_,
                                   ++tick_, tick_rate, scratch_};
    EXPECT_TRUE(view_.afford(ctx, 52, 52));
    const client_view::context next{*world_, types_,    tick_changes_, interest_,
                                    ++tick_, tick_rate, scratch_};
    EXPECT_FALSE(view_.afford(next, 53, 52)) << "1 byte beyond it is over 0.2";
}

// The views of a replicator plan in turn with one scratch: what plan() returns lives there until
// the next plan(), and nothing of one view's records may leak into another's.
TEST_F(ViewTest, ViewsSharingOneScratchKeepTheirOwnRecords) {
    const Entity near = at(1, 1);
    const Entity mine = at(2, 2, me);
    const Entity far = at(101, 101);
    const Entity far_too = at(102, 102, someone_else);
    interest_.set_focus(someone_else, {100, 100});
    client_view other{someone_else};
    std::vector<Entity> other_desired;
    std::vector<Entity> other_entered;
    std::vector<Entity> other_updated;
    for (int t = 0; t < 6; ++t) {
        if (t == 2) {
            move(near, 3, 3);
            move(far, 103, 103);
        }
        if (t == 4) {
            move(far, 1, 2);  // into my view, out of the other's
        }
        const auto& planned = step();  // plans with scratch_, then checks my mirror's checksum
        std::vector<Entity> my_entered = entities_of(planned.entered);
        my_entered.insert(my_entered.end(), planned.spawned.begin(), planned.spawned.end());
        other_desired.clear();
        interest_.policy()->collect(*world_, someone_else, interest_.player(someone_else),
                                    other_desired);
        const client_view::context ctx{*world_, types_,    tick_changes_, interest_,
                                       tick_,   tick_rate, scratch_};
        const auto& theirs = other.plan(ctx, other_desired);
        std::vector<Entity> their_entered(theirs.entered.begin(), theirs.entered.end());
        their_entered.insert(their_entered.end(), theirs.spawned.begin(), theirs.spawned.end());
        other_entered.insert(other_entered.end(), their_entered.begin(), their_entered.end());
        for (const auto& [e, types] : theirs.updated) {
            other_updated.push_back(e);
        }
        if (t == 0) {
            EXPECT_EQ(sorted(my_entered), sorted({near, mine})) << "spawned";
            EXPECT_EQ(sorted(their_entered), sorted({far, far_too})) << "spawned";
        }
        if (t == 4) {
            EXPECT_EQ(sorted(my_entered), sorted({far}));
            EXPECT_EQ(entities_of(theirs.left), sorted({far}));
        }
    }
    expect_mirror_holds({near, mine, far});
    EXPECT_EQ(sorted(other_entered), sorted({far, far_too})) << "each entered once";
    EXPECT_EQ(other_updated, std::vector<Entity>{far}) << "its move at tick 2, not mine";
    EXPECT_EQ(other.held(), 1U);
    EXPECT_EQ(view_.held(), 3U);
}

// When the policy fails, the replicator plans with the view's own list, which still names what
// was destroyed this tick: it is destroyed in the mirror all the same, and not entered again.
TEST_F(ViewTest, AnEntityDestroyedThisTickGoesEvenWhenStillListed) {
    const Entity a = at(1, 1);
    const Entity b = at(2, 2);
    const Entity c = at(3, 3);
    step();
    std::vector<Entity> listed;
    view_.listed(listed);
    EXPECT_EQ(sorted(listed), sorted({a, b, c}));
    world_->destroy(a);
    world_->destroy(c);
    const Entity recycled = at(4, 4);  // a's or c's index, a new version
    const auto& planned = step(&listed);
    EXPECT_EQ(entities_of(planned.destroyed), sorted({a, c}));
    EXPECT_TRUE(planned.spawned.empty() && planned.entered.empty() && planned.left.empty());
    expect_mirror_holds({b});
    EXPECT_EQ(view_.held(), 1U);
    EXPECT_EQ(view_.waiting(), 0U);
    EXPECT_EQ(entities_of(step().entered), sorted({recycled})) << "the policy again";
    expect_mirror_holds({b, recycled});
}

// The view's checksum sums type by type what checksum::of_entity() sums entity by entity:
// strings included, and an owner-only value only in its owner's sum.
TEST(ViewChecksum, SumsWhatOfEntitySumsWithOwnerOnlyValuesForTheirOwnerAlone) {
    protocol::component_registry types = demo_types();
    types.add<Hidden>();
    const auto world = World::make();
    interest_manager interest;
    interest.set_defaults(interest_manager::defaults{10.0F, 0.0});
    interest.use_grid<Position>(10.0F, [](const Position& p) { return point{p.x, p.y}; });
    interest.set_focus(me, {0, 0});
    const auto put = [&](float x, std::uint32_t owner, bool hidden) {
        const Entity e = world->create();
        world->emplace<Position>(e, x, x);
        if (owner != 0) {
            world->emplace<Owner>(e, owner);
        }
        if (hidden) {
            world->emplace<Hidden>(e, x, -x);
        }
        return e;
    };
    const Entity mine = put(1, me, true);
    const Entity theirs = put(2, someone_else, true);
    const Entity nobodys = put(3, 0, true);
    const Entity named = put(4, 0, false);
    world->emplace<Name>(named, "a name");
    world->emplace<Health>(named, 7);
    const Entity far = put(500, 0, true);  // out of view: in no sum

    tick_changes changes;
    client_view view{me};
    client_view::scratch scratch;
    std::vector<Entity> desired;
    std::uint64_t tick = 0;
    const auto expect_sum = [&](const char* when) {
        const auto taken = world->take_changes();
        interest.update(*world, taken);
        changes.build(*world, taken, types);
        desired.clear();
        interest.policy()->collect(*world, me, interest.player(me), desired);
        const client_view::context ctx{*world, types,     changes, interest,
                                       ++tick, tick_rate, scratch};
        (void)view.plan(ctx, desired);
        std::uint64_t expected = 0;
        for (const Entity e : {mine, theirs, nobodys, named}) {
            expected += protocol::checksum::of_entity(*world, types, e, me);
        }
        const auto report = view.checksum(*world, types, tick, scratch);
        EXPECT_EQ(report.hash, expected) << when;
        EXPECT_EQ(report.entity_count, 4U) << when;
        EXPECT_TRUE(report.excluded.empty()) << when;
    };
    expect_sum("entered");
    world->replace<Hidden>(mine, 9.0F, 9.0F);
    world->replace<Hidden>(theirs, 8.0F, 8.0F);
    world->replace<Name>(named, "another name");
    world->erase<Hidden>(nobodys);
    expect_sum("updated");
    (void)far;
}

TEST_F(ViewTest, ResetStartsOverWithEntries) {
    const Entity a = at(1, 1);
    const Entity b = at(2, 2, me);
    step();
    take_events();
    view_.reset();
    EXPECT_EQ(view_.held(), 0U);
    EXPECT_EQ(view_.waiting(), 0U);
    apply(encoder_.encode_empty_snapshot(tick_));  // what the server sends on a resync
    take_events();
    const auto& planned = step();
    EXPECT_EQ(entities_of(planned.entered), sorted({a, b})) << "not spawns: they are old";
    EXPECT_TRUE(planned.spawned.empty());
    expect_mirror_holds({a, b});
}

// tick_changes tells which of the tick's changed types an entity has now, from the change
// lists alone; what the lists do not cover is left to the world.
// The budget's size of an update (client_view::update_cost) reads a fixed-size type's from the
// tick's table: a value and its index. A string's depends on the text, so the table says 0, as
// it does for a type it has not seen.
TEST(TickChanges, UpdateBytesIsAValueAndItsIndexForFixedSizeTypesOnly) {
    const auto world = World::make();
    const protocol::component_registry types = demo_types();
    tick_changes changes;
    EXPECT_EQ(changes.update_bytes(*types.id_of<Position>()), 0U) << "before build()";
    changes.build(*world, world->take_changes(), types);
    for (std::uint32_t id = 0; id < types.size(); ++id) {
        const protocol::component_info& info = types.info(id);
        EXPECT_EQ(changes.update_bytes(id), info.is_string ? 0U : 4U + info.value_bytes())
            << info.name;
    }
    EXPECT_EQ(changes.update_bytes(*types.id_of<Name>()), 0U) << "a string";
    EXPECT_GT(changes.update_bytes(*types.id_of<Position>()), 4U);
    EXPECT_EQ(changes.update_bytes(static_cast<std::uint32_t>(types.size())), 0U);
}

TEST(TickChanges, PresentTellsWhatTheListsSay) {
    const auto world = World::make();
    const protocol::component_registry types = demo_types();
    const Entity moved = world->create();
    world->emplace<Position>(moved, 1.0F, 2.0F);
    world->emplace<Velocity>(moved, 1.0F, 1.0F);
    const Entity still = world->create();
    world->emplace<Position>(still, 3.0F, 4.0F);
    (void)world->take_changes();

    world->replace<Position>(moved, 5.0F, 6.0F);
    world->erase<Velocity>(moved);
    world->emplace<Health>(moved, 3);
    const Entity created = world->create();
    world->emplace<Position>(created, 7.0F, 8.0F);
    tick_changes changes;
    changes.build(*world, world->take_changes(), types);

    const std::uint64_t position = std::uint64_t{1} << *types.id_of<Position>();
    const std::uint64_t velocity = std::uint64_t{1} << *types.id_of<Velocity>();
    const std::uint64_t health = std::uint64_t{1} << *types.id_of<Health>();
    const std::uint64_t name = std::uint64_t{1} << *types.id_of<Name>();
    std::uint64_t known = 0;
    EXPECT_EQ(changes.present(moved, ~std::uint64_t{0}, known), position | health);
    EXPECT_EQ(known, position | velocity | health);
    EXPECT_EQ(changes.present(moved, velocity | name, known), 0U);
    EXPECT_EQ(known, velocity) << "only what is asked and listed";
    EXPECT_EQ(changes.present(still, position, known), 0U);
    EXPECT_EQ(known, 0U) << "unchanged: not known from the lists";
    EXPECT_EQ(changes.present(created, position, known), 0U);
    EXPECT_EQ(known, 0U) << "a created entity is listed whole, not by type";
    EXPECT_TRUE(changes.created(created));
    const Entity other_version{moved.index(), moved.version() + 1};
    EXPECT_EQ(changes.present(other_version, position, known), 0U);
    EXPECT_EQ(known, 0U) << "the lists named another version";

    // Lists naming two versions at one index (not what a world produces): trusted for neither.
    ecsnet::ecs::World::change_set_type odd;
    odd.components.push_back({});
    odd.components.back().type_hash = types.ops(*types.id_of<Position>()).type_hash;
    odd.components.back().updated = {moved, other_version};
    changes.build(*world, odd, types);
    EXPECT_EQ(changes.present(moved, position, known), 0U);
    EXPECT_EQ(known, 0U);
    EXPECT_EQ(changes.mask(moved.index()), position);
}

// A record tells this tick only: a type removed one tick and added back the next is present,
// and a record 65,536 ticks old (its 16-bit stamp wrapped around to this tick's) tells nothing.
TEST(TickChanges, ARecordTellsItsOwnTickOnly) {
    const auto world = World::make();
    const protocol::component_registry types = demo_types();
    const Entity e = world->create();
    world->emplace<Position>(e, 1.0F, 2.0F);
    world->emplace<Velocity>(e, 1.0F, 1.0F);
    (void)world->take_changes();
    const std::uint64_t velocity = std::uint64_t{1} << *types.id_of<Velocity>();
    const std::uint64_t position = std::uint64_t{1} << *types.id_of<Position>();
    tick_changes changes;
    std::uint64_t known = 0;

    world->erase<Velocity>(e);
    changes.build(*world, world->take_changes(), types);
    EXPECT_EQ(changes.present(e, velocity, known), 0U);
    EXPECT_EQ(known, velocity) << "removed this tick";
    world->emplace<Velocity>(e, 2.0F, 2.0F);
    changes.build(*world, world->take_changes(), types);
    EXPECT_EQ(changes.present(e, velocity, known), velocity)
        << "added back: last tick's removal is gone";
    EXPECT_EQ(known, velocity);

    world->replace<Position>(e, 3.0F, 4.0F);
    const Entity created = world->create();
    changes.build(*world, world->take_changes(), types);
    ASSERT_EQ(changes.mask(e.index()), position);
    ASSERT_TRUE(changes.created(created));
    for (int tick = 1; tick < 65'536; ++tick) {
        changes.build(*world, world->take_changes(), types);
        ASSERT_TRUE(changes.mask(e.index()) == 0 && !changes.created(created)) << "tick " << tick;
    }
    EXPECT_EQ(changes.mask(e.index()), 0U) << "65,536 ticks later";
    EXPECT_FALSE(changes.created(created)) << "65,536 ticks later";
    EXPECT_EQ(changes.present(e, position, known), 0U);
    EXPECT_EQ(known, 0U);
}

// Random churn, random focus moves and a small budget: after every tick the mirror agrees
// with the view's checksum (held values, excluded the waiting ones), and once the budget is
// lifted one tick brings the mirror to the world's visible set exactly.
TEST_F(ViewTest, PropertyMirrorFollowsTheViewUnderChurn) {
    for (const unsigned seed : {1U, 2U, 3U}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        std::mt19937 rng{seed};
        std::uniform_real_distribution<float> where{-60.0F, 60.0F};
        std::vector<Entity> alive;
        interest_.set_radius(me, 25.0F);
        interest_.set_budget(me, 3000.0);
        for (int t = 0; t < 200; ++t) {
            const int actions = static_cast<int>(rng() % 12);
            for (int a = 0; a < actions; ++a) {
                const unsigned what = rng() % 10;
                if (what < 3 || alive.empty()) {
                    const std::uint32_t owner =
                        rng() % 6 == 0 ? me : (rng() % 6 == 0 ? someone_else : 0);
                    const Entity e = at(where(rng), where(rng), owner);
                    if (rng() % 3 == 0) {
                        world_->emplace<Name>(e, "n" + std::to_string(rng() % 1000));
                    }
                    alive.push_back(e);
                    continue;
                }
                const std::size_t i = rng() % alive.size();
                const Entity e = alive[i];
                if (what == 3) {
                    world_->destroy(e);
                    alive.erase(alive.begin() + static_cast<std::ptrdiff_t>(i));
                } else if (what <= 6) {
                    world_->emplace_or_replace<Position>(e, where(rng), where(rng));
                } else if (what == 7) {
                    world_->remove<Position>(e);  // global from now on
                } else if (what == 8) {
                    world_->replace<Health>(e, static_cast<std::int32_t>(rng() % 100));
                } else if (world_->all_of<Velocity>(e)) {
                    world_->erase<Velocity>(e);
                } else {
                    world_->emplace<Velocity>(e, 1.0F, -1.0F);
                }
            }
            if (rng() % 8 == 0) {
                interest_.set_focus(me, {where(rng), where(rng)});
            }
            step();
            if (HasFatalFailure() || mirror_.statistics().checksums_mismatched > 0) {
                FAIL() << "tick " << t;
            }
        }
        EXPECT_GT(view_.stats().deferred, 0U) << "the budget must have been binding";
        interest_.set_budget(me, unlimited);
        step();
        EXPECT_EQ(view_.waiting(), 0U);
        EXPECT_EQ(view_.held(), desired_.size()) << "the view's count of held entities";
        expect_mirror_holds(desired_);
        for (const Entity e : alive) {
            world_->destroy(e);
        }
        step();
        expect_mirror_holds({});
    }
}

}  // namespace client_view_test
