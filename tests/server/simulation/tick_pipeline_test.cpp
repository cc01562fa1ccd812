#include "ecsnet/server/simulation/tick_pipeline.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ecsnet/protocol/components.hpp"

namespace tick_pipeline_test {

namespace ecs = ecsnet::ecs;
namespace protocol = ecsnet::protocol;
namespace wire = ecsnet::wire;
using ecsnet::server::tick_pipeline;

struct pipeline_test : ::testing::Test {
    std::shared_ptr<ecs::World> world = ecs::World::make();
    protocol::component_registry types;
    ecsnet::server::server_metrics metrics{1.0 / 30.0, 8};
    tick_pipeline pipeline{*world, types, metrics,
                           tick_pipeline::settings{30.0, ecsnet::server::command_limits{100, 1000}, 8}};
    std::function<void(std::uint32_t, bool)> joined;
    std::function<void(std::uint32_t)> left;

    [[nodiscard]] tick_pipeline::player_hooks hooks() const { return {joined, left}; }
    ecs::Entity owned_by(std::uint32_t owner) {
        const ecs::Entity e = world->create();
        world->emplace<protocol::Owner>(e, owner);
        return e;
    }
};

TEST_F(pipeline_test, AFailingSystemIsCountedAndTheOthersStillRun) {
    int ran = 0;
    pipeline.scheduler().add("throws", ecs::component_access{},
                             [](auto&) { throw std::runtime_error{"broken"}; });
    pipeline.scheduler().add("counts", ecs::component_access{}, [&](auto&) { ++ran; });
    pipeline.export_system_failures(hooks());
    EXPECT_EQ(pipeline.run_systems(1), "");
    EXPECT_EQ(pipeline.run_systems(2), "");
    EXPECT_EQ(ran, 2);
    EXPECT_EQ(metrics.read().system_failures, 2U);
}

TEST_F(pipeline_test, StrictAccessReturnsTheFirstUndeclaredAccess) {
    tick_pipeline strict{*world, types, metrics,
                         tick_pipeline::settings{30.0, ecsnet::server::command_limits{100, 1000}, 8,
                                                 /*strict_access=*/true}};
    const ecs::Entity e = owned_by(7);
    int ran = 0;
    strict.scheduler().add("sneaky", ecs::component_access{},
                           [e](ecs::SystemContext& c) { (void)c.world.get<protocol::Owner>(e); });
    strict.scheduler().add("after", ecs::component_access{}, [&](auto&) { ++ran; });
    const std::string violation = strict.run_systems(5);
    EXPECT_NE(violation.find("tick 5: --strict-access:"), std::string::npos) << violation;
    EXPECT_NE(violation.find("system 'sneaky'"), std::string::npos) << violation;
    EXPECT_EQ(ran, 0);
    // Without it the same system fails alone, counted, and the others run.
    pipeline.scheduler().add("sneaky", ecs::component_access{},
                             [e](ecs::SystemContext& c) { (void)c.world.get<protocol::Owner>(e); });
    pipeline.scheduler().add("after", ecs::component_access{}, [&](auto&) { ++ran; });
    EXPECT_EQ(pipeline.run_systems(5), "");
    EXPECT_EQ(ran, 1);
}

TEST_F(pipeline_test, PlayerHooksHearOfJoinsAndLeavesAtTheNextTellInOrder) {
    std::vector<std::string> heard;
    joined = [&](std::uint32_t owner, bool resumed) {
        heard.push_back("joined " + std::to_string(owner) + (resumed ? " resumed" : ""));
    };
    left = [&](std::uint32_t owner) { heard.push_back("left " + std::to_string(owner)); };
    pipeline.player_joined(3, false);
    pipeline.player_left(3);
    pipeline.player_joined(3, true);
    EXPECT_TRUE(heard.empty()) << "nothing before the tick";
    pipeline.tell_players(hooks(), 1);
    EXPECT_EQ(heard, (std::vector<std::string>{"joined 3", "left 3", "joined 3 resumed"}));
    pipeline.tell_players(hooks(), 2);
    EXPECT_EQ(heard.size(), 3U) << "each event is told once";
}

TEST_F(pipeline_test, AThrowingHookIsCountedAsAFailureAndTheNextEventIsStillTold) {
    int told = 0;
    joined = [&](std::uint32_t owner, bool) {
        ++told;
        if (owner == 1) {
            throw std::runtime_error{"hook"};
        }
    };
    pipeline.player_joined(1, false);
    pipeline.player_joined(2, false);
    pipeline.tell_players(hooks(), 1);
    EXPECT_EQ(told, 2);
    EXPECT_EQ(metrics.read().system_failures, 1U);
}

TEST_F(pipeline_test, AnInputForAnEntityThatIsNotTheSendersIsRefusedWithItsReason) {
    const ecs::Entity mine = owned_by(5);
    const ecs::Entity theirs = owned_by(6);
    const ecs::Entity servers = world->create();

    const auto code_of = [&](ecs::Entity e) {
        const auto refused = pipeline.offer_input(5, protocol::input{e, 1, {protocol::component_set{}}}, 1);
        return refused ? refused->code : wire::ErrorCode::None;
    };
    EXPECT_EQ(code_of(theirs), wire::ErrorCode::NotOwner);
    EXPECT_EQ(code_of(servers), wire::ErrorCode::NotOwner);
    EXPECT_EQ(code_of(ecs::Entity{4000, 0}), wire::ErrorCode::UnknownEntity);
    EXPECT_EQ(code_of(ecs::Entity{mine.index(), mine.version() + 1}), wire::ErrorCode::StaleVersion);
    EXPECT_EQ(code_of(mine), wire::ErrorCode::None);
}

TEST_F(pipeline_test, DespawnEndsEveryEntityOfTheOwnersWhoseGraceEnded) {
    const ecs::Entity a = owned_by(7);
    const ecs::Entity b = owned_by(7);
    const ecs::Entity other = owned_by(8);
    (void)pipeline.take_changes();  // an earlier tick's: a change set is the net difference
    const std::vector<std::uint32_t> gone{7};
    pipeline.despawn(gone, 1);
    EXPECT_FALSE(world->valid(a));
    EXPECT_FALSE(world->valid(b));
    EXPECT_TRUE(world->valid(other));
    const auto& changes = pipeline.take_changes();
    EXPECT_EQ(changes.destroyed.size(), 2U);
}

}  // namespace tick_pipeline_test
