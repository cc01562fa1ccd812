// The prediction module's C ABI (shared/client/include/ecsnet/client/prediction_module.h), built
// natively with the arena's declare_prediction: what it refuses and why, and one predicted ship
// with a bullet read back through the view. tests/wasm compares the WebAssembly build with this.
#include "ecsnet/client/prediction_module.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ecsnet/arena/components.hpp"
#include "ecsnet/arena/flight.hpp"
#include "ecsnet/arena/game.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"

namespace prediction_module_test {
namespace {

namespace arena = ecsnet::arena;
namespace protocol = ecsnet::protocol;
namespace ecs = ecsnet::ecs;

constexpr double nan = std::numeric_limits<double>::quiet_NaN();

int receive(const protocol::frame& f) {
    std::memcpy(ecsnet_frame_buffer(f->size()), f->data(), f->size());
    return ecsnet_receive(f->size());
}

// A server world with one arena ship of owner 7, its Welcome and snapshot sent to the module.
struct arena_server {
    arena_server() {
        arena::register_components(types);
        ship = world->create();
        world->emplace<arena::Position>(ship, arena::Position{10.0F, 20.0F});
        world->emplace<arena::Velocity>(ship);
        world->emplace<arena::Heading>(ship);
        world->emplace<arena::Pilot>(ship);
        world->emplace<arena::Ship>(ship);
        world->emplace<protocol::Owner>(ship, protocol::Owner{7});
        world->emplace<arena::Stats>(ship, arena::Stats{0, arena::rules::max_ammo, 0});
        world->discard_changes();
    }

    void join() {
        ASSERT_EQ(receive(protocol::encode(protocol::server_control{
                      protocol::welcome{7, protocol::protocol_version, 30.0F, 0, 0, {}, {}, types.types()}})),
                  1)
            << ecsnet_error();
        for (const protocol::frame& f : encoder.encode_snapshot(*world, 0)) {
            ASSERT_EQ(receive(f), 1) << ecsnet_error();
        }
        ASSERT_EQ(receive(*encoder.encode_owner_only_snapshot(*world, 7, 0)), 1) << ecsnet_error();
    }

    protocol::component_registry types;
    std::shared_ptr<ecs::World> world = ecs::World::make();
    protocol::replication_encoder encoder{types};
    ecs::Entity ship;
};

TEST(PredictionModule, RefusesOptionsOutOfRangeAndNamesThem) {
    const double history[] = {1.0};
    EXPECT_EQ(ecsnet_configure("", history, 1), 0);
    EXPECT_NE(std::string{ecsnet_error()}.find("history_ticks"), std::string::npos) << ecsnet_error();
    const double half_life[] = {nan, nan, nan, nan, -5.0};
    EXPECT_EQ(ecsnet_configure("", half_life, 5), 0);
    EXPECT_NE(std::string{ecsnet_error()}.find("half_life_ms"), std::string::npos) << ecsnet_error();
    const double defaults[] = {nan, nan, nan, nan, nan, nan, nan};
    EXPECT_EQ(ecsnet_configure("size=800", defaults, 7), 1) << "NaN keeps a default";
}

TEST(PredictionModule, RefusesMalformedFramesAndCallsBeforeAWelcome) {
    EXPECT_EQ(ecsnet_track(1, 1), 0);
    EXPECT_NE(std::string{ecsnet_error()}.find("before a Welcome"), std::string::npos) << ecsnet_error();
    EXPECT_EQ(ecsnet_update(10, 0.0), 0);
    std::memset(ecsnet_frame_buffer(16), 0xab, 16);
    EXPECT_EQ(ecsnet_receive(16), 0);
    EXPECT_NE(std::string{ecsnet_error()}.find("malformed server frame"), std::string::npos) << ecsnet_error();
    ecsnet_frame_buffer(8);
    EXPECT_EQ(ecsnet_receive(64), 0) << "more bytes than the buffer holds";
    EXPECT_STREQ(ecsnet_types_json(), "[]");
}

TEST(PredictionModule, AGameConfigItCannotReadRefusesTheWelcome) {
    ASSERT_EQ(ecsnet_configure("width=800", nullptr, 0), 1);
    arena_server server;
    EXPECT_EQ(receive(protocol::encode(protocol::server_control{
                  protocol::welcome{7, protocol::protocol_version, 30.0F, 0, 0, {}, {}, server.types.types()}})),
              0);
    EXPECT_NE(std::string{ecsnet_error()}.find("size=<the arena's side>"), std::string::npos) << ecsnet_error();
}

TEST(PredictionModule, PredictsTheShipAndItsBulletThroughTheView) {
    const double options[] = {nan, nan, nan, 1e9};  // no time budget
    ASSERT_EQ(ecsnet_configure("size=800", options, 4), 1);
    arena_server server;
    server.join();
    const std::string types = ecsnet_types_json();
    EXPECT_NE(types.find(R"({"name":"position","replicated":true,"input":false,"fields":2})"), std::string::npos) << types;
    EXPECT_NE(types.find(R"({"name":"pilot","replicated":true,"input":true,"fields":4})"), std::string::npos) << types;
    EXPECT_NE(types.find(R"({"name":"ship_timers","replicated":false)"), std::string::npos) << types;

    EXPECT_EQ(ecsnet_track(server.ship.index(), server.ship.version() + 1), 0) << "a version the mirror does not hold";
    ASSERT_EQ(ecsnet_track(server.ship.index(), server.ship.version()), 1) << ecsnet_error();

    const protocol::component_info* pilot = server.types.types().find("pilot");
    const protocol::component_info* position = server.types.types().find("position");
    ASSERT_NE(pilot, nullptr);
    const auto press = protocol::pack(arena::Pilot{1.0F, 0.0F, true, false});
    EXPECT_EQ(ecsnet_input_value(pilot->id, reinterpret_cast<const std::uint8_t*>(press.data()), press.size() - 1), 0);
    EXPECT_NE(std::string{ecsnet_error()}.find("pilot is"), std::string::npos) << ecsnet_error();
    EXPECT_EQ(ecsnet_input_value(position->id, reinterpret_cast<const std::uint8_t*>(press.data()), press.size()), 0)
        << "position is no input";
    ASSERT_EQ(ecsnet_input_value(pilot->id, reinterpret_cast<const std::uint8_t*>(press.data()), press.size()), 1);
    // The first prediction starts from the state as tracked, at the tick before the one asked.
    ASSERT_EQ(ecsnet_set_input(3, server.ship.index(), server.ship.version()), 1);
    ASSERT_EQ(ecsnet_update(3, 1.0 / 30), 1) << ecsnet_error();

    // Records of 4 + (1 + fields) per replicated type: the ship, then the bullet it fired.
    std::size_t stride = 4;
    for (const char* name : {"position", "velocity", "heading", "ship", "owner", "stats", "bullet", "pilot"}) {
        stride += 1 + server.types.types().find(name)->fields.size();
    }
    std::size_t count = 0;
    const double* view = ecsnet_view(&count);
    ASSERT_EQ(count, 2 * stride);
    EXPECT_EQ(view[0], 0.0) << "a tracked entity";
    EXPECT_EQ(view[1], server.ship.index());
    EXPECT_EQ(view[2], server.ship.version());
    EXPECT_EQ(view[4], 1.0) << "its position, present";
    EXPECT_GT(view[5], 10.0) << "thrust along +x";
    EXPECT_EQ(view[6], 20.0);
    const double* bullet = view + stride;
    EXPECT_EQ(bullet[0], 1.0) << "a pending spawn";
    EXPECT_EQ(bullet[2], 3.0) << "made at tick 3";

    const double* stats = ecsnet_stats();
    EXPECT_EQ(stats[0], 1.0) << "ticks predicted";
    EXPECT_EQ(stats[10], 1.0) << "spawns predicted";
    EXPECT_EQ(stats[13], 3.0) << "the predicted tick";
    std::size_t events = 0;
    (void)ecsnet_events(&events);
    EXPECT_EQ(events, 0U);
}

// A tick's owner-only Delta (the ship's Stats) comes after its Delta: the module compares the
// tick only once a frame after the Delta says it is whole.
TEST(PredictionModule, ComparesATickOnlyOnceItsOwnerOnlyDeltaIsIn) {
    const double options[] = {nan, nan, nan, 1e9};
    ASSERT_EQ(ecsnet_configure("size=800", options, 4), 1);
    arena_server server;
    server.join();
    ASSERT_EQ(ecsnet_track(server.ship.index(), server.ship.version()), 1) << ecsnet_error();
    const protocol::component_info* pilot = server.types.types().find("pilot");
    ASSERT_NE(pilot, nullptr);
    const arena::Pilot firing{0.0F, 0.0F, true, false};
    const auto fire = protocol::pack(firing);
    for (const double tick : {1.0, 2.0}) {  // predicted: fired at tick 1, ammo 11 from there
        ASSERT_EQ(ecsnet_input_value(pilot->id, reinterpret_cast<const std::uint8_t*>(fire.data()), fire.size()), 1);
        ASSERT_EQ(ecsnet_set_input(tick, server.ship.index(), server.ship.version()), 1) << ecsnet_error();
        ASSERT_EQ(ecsnet_update(tick, 1.0 / 30), 1) << ecsnet_error();
    }

    // The server's tick 1, as the prediction has it: Pilot in the shared Delta, Stats apart.
    const auto server_tick = [&](std::uint64_t tick, std::uint16_t ammo) {
        server.world->replace<arena::Pilot>(server.ship, firing);
        server.world->replace<arena::Stats>(server.ship, arena::Stats{0, ammo, 0});
        const auto changes = server.world->take_changes();
        auto own = server.encoder.encode_owner_only(*server.world, changes, tick);
        return std::pair{server.encoder.encode_delta(*server.world, changes, tick), std::move(own.at(0).bytes)};
    };
    const auto checks = [] { return ecsnet_stats()[1]; };
    const auto mispredictions = [] { return ecsnet_stats()[2]; };
    auto [delta, owner_only] = server_tick(1, arena::rules::max_ammo - 1);
    ASSERT_EQ(receive(delta), 1) << ecsnet_error();
    ASSERT_EQ(ecsnet_update(2, 0), 1) << ecsnet_error();
    EXPECT_EQ(checks(), 0.0) << "tick 1 without its Stats (the mirror holds tick 0's ammo) is not compared";
    ASSERT_EQ(receive(owner_only), 1) << ecsnet_error();
    ASSERT_EQ(ecsnet_update(2, 0), 1) << ecsnet_error();
    EXPECT_EQ(checks(), 1.0) << "compared once whole";
    EXPECT_EQ(mispredictions(), 0.0) << "and it agrees: ammo 11";

    // Tick 2's Delta, then tick 3's before any update: tick 2 was left before it was whole
    // and is not compared; tick 3 is, once a frame after its Delta says it is whole.
    ASSERT_EQ(receive(server_tick(2, arena::rules::max_ammo - 1).first), 1) << ecsnet_error();
    server.world->replace<arena::Pilot>(server.ship, firing);
    const protocol::frame delta3 = server.encoder.encode_delta(*server.world, server.world->take_changes(), 3);
    ASSERT_EQ(receive(delta3), 1) << ecsnet_error();
    EXPECT_EQ(checks(), 1.0) << "a receive compares nothing";

    // A compact frame (the InputAck that ends a tick) makes tick 3 whole.
    ASSERT_EQ(ecsnet_update(3, 0), 1) << ecsnet_error();
    EXPECT_EQ(checks(), 1.0) << "tick 3 waits: its owner-only Delta may follow";
    const protocol::frame ack = protocol::encode_compact_input_ack(protocol::input_ack{3, 3, 1, 0, 0});
    ASSERT_EQ(receive(ack), 1) << ecsnet_error();
    ASSERT_EQ(ecsnet_update(3, 0), 1) << ecsnet_error();
    EXPECT_EQ(checks(), 2.0) << "tick 3, whole";
    EXPECT_EQ(mispredictions(), 0.0);
}

}  // namespace
}  // namespace prediction_module_test
