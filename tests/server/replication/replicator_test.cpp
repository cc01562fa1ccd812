// replicator: the tick's frames for each client, over a real world (the demo's components) and
// the default grid policy, applied to a protocol::mirror as the client would.
#include "ecsnet/server/replication/replicator.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/mirror.hpp"

namespace replicator_test {

namespace protocol = ecsnet::protocol;
using ecsnet::demo::Health;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::server::interest_manager;
using ecsnet::server::point;
using ecsnet::server::replicator;
using ecsnet::server::replicator_options;

protocol::component_registry demo_types() {
    protocol::component_registry r;  // as the demo game registers them
    r.add<Position>();
    r.add<ecsnet::demo::Velocity>();
    r.add<Health>();
    r.add<ecsnet::demo::Lifetime>();
    r.add<ecsnet::demo::Name>();
    return r;
}

void apply(protocol::mirror& m, const protocol::frame& f) {
    const auto* message = protocol::verify_server_frame(*f);
    if (message == nullptr) {
        throw std::runtime_error("the replicator sent an unverifiable frame");
    }
    (void)m.apply(*message);
}

// Issue 24.9: a view that holds the whole world switches to the single stream. On the tick it
// switches, if that is its own checksum tick ((tick + id) % N == 0), the Checksum must still sum
// what its mirror holds; it summed nothing (the switch forgot the view's records first), a
// mismatch one time in N. Every phase of the interval is tried.
TEST(Replicator, AViewsChecksumOnTheTickItTurnsWholeWorldSumsWhatItHolds) {
    constexpr std::uint32_t interval = 5;
    constexpr std::uint32_t owner = 7;
    for (std::uint64_t id = 1; id <= interval; ++id) {
        SCOPED_TRACE("client id " + std::to_string(id));
        const protocol::component_registry types = demo_types();
        interest_manager interest;
        interest.set_defaults(interest_manager::defaults{50.0F, 0.0});  // unlimited budget
        interest.use_grid<Position>(25.0F, [](const Position& p) { return point{p.x, p.y}; });
        interest.set_focus(owner, {0, 0});
        replicator r{types, interest, replicator_options{50.0, interval, 65'536}};
        const std::shared_ptr<World> world =
            World::make(ecsnet::ecs::world_options{ecsnet::ecs::entity_pool_options{0}});
        protocol::mirror mirror{types.types()};

        r.add_client(id, owner);
        for (const auto& f : r.start_frames(*world, id, 0)) {
            apply(mirror, f);
        }
        const Entity e = world->create();
        world->emplace<Position>(e, 1.0F, 1.0F);
        world->emplace<Health>(e, 100);
        for (std::uint64_t tick = 1; tick <= 3 * interval; ++tick) {
            if (tick > 1) {
                world->replace<Position>(e, 1.0F, static_cast<float>(tick));
            }
            const auto changes = world->take_changes();
            interest.update(*world, changes);
            r.tick(*world, changes, tick,
                   [&](std::uint64_t client, const protocol::frame& delta,
                       const protocol::frame* checksum, const protocol::frame* own) {
                       ASSERT_EQ(client, id);
                       apply(mirror, delta);
                       if (own != nullptr) {
                           apply(mirror, *own);
                       }
                       if (checksum != nullptr) {
                           apply(mirror, *checksum);
                       }
                   });
            ASSERT_EQ(mirror.statistics().inconsistencies, 0U) << mirror.error();
        }
        ASSERT_NE(r.view(id), nullptr);
        EXPECT_TRUE(r.view(id)->whole_world()) << "it holds the whole world: the single stream";
        EXPECT_TRUE(mirror.contains(e));
        EXPECT_EQ(mirror.statistics().checksums_mismatched, 0U);
        EXPECT_GE(mirror.statistics().checksums_matched, 3U);
    }
}

}  // namespace replicator_test
