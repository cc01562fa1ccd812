#include "ecsnet/ecs/command_buffer.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ecsnet/ecs/world.hpp"

namespace command_buffer_test {

using ecsnet::ecs::CommandBuffer;
using ecsnet::ecs::Entity;
using ecsnet::ecs::pending_entity;
using ecsnet::ecs::World;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct Position {
    int x;
    int y;
    bool operator==(const Position&) const = default;
};
struct Health {
    int hp;
};
struct Dead {};

static_assert(!std::is_copy_constructible_v<CommandBuffer>);
static_assert(std::is_nothrow_move_constructible_v<CommandBuffer>);

TEST(CommandBuffer, RecordingDoesNotTouchTheWorld) {
    const auto w = World::make();
    const Entity e = w->create();
    CommandBuffer buffer;
    (void)buffer.create();
    buffer.emplace<Health>(e, 1);
    buffer.destroy(e);
    EXPECT_EQ(buffer.size(), 3U);
    EXPECT_FALSE(buffer.empty());
    EXPECT_EQ(w->alive(), 1U);
    EXPECT_FALSE(w->has<Health>(e));

    const auto report = buffer.flush(*w);
    EXPECT_TRUE(report.ok());
    EXPECT_EQ(report.applied, 3U);
    EXPECT_TRUE(buffer.empty());
    EXPECT_FALSE(w->valid(e));
    EXPECT_EQ(w->alive(), 1U);  // the created one
}

TEST(CommandBuffer, CommandsApplyInRecordingOrder) {
    const auto w = World::make();
    const Entity e = w->create();
    CommandBuffer buffer;
    buffer.emplace<Health>(e, 1);
    buffer.patch<Health>(e, [](Health& h) { h.hp *= 10; });
    buffer.patch<Health>(e, [](Health& h) { h.hp += 3; });
    buffer.emplace_or_replace<Position>(e, 1, 1);
    buffer.emplace_or_replace<Position>(e, 2, 2);
    buffer.erase<Position>(e);
    buffer.emplace<Position>(e, 3, 3);

    std::vector<std::string> events;
    w->on_construct<Health>().connect([&](World&, Entity) { events.emplace_back("+health"); });
    w->on_update<Health>().connect([&](World&, Entity) { events.emplace_back("~health"); });
    w->on_construct<Position>().connect([&](World&, Entity) { events.emplace_back("+position"); });
    w->on_update<Position>().connect([&](World&, Entity) { events.emplace_back("~position"); });
    w->on_destroy<Position>().connect([&](World&, Entity) { events.emplace_back("-position"); });

    ASSERT_TRUE(buffer.flush(*w).ok());
    EXPECT_EQ(w->get<Health>(e).hp, 13);  // (1 * 10) + 3
    EXPECT_EQ(w->get<Position>(e), (Position{3, 3}));
    EXPECT_THAT(events, ElementsAre("+health", "~health", "~health", "+position", "~position",
                                    "-position", "+position"));
}

TEST(CommandBuffer, PendingEntitiesAreUsableWithinTheBuffer) {
    const auto w = World::make();
    CommandBuffer buffer;
    const pending_entity a = buffer.create();
    const pending_entity b = buffer.create();
    EXPECT_NE(a, b);
    buffer.emplace<Position>(a, 1, 2);
    buffer.emplace<Health>(a, 5);
    buffer.erase<Health>(a);
    buffer.emplace<Health>(b, 7);
    buffer.patch<Health>(b, [](Health& h) { ++h.hp; });
    EXPECT_TRUE(buffer.resolve(a).is_null());  // nothing flushed yet

    const auto report = buffer.flush(*w);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report.applied, 7U);

    const Entity ea = buffer.resolve(a);
    const Entity eb = buffer.resolve(b);
    ASSERT_TRUE(w->valid(ea));
    ASSERT_TRUE(w->valid(eb));
    EXPECT_NE(ea, eb);
    EXPECT_EQ(w->get<Position>(ea), (Position{1, 2}));
    EXPECT_FALSE(w->has<Health>(ea));
    EXPECT_EQ(w->get<Health>(eb).hp, 8);
    EXPECT_FALSE(w->has<Position>(eb));
    EXPECT_EQ(w->alive(), 2U);
}

TEST(CommandBuffer, APendingEntityCanBeDestroyedInTheSameBuffer) {
    const auto w = World::make();
    CommandBuffer buffer;
    const pending_entity p = buffer.create();
    buffer.emplace<Health>(p, 1);
    buffer.destroy(p);
    ASSERT_TRUE(buffer.flush(*w).ok());
    EXPECT_FALSE(buffer.resolve(p).is_null());
    EXPECT_FALSE(w->valid(buffer.resolve(p)));
    EXPECT_EQ(w->alive(), 0U);
}

TEST(CommandBuffer, FailuresAreReportedWithTheirIndexAndTheOthersStillApply) {
    const auto w = World::make();
    const Entity a = w->create();
    const Entity b = w->create();
    const Entity dead = w->create();
    w->emplace<Health>(b, 1);
    w->destroy(dead);

    CommandBuffer buffer;
    buffer.emplace<Health>(a, 10);               // 0: applies
    buffer.destroy(dead);                        // 1: already dead
    buffer.emplace<Health>(b, 20);               // 2: b has Health already
    buffer.emplace<Position>(a, 1, 1);           // 3: applies
    buffer.erase<Position>(b);                  // 4: b has no Position
    buffer.patch<Health>(dead, [](Health&) {});  // 5: dead
    buffer.remove<Health>(dead);      // 6: tolerated, applies as a no-op
    buffer.destroy(b);                           // 7: applies

    const auto report = buffer.flush(*w);
    EXPECT_FALSE(report.ok());
    EXPECT_EQ(report.applied, 4U);
    ASSERT_EQ(report.failures.size(), 4U);
    EXPECT_EQ(report.failures[0].command, 1U);
    EXPECT_EQ(report.failures[1].command, 2U);
    EXPECT_EQ(report.failures[2].command, 4U);
    EXPECT_EQ(report.failures[3].command, 5U);
    EXPECT_THAT(report.failures[0].what, AllOf(HasSubstr("destroy"), HasSubstr("2:1")));
    EXPECT_THAT(report.failures[1].what, AllOf(HasSubstr("1:1"), HasSubstr("Health")));
    EXPECT_THAT(report.failures[2].what, AllOf(HasSubstr("1:1"), HasSubstr("Position")));
    EXPECT_THAT(report.failures[3].what, HasSubstr("2:1"));

    EXPECT_EQ(w->get<Health>(a).hp, 10);
    EXPECT_EQ(w->get<Position>(a), (Position{1, 1}));
    EXPECT_FALSE(w->valid(b));
    EXPECT_TRUE(buffer.empty());
}

// Issue 12.4: a command whose user code throws anything is a reported failure like the
// others; it used to escape flush() (and the scheduler's tick) and drop the rest.
TEST(CommandBuffer, ACommandThatThrowsAnythingIsReportedAndTheOthersStillApply) {
    const auto w = World::make();
    const Entity a = w->create();
    w->emplace<Health>(a, 1);

    CommandBuffer buffer;
    buffer.patch<Health>(a, [](Health&) { throw std::runtime_error("patch gave up"); });
    buffer.patch<Health>(a, [](Health&) { throw 3; });  // NOLINT(hicpp-exception-baseclass)
    buffer.patch<Health>(a, [](Health& h) { h.hp = 7; });

    const auto report = buffer.flush(*w);
    EXPECT_EQ(report.applied, 1U);
    ASSERT_EQ(report.failures.size(), 2U);
    EXPECT_EQ(report.failures[0].what, "patch gave up");
    EXPECT_THAT(report.failures[1].what, HasSubstr("not a std::exception"));
    EXPECT_EQ(w->get<Health>(a).hp, 7);
    EXPECT_TRUE(buffer.empty());
}

TEST(CommandBuffer, FlushEmptiesTheBufferAndClearDropsCommands) {
    const auto w = World::make();
    const Entity e = w->create();
    CommandBuffer buffer;
    buffer.emplace<Health>(e, 1);
    ASSERT_TRUE(buffer.flush(*w).ok());
    const auto second = buffer.flush(*w);  // nothing left to apply (a repeat would fail)
    EXPECT_TRUE(second.ok());
    EXPECT_EQ(second.applied, 0U);

    buffer.destroy(e);
    (void)buffer.create();
    buffer.clear();
    EXPECT_TRUE(buffer.empty());
    EXPECT_EQ(buffer.flush(*w).applied, 0U);
    EXPECT_TRUE(w->valid(e));
    EXPECT_EQ(w->alive(), 1U);
}

TEST(CommandBuffer, ResolveRefersToTheLastFlush) {
    const auto w = World::make();
    CommandBuffer buffer;
    const pending_entity first = buffer.create();
    (void)buffer.flush(*w);
    const Entity e1 = buffer.resolve(first);
    EXPECT_TRUE(w->valid(e1));

    const pending_entity again = buffer.create();  // numbering restarts after a flush
    (void)buffer.flush(*w);
    EXPECT_TRUE(w->valid(buffer.resolve(again)));
    EXPECT_NE(buffer.resolve(again), e1);
    EXPECT_EQ(w->alive(), 2U);
}

TEST(CommandBuffer, APendingEntityWhoseCreateFailedResolvesToNull) {
    // 8-bit indices: 255 usable indices, then the pool is exhausted.
    using tiny = ecsnet::ecs::entity_traits<std::uint8_t, std::uint8_t>;
    const auto w = ecsnet::ecs::basic_world<tiny>::make();
    while (w->alive() < 255) {
        (void)w->create();
    }
    ecsnet::ecs::basic_command_buffer<tiny> buffer;
    const pending_entity p = buffer.create();
    buffer.emplace<Health>(p, 1);
    buffer.emplace<Health>(w->current(7), 7);

    const auto report = buffer.flush(*w);
    EXPECT_EQ(report.applied, 1U);
    ASSERT_EQ(report.failures.size(), 2U);
    EXPECT_EQ(report.failures[0].command, 0U);
    EXPECT_THAT(report.failures[0].what, HasSubstr("exhausted"));
    EXPECT_EQ(report.failures[1].command, 1U);
    EXPECT_THAT(report.failures[1].what, HasSubstr("null entity"));
    EXPECT_TRUE(buffer.resolve(p).is_null());
    EXPECT_EQ(w->get<Health>(w->current(7)).hp, 7);
}

TEST(CommandBuffer, ABufferFilledDuringIterationAppliesAfterTheLoop) {
    const auto w = World::make();
    std::vector<Entity> entities;
    for (int i = 0; i < 6; ++i) {
        entities.push_back(w->create());
        w->emplace<Health>(entities.back(), i % 3);  // 0, 1, 2, 0, 1, 2
    }
    CommandBuffer buffer;
    for (auto [e, h] : w->view<const Health>()) {
        if (h.hp == 0) {
            buffer.destroy(e);
        } else if (h.hp == 1) {
            buffer.emplace<Dead>(e);
            buffer.erase<Health>(e);
        } else {
            const pending_entity child = buffer.create();
            buffer.emplace<Health>(child, 100);
        }
    }
    w->view<Health>(ecsnet::ecs::exclude<Dead>).each([&](Entity e, Health& h) {
        buffer.patch<Health>(e, [](Health& later) { later.hp += 1000; });
        h.hp += 1;  // direct value write: applies at once
    });
    EXPECT_EQ(w->alive(), 6U);  // nothing structural yet

    const auto report = buffer.flush(*w);
    // Health patches of entities destroyed (hp 0) or stripped of Health (hp 1) fail.
    EXPECT_EQ(report.failures.size(), 4U);
    EXPECT_EQ(w->alive(), 4U + 2U);
    EXPECT_FALSE(w->valid(entities[0]));
    EXPECT_FALSE(w->valid(entities[3]));
    EXPECT_TRUE(w->has<Dead>(entities[1]));
    EXPECT_FALSE(w->has<Health>(entities[1]));
    EXPECT_EQ(w->get<Health>(entities[2]).hp, 2 + 1 + 1000);
    EXPECT_EQ(w->get<Health>(entities[5]).hp, 2 + 1 + 1000);
    std::vector<int> children;
    w->view<const Health>().each([&](Entity e, const Health& h) {
        if (e != entities[2] && e != entities[5]) {
            children.push_back(h.hp);
        }
    });
    EXPECT_THAT(children, ElementsAre(100, 100));
}

struct OwnedAggregate {
    std::unique_ptr<int> value;
};

class OwnedClass {
public:
    explicit OwnedClass(int v) : value_{std::make_unique<int>(v)} {}
    [[nodiscard]] int value() const { return *value_; }
    void add(int d) { *value_ += d; }

private:
    std::unique_ptr<int> value_;
};

static_assert(!std::is_copy_constructible_v<OwnedAggregate>);
static_assert(!std::is_copy_constructible_v<OwnedClass>);

TEST(CommandBuffer, MoveOnlyComponents) {
    const auto w = World::make();
    const Entity e = w->create();
    CommandBuffer buffer;
    buffer.emplace<OwnedAggregate>(e, std::make_unique<int>(1));
    buffer.emplace<OwnedClass>(e, 10);
    buffer.emplace_or_replace<OwnedAggregate>(e, std::make_unique<int>(2));
    buffer.patch<OwnedClass>(e,
                             [bonus = std::make_unique<int>(5)](OwnedClass& c) { c.add(*bonus); });
    const pending_entity p = buffer.create();
    buffer.emplace<OwnedAggregate>(p, std::make_unique<int>(3));

    ASSERT_TRUE(buffer.flush(*w).ok());
    EXPECT_EQ(*w->get<OwnedAggregate>(e).value, 2);
    EXPECT_EQ(w->get<OwnedClass>(e).value(), 15);
    EXPECT_EQ(*w->get<OwnedAggregate>(buffer.resolve(p)).value, 3);
}

TEST(CommandBuffer, MovedBufferKeepsItsCommands) {
    const auto w = World::make();
    const Entity e = w->create();
    CommandBuffer first;
    first.emplace<Health>(e, 4);
    CommandBuffer second{std::move(first)};
    EXPECT_EQ(second.size(), 1U);
    ASSERT_TRUE(second.flush(*w).ok());
    EXPECT_EQ(w->get<Health>(e).hp, 4);
}

TEST(CommandBuffer, RemoveIfPresentIsToleratedOnMissingComponents) {
    const auto w = World::make();
    const Entity e = w->create();
    w->emplace<Health>(e, 1);
    CommandBuffer buffer;
    buffer.remove<Health, Position>(e);
    buffer.remove<Health>(e);
    const auto report = buffer.flush(*w);
    EXPECT_THAT(report.failures, IsEmpty());
    EXPECT_EQ(report.applied, 2U);
    EXPECT_FALSE(w->has<Health>(e));
}

}  // namespace command_buffer_test
