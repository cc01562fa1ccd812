// Golden frames: wire compatibility with protocol version 3, and with version 2 where it holds.
//
// tests/protocol/golden/<name>.bin holds one frame (length prefix included) per message type,
// produced by version 3 of the encoders with the demo game's types registered as ecsnet-server
// registers them (owner 0, position 1, velocity 2, health 3, lifetime 4, name 5). Version 1
// (fixed ComponentColumns) is not readable by version 2: the files were regenerated for it.
// Version 3 (interest management) only appended: a union member (Focus) and fields at the end
// of tables (Delta.entered/left, Checksum.excluded, Welcome.interest_radius/client_budget), so
// every version 2 frame still decodes. Only Hello and Welcome changed bytes (the version number,
// the new Welcome fields); golden/v2/ keeps their version 2 files, decoded with the new fields
// at their defaults. The other version 2 files were byte-identical under version 3 and are the
// top-level ones. Two checks per frame:
//
//   GoldenFrame.DecodesToTheExpectedContent: today's decoders read the checked-in bytes into
//     exactly the values listed below. This is the compatibility guarantee: it must keep
//     passing with the old files, whatever changes.
//   GoldenFrame.EncodesToTheSameBytes: today's encoders still produce those bytes. A failure
//     here alone means the FlatBuffers output changed (a new flatc/library version, a schema
//     addition, an encoder change) while old frames still decode.
//
// Regenerating, only after the decode tests passed against the old files:
//
//   ECSNET_REGENERATE_GOLDEN=1 ./build/<dir>/bin/protocol_golden_test
//
// writes every file from today's encoders instead of comparing, then checks the decoding of
// the new files; review and commit tests/protocol/golden/ afterwards. (The v2/ cases encode
// version 2 values, which today's encoders still write byte for byte as version 2 did.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "printers.hpp"
#include "test_types.hpp"

namespace {

namespace proto = ecsnet::protocol;
namespace wire = ecsnet::wire;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::ecs::world_options;
using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using proto::Owner;
using bytes = std::vector<std::uint8_t>;

const std::filesystem::path golden_dir{ECSNET_GOLDEN_DIR};

bool regenerating() {
    const char* flag = std::getenv("ECSNET_REGENERATE_GOLDEN");
    return flag != nullptr && std::string{flag} == "1";
}

std::filesystem::path golden_path(const std::string& name) {
    return golden_dir / (name + ".bin");
}

bool read_file(const std::filesystem::path& path, bytes& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return false;
    }
    out.assign(std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{});
    return true;
}

void write_file(const std::filesystem::path& path, const bytes& content) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(content.data()),
              static_cast<std::streamsize>(content.size()));
    ASSERT_TRUE(out.good()) << "cannot write " << path;
}

// The demo game's types, as ecsnet-server registers them.
const proto::component_registry& types() {
    static const proto::component_registry registry = ecsnet::testing::demo_types();
    return registry;
}

// ---- the fixed world behind the Snapshot and Delta frames -------------------------------

constexpr std::uint64_t snapshot_tick = 100;
constexpr std::uint64_t delta_tick = 101;
// Interest management: a client joins with an empty snapshot at snapshot_tick, what it sees
// enters at view_enter_tick, and the golden world's advance() reaches it at view_delta_tick.
constexpr std::uint64_t view_enter_tick = 101;
constexpr std::uint64_t view_delta_tick = 102;
constexpr std::uint32_t viewer = 7;  // owns e[4]

struct golden_world {
    std::shared_ptr<World> world = World::make(world_options{.entities = {.min_free_indices = 0}});
    std::vector<Entity> e;

    golden_world() {
        for (int i = 0; i < 6; ++i) {
            e.push_back(world->create());
        }
        world->emplace<Position>(e[0], 1.0F, 2.0F);
        world->emplace<Velocity>(e[0], 0.5F, -0.5F);
        world->emplace<Position>(e[1], 3.0F, 4.0F);
        world->emplace<Velocity>(e[1], 0.0F, 1.0F);
        world->emplace<Position>(e[2], 5.0F, 6.0F);
        world->emplace<Velocity>(e[2], 1.0F, 0.0F);
        world->emplace<Health>(e[3], 100);
        world->emplace<Name>(e[3], "tower");
        world->emplace<Owner>(e[4], 7U);
        world->emplace<Lifetime>(e[4], 300U);
        // e[5] has no replicated component.
        static_cast<void>(world->take_changes());
    }

    // Tick 101: a destroy, an index reused, a spawn, updates, an add, removals.
    void advance() {
        world->destroy(e[1]);
        const Entity reused = world->create();
        world->emplace<Position>(reused, 7.0F, 8.0F);
        world->emplace<Velocity>(reused, -1.0F, -1.0F);
        const Entity fresh = world->create();
        world->emplace<Health>(fresh, 50);
        world->emplace<Name>(fresh, "newcomer");
        world->patch<Position>(e[0], [](Position& p) { p.x = 1.5F; });
        world->emplace<Health>(e[2], 75);
        world->replace<Name>(e[3], "tower II");
        world->erase<Velocity>(e[2]);
        world->erase<Lifetime>(e[4]);
    }
};

using world_content = std::map<Entity, proto::component_set>;

// What a client must hold after the golden Snapshot, written out by hand.
world_content after_snapshot() {
    return {
        {Entity{0, 1}, proto::component_set{}.set(Position{1, 2}).set(Velocity{0.5F, -0.5F})},
        {Entity{1, 1}, proto::component_set{}.set(Position{3, 4}).set(Velocity{0, 1})},
        {Entity{2, 1}, proto::component_set{}.set(Position{5, 6}).set(Velocity{1, 0})},
        {Entity{3, 1}, proto::component_set{}.set(Health{100}).set(Name{"tower"})},
        {Entity{4, 1}, proto::component_set{}.set(Owner{7}).set(Lifetime{300})},
        {Entity{5, 1}, proto::component_set{}},
    };
}

// ... and after the golden Delta on top of it.
world_content after_delta() {
    return {
        {Entity{0, 1}, proto::component_set{}.set(Position{1.5F, 2}).set(Velocity{0.5F, -0.5F})},
        {Entity{1, 2}, proto::component_set{}.set(Position{7, 8}).set(Velocity{-1, -1})},
        {Entity{2, 1}, proto::component_set{}.set(Position{5, 6}).set(Health{75})},
        {Entity{3, 1}, proto::component_set{}.set(Health{100}).set(Name{"tower II"})},
        {Entity{4, 1}, proto::component_set{}.set(Owner{7})},
        {Entity{5, 1}, proto::component_set{}},
        {Entity{6, 1}, proto::component_set{}.set(Health{50}).set(Name{"newcomer"})},
    };
}

// Interest management: what the viewer holds after the golden view entry on an empty snapshot
// (e[5] out of its view) ...
world_content after_view_enter() {
    world_content out = after_snapshot();
    out.erase(Entity{5, 1});
    return out;
}

// ... and after the golden view delta: e[1] destroyed, e[3] out of view, e[5] in, 1:2 and 6:1
// spawned in view, the updates of advance() on what it still sees.
world_content after_view_delta() {
    world_content out = after_delta();
    out.erase(Entity{3, 1});
    return out;
}

world_content content_of(const proto::mirror& mirror) {
    world_content out;
    mirror.each([&](Entity e) {
        proto::component_set set;
        ecsnet::testing::for_each_test_type([&]<typename T>() {
            if (const auto value = mirror.get<T>(e)) {
                set.set(*value);
            }
        });
        out.emplace(e, std::move(set));
    });
    return out;
}

const wire::ServerMessage* verified_server(std::span<const std::uint8_t> frame) {
    std::string why;
    const wire::ServerMessage* message = proto::verify_server_frame(frame, &why);
    EXPECT_NE(message, nullptr) << "golden frame does not verify: " << why;
    return message;
}

// Applies a checked-in frame to the mirror.
void apply_golden_file(proto::mirror& mirror, const std::string& name) {
    bytes frame;
    ASSERT_TRUE(read_file(golden_path(name), frame)) << "missing " << golden_path(name);
    const wire::ServerMessage* message = verified_server(frame);
    ASSERT_NE(message, nullptr);
    ASSERT_TRUE(mirror.apply(*message)) << name << ": " << mirror.error();
}

// The entities of the golden world that the viewer's view entries and view delta name.
proto::frame encode_golden_view_enter() {
    golden_world g;
    const std::vector<Entity> entered{g.e[0], g.e[1], g.e[2], g.e[3], g.e[4]};
    proto::replication_encoder encoder{types()};
    proto::replication_encoder::view_changes changes;
    changes.entered = entered;
    changes.viewer = viewer;
    return encoder.encode_view_delta(*g.world, changes, view_enter_tick);
}

proto::frame encode_golden_view_delta() {
    golden_world g;
    g.advance();
    namespace ids = ecsnet::testing::ids;
    const auto bit = [](std::uint16_t id) { return std::uint64_t{1} << id; };
    const std::vector<Entity> destroyed{g.e[1]};
    const std::vector<Entity> left{g.e[3]};
    const std::vector<Entity> spawned{Entity{1, 2}, Entity{6, 1}};
    const std::vector<Entity> entered{g.e[5]};
    const std::vector<std::pair<Entity, std::uint64_t>> updated{
        {g.e[0], bit(ids::position)},
        {g.e[2], bit(ids::velocity) | bit(ids::health)},
        {g.e[4], bit(ids::lifetime)},
    };
    proto::replication_encoder encoder{types()};
    return encoder.encode_view_delta(*g.world,
                                     {.destroyed = destroyed,
                                      .left = left,
                                      .spawned = spawned,
                                      .entered = entered,
                                      .updated = updated,
                                      .viewer = viewer,
                                      .present = {}},
                                     view_delta_tick);
}

// Entities by the callback they fired.
struct view_events {
    std::vector<Entity> spawned;
    std::vector<Entity> entered;
    std::vector<Entity> left;
    std::vector<Entity> destroyed;

    explicit view_events(proto::mirror& mirror) {
        mirror.events().on_spawn = [this](Entity e) { spawned.push_back(e); };
        mirror.events().on_enter = [this](Entity e) { entered.push_back(e); };
        mirror.events().on_leave = [this](Entity e) { left.push_back(e); };
        mirror.events().on_destroy = [this](Entity e) { destroyed.push_back(e); };
    }
};

void check_golden_empty_snapshot(std::span<const std::uint8_t> frame) {
    const wire::ServerMessage* message = verified_server(frame);
    ASSERT_NE(message, nullptr);
    const wire::Snapshot* snapshot = message->body_as_Snapshot();
    ASSERT_NE(snapshot, nullptr);
    EXPECT_EQ(snapshot->tick(), snapshot_tick);
    EXPECT_EQ(snapshot->chunk_count(), 1U);
    EXPECT_EQ(snapshot->entity_count(), 0U);
    proto::mirror mirror{types().types()};
    ASSERT_TRUE(mirror.apply(*message)) << mirror.error();
    EXPECT_TRUE(mirror.ready());
    EXPECT_EQ(mirror.tick(), snapshot_tick);
    EXPECT_EQ(mirror.size(), 0U);
}

void check_golden_view_enter(std::span<const std::uint8_t> frame) {
    proto::mirror mirror{types().types()};
    apply_golden_file(mirror, "server_empty_snapshot");
    ASSERT_TRUE(mirror.ready());
    EXPECT_EQ(mirror.size(), 0U);

    const wire::ServerMessage* message = verified_server(frame);
    ASSERT_NE(message, nullptr);
    const wire::Delta* delta = message->body_as_Delta();
    ASSERT_NE(delta, nullptr);
    EXPECT_EQ(delta->tick(), view_enter_tick);
    EXPECT_EQ(delta->spawned(), nullptr);
    EXPECT_EQ(delta->left(), nullptr);
    ASSERT_NE(delta->entered(), nullptr);

    view_events events{mirror};
    ASSERT_TRUE(mirror.apply(*message)) << mirror.error();
    EXPECT_THAT(events.entered, ::testing::UnorderedElementsAre(Entity{0, 1}, Entity{1, 1},
                                                                Entity{2, 1}, Entity{3, 1},
                                                                Entity{4, 1}));
    EXPECT_THAT(events.spawned, ::testing::IsEmpty());
    EXPECT_EQ(mirror.statistics().entered, 5U);
    EXPECT_EQ(content_of(mirror), after_view_enter());
}

void check_golden_view_delta(std::span<const std::uint8_t> frame) {
    proto::mirror mirror{types().types()};
    apply_golden_file(mirror, "server_empty_snapshot");
    apply_golden_file(mirror, "server_view_enter");

    const wire::ServerMessage* message = verified_server(frame);
    ASSERT_NE(message, nullptr);
    const wire::Delta* delta = message->body_as_Delta();
    ASSERT_NE(delta, nullptr);
    EXPECT_EQ(delta->tick(), view_delta_tick);
    EXPECT_FALSE(delta->owner_only());
    ASSERT_NE(delta->left(), nullptr);
    ASSERT_EQ(delta->left()->size(), 1U);
    EXPECT_EQ(delta->left()->Get(0)->index(), 3U);
    EXPECT_EQ(delta->left()->Get(0)->version(), 1U);
    ASSERT_NE(delta->entered(), nullptr);
    ASSERT_NE(delta->destroyed(), nullptr);
    EXPECT_EQ(delta->destroyed()->size(), 1U);

    view_events events{mirror};
    ASSERT_TRUE(mirror.apply(*message)) << mirror.error();
    EXPECT_THAT(events.destroyed, ::testing::ElementsAre(Entity{1, 1}));
    EXPECT_THAT(events.left, ::testing::ElementsAre(Entity{3, 1}));
    EXPECT_THAT(events.spawned, ::testing::UnorderedElementsAre(Entity{1, 2}, Entity{6, 1}));
    EXPECT_THAT(events.entered, ::testing::ElementsAre(Entity{5, 1}));
    EXPECT_EQ(mirror.tick(), view_delta_tick);
    EXPECT_EQ(content_of(mirror), after_view_delta());
}

// ---- the cases ----------------------------------------------------------------------------

struct golden_case {
    std::string name;                                          // golden/<name>.bin
    std::function<proto::frame()> encode;                      // today's encoder
    std::function<void(std::span<const std::uint8_t>)> check;  // decoded == expected
};

std::ostream& operator<<(std::ostream& out, const golden_case& c) {
    return out << c.name;
}

golden_case client_case(std::string name, proto::client_message expected) {
    return {std::move(name), [expected] { return proto::encode(expected, types().types()); },
            [expected](std::span<const std::uint8_t> frame) {
                const proto::decoded_client decoded =
                    proto::decode_client_frame(frame, types().types());
                ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
                EXPECT_TRUE(*decoded.message == expected) << "decoded other values";
            }};
}

// A client message of a game with an input type.
golden_case input_client_case(std::string name, proto::client_message expected) {
    static const proto::component_registry input_types = ecsnet::testing::input_types();
    return {std::move(name), [expected] { return proto::encode(expected, input_types.types()); },
            [expected](std::span<const std::uint8_t> frame) {
                const proto::decoded_client decoded =
                    proto::decode_client_frame(frame, input_types.types());
                ASSERT_TRUE(decoded.message.has_value()) << decoded.error.message;
                EXPECT_TRUE(*decoded.message == expected) << "decoded other values";
            }};
}

// The golden full Input of a game with an input type (test_types.hpp: Stick), version 5 on.
proto::input golden_input() {
    return proto::input{Entity{42, 3}, 1000,
                        {proto::component_set{}.set(ecsnet::testing::Stick{0.5F, -0.25F, 1}),
                         proto::component_set{}.set(ecsnet::testing::Stick{1.0F, 0.0F, 3})},
                        994, 0.25F};
}

// A compact Input, read with the reference its full form sets.
golden_case compact_input_case(std::string name, proto::input expected) {
    static const proto::component_registry input_types = ecsnet::testing::input_types();
    const proto::input_reference reference = proto::reference_of(expected, input_types.types());
    return {std::move(name),
            [expected, reference] {
                return proto::encode_compact_input(expected, input_types.types(), reference);
            },
            [expected, reference](std::span<const std::uint8_t> frame) {
                proto::input decoded;
                const auto error = proto::decode_compact_input(
                    frame.subspan(proto::frame_prefix_bytes), input_types.types(), &reference, decoded);
                ASSERT_FALSE(error.has_value()) << error->message;
                EXPECT_TRUE(decoded == expected) << "decoded other values";
            }};
}

golden_case compact_ack_case(std::string name, proto::input_ack expected) {
    return {std::move(name), [expected] { return proto::encode_compact_input_ack(expected); },
            [expected](std::span<const std::uint8_t> frame) {
                std::string why;
                const auto decoded = proto::decode_compact_server_frame(frame, &why);
                ASSERT_TRUE(decoded.has_value()) << why;
                EXPECT_TRUE(*decoded == proto::server_control{expected}) << "decoded other values";
            }};
}

golden_case server_case(std::string name, proto::server_control expected) {
    return {std::move(name), [expected] { return proto::encode(expected); },
            [expected](std::span<const std::uint8_t> frame) {
                const wire::ServerMessage* message = verified_server(frame);
                ASSERT_NE(message, nullptr);
                std::string why;
                const auto decoded = proto::decode_server_control(*message, &why);
                ASSERT_TRUE(decoded.has_value()) << why;
                EXPECT_TRUE(*decoded == expected) << "decoded other values";
            }};
}

proto::frame encode_golden_snapshot() {
    golden_world g;
    proto::replication_encoder encoder{types()};
    const auto frames = encoder.encode_snapshot(*g.world, snapshot_tick);
    EXPECT_EQ(frames.size(), 1U);
    return frames.front();
}

proto::frame encode_golden_delta() {
    golden_world g;
    g.advance();
    proto::replication_encoder encoder{types()};
    return encoder.encode_delta(*g.world, g.world->take_changes(), delta_tick);
}

void check_golden_snapshot(std::span<const std::uint8_t> frame) {
    const wire::ServerMessage* message = verified_server(frame);
    ASSERT_NE(message, nullptr);
    const wire::Snapshot* snapshot = message->body_as_Snapshot();
    ASSERT_NE(snapshot, nullptr);
    EXPECT_EQ(snapshot->tick(), snapshot_tick);
    EXPECT_EQ(snapshot->chunk(), 0U);
    EXPECT_EQ(snapshot->chunk_count(), 1U);
    EXPECT_EQ(snapshot->entity_count(), 6U);

    proto::mirror mirror{types().types()};
    ASSERT_TRUE(mirror.apply(*message)) << mirror.error();
    EXPECT_TRUE(mirror.ready());
    EXPECT_EQ(mirror.tick(), snapshot_tick);
    EXPECT_EQ(content_of(mirror), after_snapshot());
}

void check_golden_delta(std::span<const std::uint8_t> frame) {
    // On top of the golden snapshot file, as a client would have it.
    bytes snapshot;
    ASSERT_TRUE(read_file(golden_path("server_snapshot"), snapshot));
    proto::mirror mirror{types().types()};
    const wire::ServerMessage* base = verified_server(snapshot);
    ASSERT_NE(base, nullptr);
    ASSERT_TRUE(mirror.apply(*base)) << mirror.error();

    const wire::ServerMessage* message = verified_server(frame);
    ASSERT_NE(message, nullptr);
    const wire::Delta* delta = message->body_as_Delta();
    ASSERT_NE(delta, nullptr);
    EXPECT_EQ(delta->tick(), delta_tick);
    ASSERT_NE(delta->destroyed(), nullptr);
    ASSERT_EQ(delta->destroyed()->size(), 1U);
    EXPECT_EQ(delta->destroyed()->Get(0)->index(), 1U);
    EXPECT_EQ(delta->destroyed()->Get(0)->version(), 1U);
    ASSERT_NE(delta->spawned(), nullptr);
    EXPECT_EQ(delta->spawned()->size(), 2U);
    // One column per type, by wire id: position, health and name updated; velocity and
    // lifetime removed.
    const auto types_of = [](const auto* columns) {
        std::vector<std::uint16_t> out;
        for (const wire::Column* column : *columns) {
            out.push_back(column->type());
        }
        return out;
    };
    namespace ids = ecsnet::testing::ids;
    ASSERT_NE(delta->updated(), nullptr);
    EXPECT_THAT(types_of(delta->updated()), ::testing::ElementsAre(ids::position, ids::health, ids::name));
    ASSERT_NE(delta->removed(), nullptr);
    EXPECT_THAT(types_of(delta->removed()), ::testing::ElementsAre(ids::velocity, ids::lifetime));

    std::vector<Entity> spawned;
    mirror.events().on_spawn = [&](Entity e) { spawned.push_back(e); };
    ASSERT_TRUE(mirror.apply(*message)) << mirror.error();
    EXPECT_THAT(spawned, ::testing::UnorderedElementsAre(Entity{1, 2}, Entity{6, 1}));
    EXPECT_EQ(mirror.tick(), delta_tick);
    EXPECT_EQ(content_of(mirror), after_delta());
}

// The golden Welcome of a server with interest management.
proto::welcome interest_welcome() {
    proto::welcome w{5, proto::protocol_version, 30.0F, 1234, 30, {}, "", types().types()};
    w.interest_radius = 256.0F;
    w.client_budget = 65'536;
    return w;
}

std::vector<golden_case> golden_cases() {
    static_assert(proto::protocol_version == 6, "new golden frames for the new version");
    const Entity target{42, 3};
    return {
        client_case("client_hello",
                    proto::hello{proto::protocol_version, "golden-client", "secret-token"}),
        // Version 3's Hello and Welcome (before player input): still served as they were.
        client_case("v3/client_hello", proto::hello{3, "golden-client", "secret-token"}),
        server_case("v3/server_welcome", [] {
            proto::welcome w = interest_welcome();
            w.version = 3;
            return w;
        }()),
        // Version 4: player input, for a game with an input type (test_types.hpp: Stick).
        client_case("v4/client_hello", proto::hello{4, "golden-client", "secret-token"}),
        server_case("v4/server_welcome", [] {
            proto::welcome w = interest_welcome();
            w.version = 4;
            return w;
        }()),
        input_client_case(
            "v4/client_input",
            proto::input{target, 1000,
                         {proto::component_set{}.set(ecsnet::testing::Stick{0.5F, -0.25F, 1}),
                          proto::component_set{}.set(ecsnet::testing::Stick{1.0F, 0.0F, 3})}}),
        // Version 5's Hello and Welcome (before the compact Input).
        client_case("v5/client_hello", proto::hello{5, "golden-client", "secret-token"}),
        server_case("v5/server_welcome", [] {
            proto::welcome w = interest_welcome();
            w.version = 5;
            return w;
        }()),
        // Version 6: the compact Input, of the full one below (its reference), and the
        // compact InputAck.
        compact_input_case("client_compact_input", golden_input()),
        compact_ack_case("server_compact_input_ack", proto::input_ack{1235, 1234, 2, 5, 7}),
        // Version 5: the render tick the client showed (lag compensation).
        input_client_case("client_input", golden_input()),
        server_case("server_input_ack", proto::input_ack{1235, 1234, 2, 5, 7}),
        server_case("server_input_rejected",
                    proto::input_rejected{1240, wire::ErrorCode::InputTooEarly,
                                          "8 ticks of input stamped more than 32 ticks ahead "
                                          "of tick 1200",
                                          3}),
        // Version 2's Hello: a server refuses the version, but the frame still reads.
        client_case("v2/client_hello", proto::hello{2, "golden-client", "secret-token"}),
        client_case("client_spawn", proto::spawn{7, proto::component_set{}
                                                        .set(Position{1.5F, -2.0F})
                                                        .set(Velocity{0.25F, 4.0F})
                                                        .set(Health{100})
                                                        .set(Lifetime{600})
                                                        .set(Name{"ship"})}),
        client_case("client_destroy", proto::destroy{8, target}),
        client_case(
            "client_set_components",
            proto::set_components{9, target,
                                  proto::component_set{}.set(Position{3, 4}).set(Name{"renamed"})}),
        client_case("client_remove_components",
                    proto::remove_components{10, target, {"velocity", "health"}}),
        client_case("client_ping", proto::ping{0x0123456789abcdefULL}),
        client_case("client_resync_request", proto::resync_request{"checksum mismatch at tick 77"}),
        client_case("client_focus", proto::focus{-128.5F, 4096.25F}),
        server_case("server_welcome", interest_welcome()),
        // Version 2's Welcome: no interest fields, read as 0 (whole world, unlimited).
        server_case("v2/server_welcome", proto::welcome{5, 2, 30.0F, 1234, 30, {}, "",
                                                        types().types()}),
        server_case("server_command_result",
                    proto::command_result{9, false, wire::ErrorCode::StaleVersion,
                                          "entity 42 is at version 4, not 3", Entity{42, 4}}),
        server_case("server_pong", proto::pong{0x0123456789abcdefULL, 1235}),
        server_case("server_checksum", proto::checksum_report{1235, 0xfeedfacecafebeefULL, 6}),
        server_case("server_checksum_excluded",
                    proto::checksum_report{1236, 0x0badc0ffee0ddf00ULL, 3, 0,
                                           std::numeric_limits<std::uint32_t>::max(),
                                           {2, 5, 70'000}}),
        server_case("server_disconnect", proto::disconnect{"server shutting down"}),
        {"server_snapshot", encode_golden_snapshot, check_golden_snapshot},
        {"server_delta", encode_golden_delta, check_golden_delta},
        {"server_empty_snapshot",
         [] {
             return proto::replication_encoder{types()}.encode_empty_snapshot(snapshot_tick);
         },
         check_golden_empty_snapshot},
        {"server_view_enter", encode_golden_view_enter, check_golden_view_enter},
        {"server_view_delta", encode_golden_view_delta, check_golden_view_delta},
    };
}

// The checked-in bytes; with ECSNET_REGENERATE_GOLDEN=1 first written from today's encoder.
bytes golden_bytes(const golden_case& c) {
    const auto path = golden_path(c.name);
    if (regenerating()) {
        write_file(path, *c.encode());
    }
    bytes out;
    EXPECT_TRUE(read_file(path, out))
        << "missing " << path << "; create it with ECSNET_REGENERATE_GOLDEN=1";
    return out;
}

class GoldenFrame : public ::testing::TestWithParam<golden_case> {};

TEST_P(GoldenFrame, DecodesToTheExpectedContent) {
    const bytes frame = golden_bytes(GetParam());
    ASSERT_FALSE(frame.empty());
    const std::uint32_t prefix = proto::read_prefix(
        std::span<const std::uint8_t, proto::frame_prefix_bytes>{frame.data(), proto::frame_prefix_bytes});
    ASSERT_EQ(proto::is_compact(prefix) ? proto::compact_of(prefix).length : prefix,
              frame.size() - proto::frame_prefix_bytes);
    GetParam().check(frame);
}

TEST_P(GoldenFrame, EncodesToTheSameBytes) {
    const bytes frame = golden_bytes(GetParam());
    const proto::frame today = GetParam().encode();
    EXPECT_TRUE(*today == frame)
        << "encoding " << GetParam().name << " today gives other bytes than "
        << golden_path(GetParam().name) << " (" << today->size() << " vs " << frame.size()
        << " bytes): the FlatBuffers output or an encoder changed. If the DecodesToTheExpected"
        << "Content tests pass with the checked-in files, the wire is still compatible: run the "
        << "regeneration (ECSNET_REGENERATE_GOLDEN=1 protocol_golden_test) and commit "
        << "tests/protocol/golden/.";
}

INSTANTIATE_TEST_SUITE_P(V6, GoldenFrame, ::testing::ValuesIn(golden_cases()),
                         [](const auto& info) {
                             std::string name = info.param.name;  // v2/x -> v2_x
                             std::replace(name.begin(), name.end(), '/', '_');
                             return name;
                         });

TEST(GoldenFrames, DirectoryHoldsExactlyTheKnownFrames) {
    std::set<std::string> expected;
    for (const auto& c : golden_cases()) {
        if (regenerating()) {
            static_cast<void>(golden_bytes(c));
        }
        expected.insert(c.name + ".bin");
    }
    std::set<std::string> present;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(golden_dir)) {
        if (entry.is_regular_file()) {
            present.insert(entry.path().lexically_relative(golden_dir).generic_string());
        }
    }
    EXPECT_EQ(present, expected) << "every golden file has a test case and the reverse";
}

TEST(GoldenFrames, CoverEveryMessageType) {
    // A new union member needs its golden frame.
    std::set<wire::ClientBody> client_types;
    std::set<wire::ServerBody> server_types;
    for (const auto& c : golden_cases()) {
        const proto::frame frame = c.encode();
        if (proto::is_compact(proto::read_prefix(
                std::span<const std::uint8_t>{*frame}.first<proto::frame_prefix_bytes>()))) {
            continue;  // a compact frame (protocol 6) carries no union member
        }
        if (const auto* m = proto::verify_client_frame(*frame)) {
            client_types.insert(m->body_type());
        } else if (const auto* s = proto::verify_server_frame(*frame)) {
            server_types.insert(s->body_type());
        } else {
            ADD_FAILURE() << c.name << " is neither a client nor a server frame";
        }
    }
    EXPECT_EQ(client_types.size(), static_cast<std::size_t>(wire::ClientBody::MAX));
    EXPECT_EQ(server_types.size(), static_cast<std::size_t>(wire::ServerBody::MAX));
}

}  // namespace
