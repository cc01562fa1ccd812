// client::connection against the real ecsnet-server (a process on 127.0.0.1 and a free port):
// callbacks of the mirror and on_message may call the connection's public methods, reading
// included, without breaking the frame being applied or the order of the stream.
#include "ecsnet/client/connection.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "changed_types_generated.h"
#include "ecsnet/demo/components.hpp"
#include "process.hpp"

// The demo's types as another build of the game would have them (changed_types.fbs): same
// wire names, other layouts.
namespace ecsnet::test::changed {
struct PositionSwapped {
    float y{};
    float x{};
};
struct PositionQuantized {
    float x{};
    float y{};
};
struct HealthFloat {
    float value{};
};
}  // namespace ecsnet::test::changed

namespace ecsnet::protocol {
template <>
struct replicated<test::changed::PositionSwapped>
    : replicate<::changed::wire::PositionSwapped, "position"> {};
template <>
struct replicated<test::changed::PositionQuantized>
    : replicate<::changed::wire::PositionPlain, "position",
                replicate_options{.quantized = {.min = 0.0, .max = 4096.0, .step = 1.0 / 64}}> {};
template <>
struct replicated<test::changed::HealthFloat>
    : replicate<::changed::wire::HealthFloat, "health"> {};
}  // namespace ecsnet::protocol

namespace ecsnet::test {
namespace connection_test {

using client::connect_options;
using client::connection;
using demo::Health;
using demo::Name;
using demo::Position;
using ecs::Entity;
using protocol::component_set;
using ::testing::ElementsAre;

// Many moving demo entities: every Delta is tens of kilobytes, so reads made from a callback
// bring whole frames behind the one being applied.
const std::vector<std::string> busy_world{"--demo-entities", "3000"};

connect_options options_for(const server& s) {
    connect_options options;
    options.port = s.port();
    options.name = "callbacks";
    options.timeout = 20s;
    return options;
}

std::string outcome(const protocol::command_result& r) {
    return r.ok ? "ok" : r.message;
}

// The mirror checks itself against the server's next Checksum.
void expect_in_sync(connection& c) {
    const auto matched = c.mirror().statistics().checksums_matched;
    EXPECT_TRUE(c.poll_until(
        [&] { return c.mirror().statistics().checksums_matched > matched || !c.is_open(); }, 20s))
        << "no Checksum compared";
    const auto& stats = c.mirror().statistics();
    EXPECT_EQ(stats.inconsistencies, 0U) << c.mirror().error();
    EXPECT_EQ(stats.checksums_mismatched, 0U);
    EXPECT_EQ(stats.snapshots, 1U) << "no resync was needed";
    EXPECT_TRUE(c.is_open()) << c.closed_reason().value_or("");
}

// Before: request() from on_spawn read more frames into the buffer the Delta being applied
// lives in, and applied the next Deltas inside the half-applied one (a tick gap, a resync,
// or a heap-use-after-free under ASan).
TEST(ConnectionCallbacks, RequestsFromSpawnUpdateRemoveAndDestroyCallbacks) {
    server s{busy_world};
    connection c{options_for(s)};
    auto& m = c.mirror();
    const protocol::component_info* health = m.types().find("health");
    ASSERT_NE(health, nullptr) << "the demo game has health";
    const std::uint32_t health_id = health->id;
    std::optional<Entity> probe;
    std::vector<std::string> log;
    const auto is_probe = [&](Entity e) { return probe && e == *probe; };
    m.events().on_spawn = [&](Entity e) {
        const auto name = m.get<Name>(e);
        if (!name || name->value != "probe") {
            return;
        }
        probe = e;
        const std::uint32_t id = c.next_request_id();
        log.push_back("set " +
                      outcome(c.request(
                          protocol::set_components{id, e, component_set{}.set(Health{7})}, id)));
        EXPECT_FALSE(m.get<Health>(e).has_value()) << "the mirror does not move under a callback";
    };
    m.events().on_update = [&](Entity e, std::uint32_t wire_id) {
        if (!is_probe(e) || wire_id != health_id) {
            return;
        }
        const std::uint32_t id = c.next_request_id();
        log.push_back("remove " +
                      outcome(c.request(protocol::remove_components{id, e, {"health"}}, id)));
    };
    m.events().on_remove = [&](Entity e, std::uint32_t wire_id) {
        if (!is_probe(e)) {
            return;
        }
        EXPECT_EQ(wire_id, health_id);
        const std::uint32_t id = c.next_request_id();
        log.push_back("destroy " + outcome(c.request(protocol::destroy{id, e}, id)));
    };
    m.events().on_destroy = [&](Entity e) {
        if (!is_probe(e)) {
            return;
        }
        c.send(protocol::ping{42});
        c.poll_for(100ms);
        EXPECT_TRUE(m.contains(e)) << "still readable in on_destroy";
        log.emplace_back("destroyed");
    };

    const std::uint32_t id = c.next_request_id();
    ASSERT_TRUE(
        c.request(protocol::spawn{id, component_set{}.set(Position{1.0F, 2.0F}).set(Name{"probe"})},
                  id)
            .ok);
    EXPECT_TRUE(c.poll_until([&] { return log.size() >= 4 || !c.is_open(); }, 20s));
    EXPECT_THAT(log, ElementsAre("set ok", "remove ok", "destroy ok", "destroyed"));
    ASSERT_TRUE(probe.has_value());
    EXPECT_FALSE(m.contains(*probe));
    expect_in_sync(c);
}

// on_message keeps its frame while it reads more: before, the bytes under it were reused.
TEST(ConnectionCallbacks, OnMessageMayReadMoreAndItsFrameStaysValid) {
    server s{busy_world};
    connection c{options_for(s)};
    auto& m = c.mirror();
    int nested = 0;
    std::vector<std::uint64_t> ticks;
    c.on_message = [&](const wire::ServerMessage& message) {
        if (message.body_type() != wire::ServerBody::Delta) {
            return;
        }
        const std::uint64_t tick = message.body_as_Delta()->tick();
        ticks.push_back(tick);
        if (nested < 3) {
            ++nested;
            c.poll_for(150ms);  // several Deltas arrive meanwhile: they wait their turn
            EXPECT_EQ(m.tick(), tick) << "the mirror does not move under a callback";
            EXPECT_EQ(message.body_as_Delta()->tick(), tick)
                << "the frame changed under on_message";
        }
    };
    EXPECT_TRUE(c.poll_until([&] { return ticks.size() >= 20 || !c.is_open(); }, 20s));
    ASSERT_GE(ticks.size(), 2U);
    for (std::size_t i = 1; i < ticks.size(); ++i) {
        EXPECT_EQ(ticks[i], ticks[i - 1] + 1) << "Deltas reach on_message in order, once each";
    }
    c.on_message = nullptr;
    expect_in_sync(c);
}

// What a typed access of a changed type throws, or "" when it throws nothing.
template <typename Fn>
std::string mismatch_of(Fn&& access) {
    try {
        access();
    } catch (const protocol::schema_mismatch& e) {
        return e.what();
    }
    return "";
}

// Without expected_types, every typed read of a type the server changed fails on first use,
// and on every use after it, with the type and its first difference named: a reordered type
// of the same size, a requantized one, a same-size one of another field type. The matching
// types read and the mirror stays in sync.
TEST(ConnectionSchema, ATypedReadOfAChangedTypeFailsClearlyWithoutExpectedTypes) {
    server s{{"--demo-entities", "3"}};
    connection c{options_for(s)};
    ASSERT_EQ(c.mirror().size(), 3U);
    const std::uint32_t id = c.next_request_id();
    const auto spawned =
        c.request(protocol::spawn{id, component_set{}.set(Position{1, 2}).set(Health{7})}, id);
    ASSERT_TRUE(spawned.ok) << spawned.message;
    const Entity e = spawned.entity;
    ASSERT_TRUE(c.poll_until([&] { return c.mirror().contains(e); }, 20s));
    const auto& m = c.mirror();
    const std::string swapped =
        "the server's schema does not match this client: component 'position': field 0 is 'x' "
        "float on the server, 'y' float in this client (fields may only be added at the end)";
    EXPECT_EQ(mismatch_of([&] { (void)m.get<changed::PositionSwapped>(e); }), swapped);
    EXPECT_EQ(mismatch_of([&] { (void)m.get<changed::PositionSwapped>(e); }), swapped)
        << "the verdict stays: every later read fails the same";
    EXPECT_EQ(mismatch_of([&] { (void)m.get<changed::PositionQuantized>(e); }),
              "the server's schema does not match this client: component 'position': field 0 "
              "is 'x' float on the server, 'x' float quantized 0 to 4096 by 0.015625 (19 bits) "
              "in this client (fields may only be added at the end)");
    EXPECT_EQ(mismatch_of([&] { (void)m.get<changed::HealthFloat>(e); }),
              "the server's schema does not match this client: component 'health': field 0 is "
              "'value' int32 on the server, 'value' float in this client (fields may only be "
              "added at the end)");
    // The real types read, before and after a failed one.
    EXPECT_EQ(mismatch_of([&] { (void)m.get<Position>(e); }), "");
    EXPECT_EQ(m.get<Position>(e), (Position{1, 2}));
    EXPECT_EQ(m.get<Health>(e), (Health{7}));
    expect_in_sync(c);
}

// A typed value of a changed type is never sent: the command fails before it leaves, the
// connection stays open and the matching type's command goes through.
TEST(ConnectionSchema, ATypedCommandOfAChangedTypeIsNotSent) {
    server s;
    connection c{options_for(s)};
    const std::uint32_t refused = c.next_request_id();
    EXPECT_EQ(mismatch_of([&] {
                  (void)c.request(
                      protocol::spawn{refused, component_set{}.set(changed::PositionSwapped{1, 2})},
                      refused);
              }),
              "the server's schema does not match this client: component 'position': field 0 is "
              "'x' float on the server, 'y' float in this client (fields may only be added at "
              "the end)");
    EXPECT_EQ(mismatch_of([&] {
                  c.send(protocol::set_components{c.next_request_id(), Entity{1, 1},
                                                  component_set{}.set(changed::HealthFloat{5})});
              }),
              "the server's schema does not match this client: component 'health': field 0 is "
              "'value' int32 on the server, 'value' float in this client (fields may only be "
              "added at the end)");
    ASSERT_TRUE(c.is_open()) << c.closed_reason().value_or("");
    const std::uint32_t id = c.next_request_id();
    const auto result =
        c.request(protocol::spawn{id, component_set{}.set(Position{1, 2}).set(Health{7})}, id);
    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_FALSE(c.take_result(refused).has_value())
        << "the refused spawn never reached the server";
    ASSERT_TRUE(c.poll_until([&] { return c.mirror().contains(result.entity); }, 20s));
    EXPECT_EQ(c.mirror().get<Position>(result.entity), (Position{1, 2}));
}

// A client compiled with a game's types may also check them at Welcome (expected_types): a
// type the server changed is refused with the field named, before anything runs.
TEST(ConnectionSchema, AClientCompiledWithAReorderedTypeRefusesTheServer) {
    server s;
    connect_options options = options_for(s);
    protocol::component_info reordered = protocol::describe<Position>();
    std::swap(reordered.fields[0], reordered.fields[1]);  // as if compiled with {y, x}
    options.expected_types = {reordered};
    try {
        connection c{options};
        ADD_FAILURE() << "joined a server whose position differs";
    } catch (const client::client_error& e) {
        EXPECT_THAT(e.what(), ::testing::HasSubstr(
                                  "cannot join 127.0.0.1:" + std::to_string(s.port()) +
                                  ": the server's schema does not match this client: component "
                                  "'position': field 0 is 'x' float on the server, 'y' float in "
                                  "this client (fields may only be added at the end)"));
    }
}

// Fields the server added at the end and types it has that the client does not know (or lacks)
// are fine: the client reads what it knows.
TEST(ConnectionSchema, AddedFieldsAndUnknownTypesAreFine) {
    server s{{"--demo-entities", "3"}};
    connect_options options = options_for(s);
    protocol::component_info older = protocol::describe<Position>();
    older.fields.pop_back();  // as if compiled when position had only x
    protocol::component_info absent = protocol::describe<Health>();
    absent.name = "armour";  // a type this server does not have
    options.expected_types = {older, absent};
    connection c{options};
    EXPECT_EQ(c.mirror().size(), 3U);
    std::size_t positioned = 0;
    c.mirror().each([&](Entity e) { positioned += c.mirror().get<Position>(e).has_value() ? 1 : 0; });
    EXPECT_EQ(positioned, 3U);
}

}  // namespace connection_test

}  // namespace ecsnet::test
