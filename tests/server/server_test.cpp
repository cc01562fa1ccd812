// The server over real sockets, in this process: it runs on its own thread with its own
// io_context, and the test thread talks to it only through clients (and through call(), which
// runs a function on the server's thread).
#include "ecsnet/server/server.hpp"
#include "ecsnet/server/admission/connect_token.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "client_polling.hpp"
#include "test_server.hpp"
#include "test_support.hpp"

namespace server_test {

namespace asio = boost::asio;
namespace protocol = ecsnet::protocol;
using ecsnet::client::client_error;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::server::server_stats;
using ecsnet::test::dump;
using ecsnet::test::raw_socket;
using ecsnet::test::current_transport;
using ecsnet::test::every_transport;
using ecsnet::test::test_server;
using ecsnet::test::transport;
using ecsnet::test::transport_name;
using ecsnet::wire::ErrorCode;
using protocol::component_set;
using protocol::Owner;
using testing::HasSubstr;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// The demo game's wire ids, numbered as its servers number them.
const protocol::component_registry& demo_types() {
    static const protocol::component_registry types = [] {
        protocol::component_registry r;
        ecsnet::demo::register_components(r);
        return r;
    }();
    return types;
}
template <typename T>
std::uint32_t wire_id() {
    return *demo_types().id_of<T>();
}

server_config test_config() {
    server_config c = ecsnet::test::local_server_config(50.0);
    c.ws_port = current_transport() == transport::websocket ? 0 : -1;
    c.reconnect_grace = 0ms;  // a leaving owner's entities go at once, unless a test says so
    return c;
}

// ---- client helpers --------------------------------------------------------------------------

// The session tests run over each transport (test_support.hpp): these suites are TEST_P, and
// a test's server (test_config()), raw sockets and connections follow current_transport().
using ServerHandshake = ecsnet::test::transport_test;
using ServerReplication = ecsnet::test::transport_test;
using ServerCommands = ecsnet::test::transport_test;
using ServerSlowClient = ecsnet::test::transport_test;
using ServerBadInput = ecsnet::test::transport_test;
using ServerAdmission = ecsnet::test::transport_test;
using ServerIdentity = ecsnet::test::transport_test;
using ServerShutdown = ecsnet::test::transport_test;
using ServerResync = ecsnet::test::transport_test;
using ServerCommandResults = ecsnet::test::transport_test;
using ServerDisconnect = ecsnet::test::transport_test;
using ServerReconnectGrace = ecsnet::test::transport_test;
using ServerWorkload = ecsnet::test::transport_test;
using ServerTls = ecsnet::test::transport_test;

connect_options over_current_transport(connect_options options) {
    options.websocket = current_transport() == transport::websocket;
    return options;
}

std::unique_ptr<connection> join(std::uint16_t port, const std::string& name,
                                 const std::string& token = {}) {
    connect_options options = ecsnet::test::join_options(port, name);
    options.token = token;
    return std::make_unique<connection>(over_current_transport(options));
}

std::unique_ptr<connection> connect_only(std::uint16_t port) {
    connect_options options;
    options.port = port;
    options.join = false;
    return std::make_unique<connection>(over_current_transport(options));
}

// Polls every client in turn until pred() holds, at most `timeout`.
bool poll_all_until(const std::vector<connection*>& clients, const std::function<bool()>& pred,
                    std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    while (!pred()) {
        if (clock_type::now() >= deadline) {
            return pred();
        }
        for (connection* c : clients) {
            c->poll_for(5ms);
        }
    }
    return true;
}

void poll_all_for(const std::vector<connection*>& clients, std::chrono::milliseconds duration) {
    (void)poll_all_until(
        clients, [] { return false; }, duration);
}

protocol::command_result spawn(connection& c, component_set components) {
    const std::uint32_t id = c.next_request_id();
    return c.request(protocol::spawn{id, std::move(components)}, id);
}

Entity spawn_ok(connection& c, component_set components) {
    const protocol::command_result result = spawn(c, std::move(components));
    EXPECT_TRUE(result.ok) << result.message;
    return result.entity;
}

protocol::command_result destroy(connection& c, Entity e) {
    const std::uint32_t id = c.next_request_id();
    return c.request(protocol::destroy{id, e}, id);
}

// Waits for the results of requests already sent.
std::map<std::uint32_t, protocol::command_result> collect(connection& c,
                                                          const std::vector<std::uint32_t>& ids,
                                                          std::chrono::milliseconds timeout) {
    std::map<std::uint32_t, protocol::command_result> results;
    (void)c.poll_until(
        [&] {
            for (const std::uint32_t id : ids) {
                if (!results.contains(id)) {
                    if (auto r = c.take_result(id)) {
                        results.emplace(id, std::move(*r));
                    }
                }
            }
            return results.size() == ids.size();
        },
        timeout);
    return results;
}

bool contains_all(const connection& c, const std::vector<Entity>& entities) {
    return std::all_of(entities.begin(), entities.end(),
                       [&](Entity e) { return c.mirror().contains(e); });
}

bool contains_none(const connection& c, const std::vector<Entity>& entities) {
    return std::none_of(entities.begin(), entities.end(),
                        [&](Entity e) { return c.mirror().contains(e); });
}

void expect_in_sync(const connection& c) {
    const auto& s = c.mirror().statistics();
    EXPECT_EQ(s.checksums_mismatched, 0U) << c.mirror().error();
    EXPECT_EQ(s.inconsistencies, 0U) << c.mirror().error();
    EXPECT_EQ(s.snapshots, 1U) << "no resync was needed";
}

// ---- handshake and replication ---------------------------------------------------------------

TEST_P(ServerHandshake, WelcomeAndSnapshotOfTheDemoEntities) {
    server_config config = test_config();
    config.demo_entities = 25;
    config.checksum_interval = 10;
    test_server server{config};

    const auto alice = join(server.port(), "alice");
    const protocol::welcome& welcome = alice->welcome();
    EXPECT_GE(welcome.client_id, 1U);
    EXPECT_EQ(welcome.version, protocol::protocol_version);
    EXPECT_FLOAT_EQ(welcome.tick_rate, 50.0F);
    EXPECT_EQ(welcome.checksum_interval, 10U);

    const protocol::mirror& mirror = alice->mirror();
    ASSERT_TRUE(mirror.ready());
    // The snapshot was of the Welcome's tick and every delta since followed it.
    EXPECT_EQ(mirror.tick() - welcome.current_tick, mirror.statistics().deltas);
    EXPECT_EQ(mirror.size(), 25U);
    std::set<std::string> names;
    mirror.each([&](Entity e) {
        EXPECT_TRUE(mirror.get<Position>(e).has_value());
        EXPECT_TRUE(mirror.get<Velocity>(e).has_value());
        EXPECT_FALSE(mirror.get<Owner>(e).has_value()) << "demo entities belong to the server";
        ASSERT_TRUE(mirror.get<Name>(e).has_value());
        names.insert(mirror.get<Name>(e)->value);
    });
    EXPECT_EQ(names.size(), 25U);
    EXPECT_TRUE(names.contains("demo-0"));
    EXPECT_TRUE(names.contains("demo-24"));

    const auto bob = join(server.port(), "bob");
    EXPECT_NE(bob->welcome().client_id, welcome.client_id);
    EXPECT_EQ(server.clients(), 2U);

    // The stream goes on, and the mirror checks itself against the server's checksums.
    ASSERT_TRUE(alice->poll_until(
        [&] { return mirror.statistics().checksums_matched >= 2 || !alice->is_open(); }, 5s));
    EXPECT_TRUE(alice->is_open());
    ASSERT_TRUE(alice->last_checksum().has_value());
    EXPECT_EQ(alice->last_checksum()->entity_count, 25U);
    expect_in_sync(*alice);
}

TEST_P(ServerHandshake, PingIsAnsweredBeforeHelloButCommandsAreNot) {
    test_server server{test_config()};
    const auto c = connect_only(server.port());
    // No Welcome, so no schema from the server: the client knows the game's types itself.
    c->mirror().set_schema(demo_types().types());

    c->send(protocol::ping{77});
    ASSERT_TRUE(c->poll_until([&] { return c->last_pong().has_value(); }, 5s));
    EXPECT_EQ(c->last_pong()->nonce, 77U);

    c->send(protocol::spawn{5, component_set{}.set(Position{})});
    std::optional<protocol::command_result> result;
    ASSERT_TRUE(c->poll_until([&] { return (result = c->take_result(5)).has_value(); }, 5s));
    EXPECT_FALSE(result->ok);
    EXPECT_EQ(result->code, ErrorCode::NotJoined);
    // A malformed one too: NotJoined comes first.
    c->send(protocol::spawn{
        6, component_set{}.set(Position{std::numeric_limits<float>::quiet_NaN(), 0})});
    ASSERT_TRUE(c->poll_until([&] { return (result = c->take_result(6)).has_value(); }, 5s));
    EXPECT_EQ(result->code, ErrorCode::NotJoined);

    c->send(protocol::resync_request{"why not"});
    ASSERT_TRUE(c->poll_until([&] { return !c->is_open(); }, 5s));
    EXPECT_EQ(*c->closed_reason(), "ResyncRequest before Hello");
}

// Welcome describes the game's types, so a client that was not compiled with them decodes them
// (and one that was is checked against them); without a game only the core's Owner replicates.
TEST_P(ServerHandshake, WelcomeDescribesTheGamesTypesAndNoGameMeansOwnerOnly) {
    {
        test_server server{test_config()};
        const auto alice = join(server.port(), "alice");
        const protocol::schema& types = alice->welcome().components;
        EXPECT_EQ(types, server.call([](ecsnet::server::server& s) { return s.types().types(); }));
        EXPECT_EQ(alice->mirror().types(), types) << "the mirror decodes with Welcome's schema";

        std::vector<std::string> names;
        for (std::size_t id = 0; id < types.size(); ++id) {
            ASSERT_EQ(types.types()[id].id, id);
            names.push_back(types.types()[id].name);
        }
        EXPECT_THAT(names, testing::ElementsAre("owner", "position", "velocity", "health",
                                                "lifetime", "name"));

        using field = protocol::field_info;
        using protocol::field_type;
        using protocol::writer;
        const protocol::component_info* owner = types.find("owner");
        ASSERT_NE(owner, nullptr);
        EXPECT_EQ(owner->written_by, writer::server);
        EXPECT_THAT(owner->fields,
                    testing::ElementsAre(field{"client", field_type::uint32, 32, {}}));
        const protocol::component_info* position = types.find("position");
        ASSERT_NE(position, nullptr);
        EXPECT_EQ(position->written_by, writer::owner);
        EXPECT_FALSE(position->owner_only);
        EXPECT_FALSE(position->is_string);
        EXPECT_THAT(position->fields,
                    testing::ElementsAre(field{"x", field_type::float32, 32, {}},
                                         field{"y", field_type::float32, 32, {}}));
        const protocol::component_info* health = types.find("health");
        ASSERT_NE(health, nullptr);
        EXPECT_EQ(health->written_by, writer::owner);
        EXPECT_THAT(health->fields,
                    testing::ElementsAre(field{"value", field_type::int32, 32, {}}));
        const protocol::component_info* lifetime = types.find("lifetime");
        ASSERT_NE(lifetime, nullptr);
        EXPECT_THAT(lifetime->fields,
                    testing::ElementsAre(field{"ticks", field_type::uint32, 32, {}}));
        const protocol::component_info* name = types.find("name");
        ASSERT_NE(name, nullptr);
        EXPECT_TRUE(name->is_string);
        EXPECT_EQ(name->max_bytes, ecsnet::demo::max_name_bytes);
        EXPECT_TRUE(name->fields.empty());

        // A client compiled with the demo's types finds them in Welcome and joins.
        connect_options options;
        options.port = server.port();
        options.name = "typed";
        options.expected_types = {protocol::describe<Position>(), protocol::describe<Velocity>(),
                                  protocol::describe<Health>(), protocol::describe<Lifetime>(),
                                  protocol::describe<Name>()};
        const auto typed = std::make_unique<connection>(over_current_transport(options));
        EXPECT_TRUE(typed->mirror().ready());
    }

    // The core alone: Owner is the only type, demo_entities means nothing without the demo.
    server_config config = test_config();
    config.demo_entities = 5;
    test_server server{config, test_server::game_choice::no_game};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const protocol::schema& types = alice->welcome().components;
    ASSERT_EQ(types.size(), 1U);
    EXPECT_EQ(types.types()[0].name, "owner");
    EXPECT_EQ(bob->mirror().size(), 0U) << "no demo entities without the demo game";

    // A spawn with no components works: the entity has its Owner and nothing else.
    const Entity e = spawn_ok(*alice, component_set{});
    ASSERT_TRUE(poll_all_until(
        {alice.get(), bob.get()}, [&] { return bob->mirror().contains(e); }, 5s));
    const protocol::mirror& m = bob->mirror();
    ASSERT_EQ(m.types().size(), 1U);
    ASSERT_TRUE(m.get<Owner>(e).has_value());
    EXPECT_EQ(m.get<Owner>(e)->client, alice->welcome().client_id);
    EXPECT_EQ(dump(m), ecsnet::ecs::to_string(e) +
                           " owner(client=" + std::to_string(alice->welcome().client_id) + ")\n");
    const auto [alive, owners, positions] = server.call([e](ecsnet::server::server& s) {
        return std::tuple{s.world().alive(), s.world().has<Owner>(e), s.world().has<Position>(e)};
    });
    EXPECT_EQ(alive, 1U);
    EXPECT_TRUE(owners);
    EXPECT_FALSE(positions);

    // A game type is not the server's: the client refuses to encode it.
    try {
        alice->send(protocol::spawn{alice->next_request_id(), component_set{}.set(Position{})});
        ADD_FAILURE() << "a spawn with a type the server lacks was sent";
    } catch (const client_error& error) {
        EXPECT_THAT(error.what(), HasSubstr("position"));
    }
    EXPECT_TRUE(poll_all_until(
        {alice.get(), bob.get()}, [&] { return bob->mirror().statistics().checksums_matched >= 1; },
        5s));
    expect_in_sync(*bob);
}

TEST_P(ServerReplication, SpawnAppearsInEveryClientsMirror) {
    test_server server{test_config()};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const auto carol = join(server.port(), "carol");
    const std::vector<connection*> all{alice.get(), bob.get(), carol.get()};

    const std::uint32_t id = alice->next_request_id();
    const protocol::command_result result = alice->request(
        protocol::spawn{
            id, component_set{}.set(Position{1.0F, 2.0F}).set(Health{50}).set(Name{"crate"})},
        id);
    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.request_id, id);
    EXPECT_EQ(result.code, ErrorCode::None);
    const Entity crate = result.entity;
    ASSERT_FALSE(crate.is_null());

    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return contains_all(*bob, {crate}) && contains_all(*carol, {crate}) &&
                   contains_all(*alice, {crate});
        },
        5s));
    for (const connection* c : all) {
        const protocol::mirror& m = c->mirror();
        ASSERT_TRUE(m.get<Owner>(crate).has_value());
        EXPECT_EQ(m.get<Owner>(crate)->client, alice->welcome().client_id);
        ASSERT_TRUE(m.get<Position>(crate).has_value());
        EXPECT_EQ(*m.get<Position>(crate), (Position{1.0F, 2.0F}));
        ASSERT_TRUE(m.get<Health>(crate).has_value());
        EXPECT_EQ(m.get<Health>(crate)->value, 50);
        ASSERT_TRUE(m.get<Name>(crate).has_value());
        EXPECT_EQ(m.get<Name>(crate)->value, "crate");
        EXPECT_FALSE(m.get<Velocity>(crate).has_value());
        expect_in_sync(*c);
    }
}

TEST_P(ServerReplication, DestroyRemovesFromEveryMirror) {
    test_server server{test_config()};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const std::vector<connection*> all{alice.get(), bob.get()};

    const Entity e = spawn_ok(*alice, component_set{}.set(Position{3.0F, 3.0F}));
    ASSERT_TRUE(poll_all_until(
        all, [&] { return contains_all(*bob, {e}); }, 5s));

    const protocol::command_result result = destroy(*alice, e);
    ASSERT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.entity, e);
    ASSERT_TRUE(poll_all_until(
        all, [&] { return contains_none(*alice, {e}) && contains_none(*bob, {e}); }, 5s));
    expect_in_sync(*alice);
    expect_in_sync(*bob);
}

TEST_P(ServerReplication, SetAndRemoveReachEveryMirror) {
    test_server server{test_config()};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const std::vector<connection*> all{alice.get(), bob.get()};

    const Entity e = spawn_ok(*alice, component_set{}.set(Position{0.0F, 0.0F}).set(Health{100}));
    std::uint32_t id = alice->next_request_id();
    ASSERT_TRUE(
        alice->request(protocol::set_components{id, e, component_set{}.set(Health{40})}, id).ok);
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            const auto h = bob->mirror().get<Health>(e);
            return h.has_value() && h->value == 40;
        },
        5s));

    id = alice->next_request_id();
    const std::vector<std::string> health{"health"};
    ASSERT_TRUE(alice->request(protocol::remove_components{id, e, health}, id).ok);
    ASSERT_TRUE(poll_all_until(
        all, [&] { return !bob->mirror().get<Health>(e).has_value(); }, 5s));
    EXPECT_TRUE(bob->mirror().contains(e));

    id = alice->next_request_id();
    const protocol::command_result missing =
        alice->request(protocol::remove_components{id, e, health}, id);
    EXPECT_EQ(missing.code, ErrorCode::ComponentMissing);
}

TEST_P(ServerCommands, ForeignUnknownAndServerEntitiesAreRejected) {
    server_config config = test_config();
    config.demo_entities = 3;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");

    const Entity mine = spawn_ok(*alice, component_set{}.set(Position{}));

    const protocol::command_result foreign = destroy(*bob, mine);
    EXPECT_FALSE(foreign.ok);
    EXPECT_EQ(foreign.code, ErrorCode::NotOwner);
    EXPECT_EQ(foreign.message, "entity " + ecsnet::ecs::to_string(mine) + " belongs to client " +
                                   std::to_string(alice->welcome().client_id));

    Entity demo;
    alice->mirror().each([&](Entity e) {
        if (!alice->mirror().get<Owner>(e).has_value()) {
            demo = e;
        }
    });
    ASSERT_FALSE(demo.is_null());
    const protocol::command_result server_owned = destroy(*alice, demo);
    EXPECT_EQ(server_owned.code, ErrorCode::NotOwner);
    EXPECT_THAT(server_owned.message, HasSubstr("belongs to the server"));

    ASSERT_TRUE(destroy(*alice, mine).ok);
    const protocol::command_result unknown = destroy(*alice, mine);
    EXPECT_EQ(unknown.code, ErrorCode::UnknownEntity);
    EXPECT_EQ(unknown.message, "entity " + ecsnet::ecs::to_string(mine) + " does not exist");

    const protocol::command_result never = destroy(*alice, Entity{123'456, 1});
    EXPECT_EQ(never.code, ErrorCode::UnknownEntity);
    EXPECT_TRUE(alice->is_open());
    EXPECT_TRUE(bob->is_open());
}

TEST_P(ServerCommands, StaleHandleIsRejected) {
    // The server reuses a freed index at once, the oldest freed first, at version + 1.
    constexpr std::size_t count = 8;
    server_config config = test_config();
    config.command_rate = 1e6;
    config.command_burst = 1e6;
    test_server server{config};
    const auto alice = join(server.port(), "alice");

    std::vector<std::uint32_t> ids;
    for (std::size_t i = 0; i < count; ++i) {
        ids.push_back(alice->next_request_id());
        alice->send(protocol::spawn{ids.back(), component_set{}.set(Health{1})});
    }
    const auto spawned = collect(*alice, ids, 20s);
    ASSERT_EQ(spawned.size(), count);
    std::map<std::uint32_t, Entity> by_index;
    for (const auto& [id, result] : spawned) {
        ASSERT_TRUE(result.ok) << result.message;
        by_index[result.entity.index()] = result.entity;
    }

    ids.clear();
    for (const auto& [index, e] : by_index) {
        ids.push_back(alice->next_request_id());
        alice->send(protocol::destroy{ids.back(), e});
    }
    const auto destroyed = collect(*alice, ids, 20s);
    ASSERT_EQ(destroyed.size(), count);
    for (const auto& [id, result] : destroyed) {
        ASSERT_TRUE(result.ok) << result.message;
    }

    const Entity reborn = spawn_ok(*alice, component_set{}.set(Health{2}));
    ASSERT_TRUE(by_index.contains(reborn.index())) << "the index was recycled";
    const Entity stale = by_index.at(reborn.index());
    ASSERT_GT(reborn.version(), stale.version());

    const protocol::command_result result = destroy(*alice, stale);
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::StaleVersion);
    EXPECT_EQ(result.message, "entity " + std::to_string(stale.index()) + " is at version " +
                                  std::to_string(reborn.version()) + ", not " +
                                  std::to_string(stale.version()) + " (stale handle)");
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().contains(reborn); }, 5s));
    alice->poll_for(100ms);
    EXPECT_TRUE(alice->mirror().contains(reborn)) << "the new entity was not touched";
    expect_in_sync(*alice);
}

// Past --checksum-slice entity slots each Checksum covers one slice of the index space, in
// turn; the mirror checks each slice against its own entities.
TEST_P(ServerReplication, ChecksumsOfALargeWorldRotateThroughSlicesAndMatch) {
    server_config config = test_config();
    config.demo_entities = 2'500;  // three slices: [0, 1024), [1024, 2048), [2048, end)
    config.checksum_slice = 1'024;
    config.tick_rate = 20.0;
    config.checksum_interval = 1;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    std::set<std::pair<std::uint32_t, std::uint32_t>> ranges;
    alice->on_message = [&](const ecsnet::wire::ServerMessage& m) {
        if (const auto* c = m.body_as_Checksum()) {
            ranges.emplace(c->first_index(), c->end_index());
        }
    };
    ASSERT_TRUE(alice->poll_until(
        [&] { return alice->mirror().statistics().checksums_matched >= 4 || !alice->is_open(); },
        10s))
        << "matched " << alice->mirror().statistics().checksums_matched;
    EXPECT_EQ(alice->mirror().statistics().checksums_mismatched, 0U);
    const std::set<std::pair<std::uint32_t, std::uint32_t>> expected{
        {0U, 1'024U}, {1'024U, 2'048U}, {2'048U, 0xFFFFFFFFU}};
    EXPECT_EQ(ranges, expected);
}

// Commands apply at the start of a tick and the systems run after them: a spawn first appears
// with the values of the end of its tick, moved by one step, its Lifetime already counted down
// once, a position outside the world clamped (docs/PROTOCOL.md, "Edge cases").
TEST_P(ServerReplication, SpawnAppearsWithTheValuesOfItsSpawnTick) {
    server_config config = test_config();
    config.world_half_extent = 1000.0F;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    std::map<Entity, std::pair<Position, std::optional<Lifetime>>> first_seen;
    std::map<Entity, std::uint64_t> spawn_delta;
    std::map<Entity, std::uint64_t> destroy_delta;
    // Both callbacks run inside a Delta, before the mirror moves to its tick.
    alice->mirror().events().on_destroy = [&](Entity e) {
        destroy_delta.emplace(e, alice->mirror().tick() + 1);
    };
    alice->mirror().events().on_spawn = [&](Entity e) {
        const protocol::mirror& m = alice->mirror();
        spawn_delta.emplace(e, m.tick() + 1);
        first_seen.emplace(e, std::pair{*m.get<Position>(e), m.get<Lifetime>(e)});
    };

    const Entity mover = spawn_ok(
        *alice,
        component_set{}.set(Position{10.0F, 0.0F}).set(Velocity{50.0F, -100.0F}).set(Lifetime{5}));
    const Entity outside =
        spawn_ok(*alice, component_set{}.set(Position{5000.0F, -3.0F}).set(Velocity{}));
    const Entity resting = spawn_ok(*alice, component_set{}.set(Position{7.0F, 7.0F}));
    ASSERT_TRUE(alice->poll_until(
        [&] {
            return first_seen.contains(mover) && first_seen.contains(outside) &&
                   first_seen.contains(resting);
        },
        5s));

    const float dt = 1.0F / static_cast<float>(config.tick_rate);
    EXPECT_FLOAT_EQ(first_seen.at(mover).first.x, 10.0F + 50.0F * dt);
    EXPECT_FLOAT_EQ(first_seen.at(mover).first.y, -100.0F * dt);
    ASSERT_TRUE(first_seen.at(mover).second.has_value());
    EXPECT_EQ(first_seen.at(mover).second->ticks, 4U) << "Lifetime N appears as N - 1";
    EXPECT_EQ(first_seen.at(outside).first, (Position{1000.0F, -3.0F}));
    EXPECT_EQ(first_seen.at(resting).first, (Position{7.0F, 7.0F}));

    // Lifetime 5, spawned in tick T: 4 in Delta T, 0 in Delta T + 4, destroyed in Delta T + 5.
    ASSERT_TRUE(alice->poll_until([&] { return destroy_delta.contains(mover); }, 5s));
    EXPECT_EQ(destroy_delta.at(mover), spawn_delta.at(mover) + 5);
    expect_in_sync(*alice);
}

// Lifetime 0 is destroyed by the lifetime system in the spawn's own tick: the spawn succeeds,
// but the entity never appears in any Delta and the handle is unknown at once.
TEST_P(ServerReplication, LifetimeZeroSpawnNeverAppears) {
    test_server server{test_config()};
    const auto alice = join(server.port(), "alice");
    std::vector<Entity> spawned;
    std::vector<Entity> destroyed;
    alice->mirror().events().on_spawn = [&](Entity e) { spawned.push_back(e); };
    alice->mirror().events().on_destroy = [&](Entity e) { destroyed.push_back(e); };

    const Entity ghost =
        spawn_ok(*alice, component_set{}.set(Position{1.0F, 1.0F}).set(Lifetime{0}));
    ASSERT_FALSE(ghost.is_null());
    const std::uint64_t after = server.tick() + 3;
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().tick() >= after; }, 5s));
    EXPECT_THAT(spawned, testing::IsEmpty());
    EXPECT_THAT(destroyed, testing::IsEmpty());
    EXPECT_FALSE(alice->mirror().contains(ghost));
    EXPECT_EQ(destroy(*alice, ghost).code, ErrorCode::UnknownEntity);
    expect_in_sync(*alice);
}

// "Entity slots" are the indices ever handed out (the highest + 1), not the live entities: a
// world that grew past --checksum-slice keeps being checked in slices after it emptied.
TEST_P(ServerReplication, ChecksumSlicesFollowIndicesEverUsedNotLiveEntities) {
    server_config config = test_config();
    config.checksum_slice = 16;
    config.checksum_interval = 1;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    std::vector<std::uint32_t> ids;
    for (int i = 0; i < 40; ++i) {
        ids.push_back(alice->next_request_id());
        alice->send(protocol::spawn{ids.back(), component_set{}.set(Health{i})});
    }
    const auto spawned = collect(*alice, ids, 10s);
    ASSERT_EQ(spawned.size(), ids.size());
    ids.clear();
    for (const auto& [id, result] : spawned) {
        ASSERT_TRUE(result.ok) << result.message;
        ids.push_back(alice->next_request_id());
        alice->send(protocol::destroy{ids.back(), result.entity});
    }
    const auto destroyed = collect(*alice, ids, 10s);
    ASSERT_EQ(destroyed.size(), ids.size());
    const std::uint64_t empty_from = server.tick() + 1;

    std::set<std::pair<std::uint32_t, std::uint32_t>> ranges;
    alice->on_message = [&](const ecsnet::wire::ServerMessage& m) {
        if (const auto* c = m.body_as_Checksum(); c != nullptr && c->tick() >= empty_from) {
            EXPECT_EQ(c->entity_count(), 0U);
            ranges.emplace(c->first_index(), c->end_index());
        }
    };
    ASSERT_TRUE(alice->poll_until([&] { return ranges.size() >= 3 || !alice->is_open(); }, 5s));
    const std::set<std::pair<std::uint32_t, std::uint32_t>> expected{
        {0U, 16U}, {16U, 32U}, {32U, 0xFFFFFFFFU}};
    EXPECT_EQ(ranges, expected);
    EXPECT_EQ(alice->mirror().statistics().checksums_mismatched, 0U);
}

TEST_P(ServerReplication, LateJoinerSnapshotEqualsTheOtherMirrors) {
    server_config config = test_config();
    config.demo_entities = 30;
    config.checksum_interval = 5;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");

    const Entity moving = spawn_ok(
        *alice, component_set{}.set(Position{0, 0}).set(Velocity{5, -3}).set(Name{"runner"}));
    const Entity doomed = spawn_ok(*alice, component_set{}.set(Position{1, 1}));
    spawn_ok(*alice, component_set{}.set(Health{7}).set(Lifetime{100'000}));
    spawn_ok(*bob, component_set{}.set(Position{-4, 4}).set(Velocity{-1, 0}));
    ASSERT_TRUE(destroy(*alice, doomed).ok);

    // What alice and bob mirror at every tick from now on.
    std::map<std::uint64_t, std::string> seen_by_alice;
    std::map<std::uint64_t, std::string> seen_by_bob;
    std::map<std::uint64_t, std::uint64_t> checksum_of_alice;
    const auto record = [](connection& c, std::map<std::uint64_t, std::string>& seen) {
        seen[c.mirror().tick()] = dump(c.mirror());
        c.on_message = [&c, &seen](const ecsnet::wire::ServerMessage& message) {
            if (message.body_type() == ecsnet::wire::ServerBody::Delta) {
                seen[c.mirror().tick()] = dump(c.mirror());
            }
        };
    };
    record(*alice, seen_by_alice);
    record(*bob, seen_by_bob);
    const auto record_alice = alice->on_message;
    alice->on_message = [&](const ecsnet::wire::ServerMessage& message) {
        record_alice(message);
        checksum_of_alice[alice->mirror().tick()] = alice->mirror().checksum();
    };
    poll_all_for({alice.get(), bob.get()}, 100ms);

    const auto carol = join(server.port(), "carol");
    const std::uint64_t tick = carol->mirror().tick();
    const std::string carol_sees = dump(carol->mirror());
    const std::uint64_t carol_checksum = carol->mirror().checksum();
    ASSERT_TRUE(carol->mirror().contains(moving));

    ASSERT_TRUE(poll_all_until(
        {alice.get(), bob.get()},
        [&] { return seen_by_alice.contains(tick) && seen_by_bob.contains(tick); }, 5s));
    EXPECT_EQ(carol_sees, seen_by_alice.at(tick));
    EXPECT_EQ(carol_sees, seen_by_bob.at(tick));
    ASSERT_TRUE(checksum_of_alice.contains(tick));
    EXPECT_EQ(carol_checksum, checksum_of_alice.at(tick));

    ASSERT_TRUE(
        carol->poll_until([&] { return carol->mirror().statistics().checksums_matched >= 2; }, 5s));
    alice->on_message = nullptr;
    bob->on_message = nullptr;
    for (const connection* c : {alice.get(), bob.get(), carol.get()}) {
        expect_in_sync(*c);
    }
}

// ---- four clients, random commands -----------------------------------------------------------

// One client of the workload and what it believes it owns.
struct actor {
    struct owned {
        Entity entity;
        std::set<std::uint32_t> components;  // wire ids, Owner aside
        bool mortal = false;                 // has had a Lifetime: may vanish on its own
    };
    enum class kind { spawn, destroy, set, remove };
    struct pending {
        std::uint32_t request_id;
        kind what;
        std::size_t target;                  // index into entities (not for spawn)
        std::set<std::uint32_t> components;  // spawned, set or removed
        bool mortal = false;
    };

    std::unique_ptr<connection> conn;
    std::uint32_t id = 0;
    std::vector<owned> entities;
    std::optional<pending> in_flight;
    std::uint64_t checksums_received = 0;
    std::map<kind, int> applied;
    std::map<kind, int> vanished;
};

component_set random_components(std::mt19937& rng, const std::set<std::uint32_t>& types,
                                const std::string& name) {
    std::uniform_real_distribution<float> where(-900.0F, 900.0F);
    std::uniform_real_distribution<float> speed(-40.0F, 40.0F);
    component_set set;
    for (const std::uint32_t type : types) {
        if (type == wire_id<Position>()) {
            set.set(Position{where(rng), where(rng)});
        } else if (type == wire_id<Velocity>()) {
            set.set(Velocity{speed(rng), speed(rng)});
        } else if (type == wire_id<Health>()) {
            set.set(Health{std::uniform_int_distribution<int>(-10, 100)(rng)});
        } else if (type == wire_id<Lifetime>()) {
            set.set(Lifetime{std::uniform_int_distribution<std::uint32_t>(5, 150)(rng)});
        } else if (type == wire_id<Name>()) {
            set.set(Name{name});
        }
    }
    return set;
}

// Sends one random command on the actor's own entities.
void send_random_command(actor& a, std::mt19937& rng, int serial) {
    const auto chance = [&](double p) { return std::bernoulli_distribution(p)(rng); };
    const auto wire = [](auto tag) { return wire_id<decltype(tag)>(); };
    const std::uint32_t lifetime = wire(Lifetime{});
    std::vector<std::uint32_t> settable{wire(Position{}), wire(Velocity{}), wire(Health{}),
                                        wire(Name{})};
    actor::pending p{a.conn->next_request_id(), actor::kind::spawn, 0, {}, false};
    const std::string name = "a" + std::to_string(a.id) + "-" + std::to_string(serial);

    if (a.entities.size() < 4 || (a.entities.size() < 24 && chance(0.3))) {
        p.components.insert(wire(Position{}));
        for (const std::uint32_t type : settable) {
            if (chance(0.4)) {
                p.components.insert(type);
            }
        }
        if (chance(0.15)) {
            p.components.insert(lifetime);
            p.mortal = true;
        }
        a.conn->send(protocol::spawn{p.request_id, random_components(rng, p.components, name)});
    } else {
        p.target = std::uniform_int_distribution<std::size_t>(0, a.entities.size() - 1)(rng);
        const actor::owned& target = a.entities[p.target];
        const double roll = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
        if (roll < 0.25) {
            p.what = actor::kind::destroy;
            a.conn->send(protocol::destroy{p.request_id, target.entity});
        } else if (roll < 0.45 && !target.components.empty()) {
            p.what = actor::kind::remove;
            std::vector<std::uint32_t> has(target.components.begin(), target.components.end());
            std::shuffle(has.begin(), has.end(), rng);
            const auto n = std::uniform_int_distribution<std::size_t>(1, has.size())(rng);
            std::vector<std::string> names;
            for (std::size_t i = 0; i < n; ++i) {
                p.components.insert(has[i]);
                names.push_back(demo_types().info(has[i]).name);
            }
            a.conn->send(protocol::remove_components{p.request_id, target.entity, names});
        } else {
            p.what = actor::kind::set;
            for (const std::uint32_t type : settable) {
                if (chance(0.35)) {
                    p.components.insert(type);
                }
            }
            if (chance(0.05)) {
                p.components.insert(lifetime);
                p.mortal = true;
            }
            if (p.components.empty()) {
                p.components.insert(wire(Position{}));
            }
            a.conn->send(protocol::set_components{p.request_id, target.entity,
                                                  random_components(rng, p.components, name)});
        }
    }
    a.in_flight = std::move(p);
}

// Checks the answer to the actor's command against what it expected, and updates its books.
void settle(actor& a, const protocol::command_result& result) {
    ASSERT_TRUE(a.in_flight.has_value());
    const actor::pending p = *a.in_flight;
    a.in_flight.reset();
    ASSERT_EQ(result.request_id, p.request_id);
    if (p.what == actor::kind::spawn) {
        ASSERT_TRUE(result.ok) << result.message;
        a.entities.push_back(actor::owned{result.entity, p.components, p.mortal});
        ++a.applied[p.what];
        return;
    }
    actor::owned& target = a.entities[p.target];
    ASSERT_EQ(result.entity, target.entity);
    if (!result.ok) {
        // Only an entity with a Lifetime may have ended on its own.
        ASSERT_TRUE(target.mortal) << "command on " << ecsnet::ecs::to_string(target.entity)
                                   << " failed: " << result.message;
        ASSERT_THAT(result.code, testing::AnyOf(ErrorCode::UnknownEntity, ErrorCode::StaleVersion))
            << result.message;
        ++a.vanished[p.what];
        a.entities.erase(a.entities.begin() + static_cast<std::ptrdiff_t>(p.target));
        return;
    }
    ++a.applied[p.what];
    if (p.what == actor::kind::destroy) {
        a.entities.erase(a.entities.begin() + static_cast<std::ptrdiff_t>(p.target));
    } else if (p.what == actor::kind::set) {
        target.components.insert(p.components.begin(), p.components.end());
        target.mortal = target.mortal || p.mortal;
    } else {
        for (const std::uint32_t type : p.components) {
            target.components.erase(type);
        }
    }
}

std::set<std::uint32_t> components_in(const protocol::mirror& m, Entity e) {
    std::set<std::uint32_t> out;
    const auto add = [&]<typename T>() {
        if (m.get<T>(e).has_value()) {
            out.insert(wire_id<T>());
        }
    };
    add.operator()<Position>();
    add.operator()<Velocity>();
    add.operator()<Health>();
    add.operator()<Lifetime>();
    add.operator()<Name>();
    return out;
}

TEST_P(ServerWorkload, FourClientsRandomCommandsStayInSync) {
    constexpr auto duration = 10s;
    server_config config = test_config();
    config.demo_entities = 40;
    config.checksum_interval = 5;
    config.world_half_extent = 1000.0F;
    test_server server{config};

    std::vector<actor> actors(4);
    std::vector<connection*> all;
    for (std::size_t i = 0; i < actors.size(); ++i) {
        actor& a = actors[i];
        a.conn = join(server.port(), "actor-" + std::to_string(i));
        a.id = a.conn->welcome().client_id;
        a.conn->on_message = [&a](const ecsnet::wire::ServerMessage& message) {
            if (message.body_type() == ecsnet::wire::ServerBody::Checksum) {
                ++a.checksums_received;
            }
        };
        all.push_back(a.conn.get());
    }

    // Rounds: every actor sends one command, then waits for its answer while all keep reading.
    // About one command per actor per tick, far below the rate limit.
    std::mt19937 rng{20240611};
    const auto end = clock_type::now() + duration;
    int rounds = 0;
    while (clock_type::now() < end && !testing::Test::HasFatalFailure()) {
        for (actor& a : actors) {
            send_random_command(a, rng, rounds);
        }
        for (actor& a : actors) {
            std::optional<protocol::command_result> result;
            const std::uint32_t request_id = a.in_flight->request_id;
            ASSERT_TRUE(poll_all_until(
                all, [&] { return (result = a.conn->take_result(request_id)).has_value(); }, 5s))
                << "no answer to request " << request_id << " of client " << a.id;
            settle(a, *result);
        }
        ++rounds;
    }
    ASSERT_FALSE(testing::Test::HasFatalFailure());

    // Compare all four at one tick: record what each mirrors at every tick from now on, and
    // wait until all have passed the tick the most advanced one is at.
    std::vector<std::map<std::uint64_t, std::string>> seen(actors.size());
    std::uint64_t common_tick = 0;
    for (std::size_t i = 0; i < actors.size(); ++i) {
        connection& c = *actors[i].conn;
        auto& mine = seen[i];
        mine[c.mirror().tick()] = dump(c.mirror());
        common_tick = std::max(common_tick, c.mirror().tick());
        const auto count_checksums = c.on_message;
        c.on_message = [&c, &mine, count_checksums](const ecsnet::wire::ServerMessage& m) {
            count_checksums(m);
            if (m.body_type() == ecsnet::wire::ServerBody::Delta) {
                mine[c.mirror().tick()] = dump(c.mirror());
            }
        };
    }
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return std::all_of(seen.begin(), seen.end(),
                               [&](const auto& s) { return s.contains(common_tick); });
        },
        5s));
    for (std::size_t i = 1; i < actors.size(); ++i) {
        EXPECT_EQ(seen[i].at(common_tick), seen[0].at(common_tick))
            << "client " << actors[i].id << " and client " << actors[0].id << " at tick "
            << common_tick;
    }

    // Every entity an actor owns for sure is in every mirror, with its components.
    std::size_t owned_total = 0;
    for (const actor& a : actors) {
        for (const actor::owned& o : a.entities) {
            if (o.mortal) {
                continue;
            }
            ++owned_total;
            for (const actor& observer : actors) {
                const protocol::mirror& m = observer.conn->mirror();
                ASSERT_TRUE(m.contains(o.entity)) << ecsnet::ecs::to_string(o.entity);
                ASSERT_TRUE(m.get<Owner>(o.entity).has_value());
                EXPECT_EQ(m.get<Owner>(o.entity)->client, a.id);
                EXPECT_EQ(components_in(m, o.entity), o.components)
                    << ecsnet::ecs::to_string(o.entity) << " seen by client " << observer.id;
            }
        }
    }

    std::map<actor::kind, int> applied;
    std::map<actor::kind, int> vanished;
    for (actor& a : actors) {
        a.conn->on_message = nullptr;
        SCOPED_TRACE("client " + std::to_string(a.id));
        expect_in_sync(*a.conn);
        const auto& s = a.conn->mirror().statistics();
        EXPECT_GT(s.checksums_matched, 20U);
        EXPECT_EQ(s.checksums_matched, a.checksums_received)
            << "every checksum was compared and matched";
        EXPECT_TRUE(a.conn->is_open());
        for (const auto& [k, n] : a.applied) {
            applied[k] += n;
        }
        for (const auto& [k, n] : a.vanished) {
            vanished[k] += n;
        }
    }
    EXPECT_GT(rounds, 50);
    EXPECT_GT(applied[actor::kind::spawn], 20);
    EXPECT_GT(applied[actor::kind::destroy], 10);
    EXPECT_GT(applied[actor::kind::set], 20);
    EXPECT_GT(applied[actor::kind::remove], 10);
    EXPECT_EQ(server.stats().rate_limited, 0U);
    std::cout << "[ workload ] " << rounds << " rounds, " << server.tick() << " ticks; applied "
              << applied[actor::kind::spawn] << " spawns, " << applied[actor::kind::destroy]
              << " destroys, " << applied[actor::kind::set] << " sets, "
              << applied[actor::kind::remove] << " removes; "
              << (vanished[actor::kind::destroy] + vanished[actor::kind::set] +
                  vanished[actor::kind::remove])
              << " commands found their entity expired; " << owned_total
              << " owned entities checked; "
              << actors[0].conn->mirror().statistics().checksums_matched
              << " checksums matched per client\n";
}

// ---- slow consumers --------------------------------------------------------------------------

// Heap bytes in use by the whole process (server and clients), freed memory excluded.
#if defined(__SANITIZE_ADDRESS__)
extern "C" std::size_t __sanitizer_get_current_allocated_bytes();
std::size_t heap_in_use() {
    return __sanitizer_get_current_allocated_bytes();
}
#else
std::size_t heap_in_use() {
    const struct mallinfo2 info = ::mallinfo2();
    return info.uordblks + info.hblkhd;
}
#endif

TEST_P(ServerSlowClient, NonReaderIsResyncedThenCutOffWhileOthersKeepUp) {
    server_config config = test_config();
    // Every tick moves them all: ~32 KB of delta per tick, ~1 MB/s per client. The kernel takes
    // ~3 MB for a client that does not read, even with a small SO_RCVBUF; then the queue fills.
    config.demo_entities = 4000;
    config.tick_rate = 30.0;
    config.queue_bytes = 256 * 1024;
    config.stall_timeout = 2000ms;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const std::vector<connection*> fast{alice.get(), bob.get()};

    poll_all_for(fast, 200ms);
    const std::size_t heap_before = heap_in_use();
    std::size_t heap_peak = heap_before;

    raw_socket slow{server.port(), 4096};
    slow.send(protocol::hello{protocol::protocol_version, "never-reads", ""});
    const std::uint16_t slow_port = slow.socket().local_endpoint().port();
    std::size_t max_kernel_queue = 0;  // what the server's socket to it holds, for the record

    // Keep the two others reading; watch the server until it gave up on the slow one.
    const auto started = clock_type::now();
    const auto deadline = started + 30s;
    std::optional<clock_type::duration> resynced_after;
    std::optional<clock_type::duration> cut_off_after;
    server_stats stats;
    std::uint64_t max_lag = 0;
    auto max_rtt = 0ms;
    std::uint64_t nonce = 0;
    auto next_check = started;
    auto next_ping = started;
    while (clock_type::now() < deadline && !cut_off_after) {
        poll_all_for(fast, 20ms);
        const auto now = clock_type::now();
        if (now >= next_check) {
            next_check = now + 200ms;
            const std::uint64_t ticks_mirrored =
                std::min(alice->mirror().tick(), bob->mirror().tick());
            stats = server.stats();
            heap_peak = std::max(heap_peak, heap_in_use());
            max_kernel_queue =
                std::max(max_kernel_queue,
                         ecsnet::test::kernel_send_queue(server.port(), slow_port).value_or(0));
            const std::uint64_t server_tick = server.tick();
            max_lag = std::max(max_lag, server_tick - std::min(server_tick, ticks_mirrored));
            if (stats.resyncs > 0 && !resynced_after) {
                resynced_after = now - started;
            }
            if (resynced_after && server.clients() == 2) {
                cut_off_after = now - started;
            }
        }
        if (now >= next_ping) {  // how long the others wait for an answer meanwhile
            next_ping = now + 300ms;
            for (connection* c : fast) {
                const std::uint64_t n = ++nonce;
                const auto sent = clock_type::now();
                c->send(protocol::ping{n});
                ASSERT_TRUE(c->poll_until(
                    [&] { return c->last_pong() && c->last_pong()->nonce == n; }, 5s));
                max_rtt = std::max(max_rtt, std::chrono::duration_cast<std::chrono::milliseconds>(
                                                clock_type::now() - sent));
            }
        }
    }
    const auto ms = [](std::optional<clock_type::duration> d) {
        return d ? std::chrono::duration_cast<std::chrono::milliseconds>(*d).count() : -1;
    };
    std::cout << "[ slow client ] resynced after " << ms(resynced_after) << " ms, cut off after "
              << ms(cut_off_after) << " ms; resyncs " << stats.resyncs << ", dropped frames "
              << stats.dropped_frames << "; others: max lag " << max_lag << " ticks, max ping "
              << max_rtt.count() << " ms, " << alice->mirror().statistics().deltas
              << " deltas; kernel send queue to the slow client peaked at "
              << max_kernel_queue / 1024 << " KiB; heap grew by at most "
              << (heap_peak - heap_before) / 1024 << " KiB\n";

    ASSERT_TRUE(resynced_after.has_value()) << "the slow client was never resynced";
    EXPECT_GE(stats.resyncs, 1U);
    EXPECT_GE(stats.dropped_frames, 10U) << "its deltas are dropped, not queued";
    ASSERT_TRUE(cut_off_after.has_value()) << "the slow client was not disconnected";
    // The others were never resynced and never missed a tick; they stayed close to the server.
    for (const connection* c : fast) {
        EXPECT_TRUE(c->is_open());
        expect_in_sync(*c);
        EXPECT_GT(c->mirror().statistics().checksums_matched, 0U);
    }
    // Its queue: at most one snapshot (~150 KB) + --queue-bytes + one write in progress
    // (<= 256 KB). Without the rule it would hold every delta since the kernel filled, ~1 MB/s.
    EXPECT_LT(heap_peak - heap_before, 1024U * 1024U) << "memory grew past the queue bound";
    EXPECT_LT(max_lag, 60U) << "others fell more than 2 s behind";
    EXPECT_LT(max_rtt, 2000ms) << "others waited seconds for a Pong";
}

// The queue bound counts the droppable bytes waiting behind the current write, with a tick's
// delta and checksum as one unit: a tick larger than --queue-bytes still reaches a client that
// keeps up (before that rule: 0 deltas and 124 snapshots in 5 s).
TEST_P(ServerSlowClient, DeltaLargerThanTheQueueLimitStillReachesAFastClient) {
    // 2000 moving entities make a delta of ~16 KB, over a queue limit of 8 KB: the limit must
    // not turn every tick into a resync (and a full snapshot) for a client that reads.
    server_config config = test_config();
    config.demo_entities = 2000;
    config.queue_bytes = 8 * 1024;
    // Slow enough that the client reads each tick before the next even on a loaded machine: a
    // client two ticks behind is resynced, as it should be, when the bound is under two deltas.
    config.tick_rate = 10;
    test_server server{config};
    const auto alice = join(server.port(), "alice");

    const std::uint64_t start = alice->mirror().statistics().deltas;
    ASSERT_TRUE(alice->poll_until(
        [&] { return alice->mirror().statistics().deltas >= start + 20 || !alice->is_open(); }, 5s))
        << "deltas: " << alice->mirror().statistics().deltas - start
        << ", snapshots: " << alice->mirror().statistics().snapshots;
    expect_in_sync(*alice);
    EXPECT_EQ(server.stats().resyncs, 0U);
}

// A snapshot larger than what the kernel buffers plus --queue-bytes makes the session stop
// reading from its client (backpressure) while the snapshot drains. That pause is the server's
// doing: the frame deadline of the client's last frame (its Hello) must not run meanwhile. It
// did, and a client joining a 1M-entity world was cut off with "frame not completed in time".
TEST_P(ServerSlowClient, JoiningABigWorldOutlastsTheFrameTimeout) {
    server_config config = test_config();
    config.demo_entities = 200'000;  // a ~4 MB snapshot: more than the kernel takes at once
    config.tick_rate = 5.0;
    config.queue_bytes = 64 * 1024;
    config.frame_timeout = 500ms;
    test_server server{config};

    raw_socket joiner{server.port(), 4096};
    joiner.send(protocol::hello{protocol::protocol_version, "big-world", ""});
    std::this_thread::sleep_for(1500ms);  // three frame timeouts without reading
    const auto result = joiner.read_until_closed(3s);
    EXPECT_FALSE(result.closed) << "closed after " << result.frames << " frames";
    EXPECT_GT(result.frames, 0U);
    EXPECT_EQ(server.clients(), 1U);
}

// Pongs, like the CommandResults of malformed commands, are control frames that are never
// dropped: a client that sends Pings but never reads would make the server queue replies until
// --stall-timeout-ms cuts it off. Backpressure bounds them: past --queue-bytes of unsent
// replies the session stops reading from that client. The kernel first absorbs ~3 MB of
// replies; at the ~4k Pings/s an ASan build manages here, the test needs ~20 s to get past it.
TEST_P(ServerSlowClient, PingFloodFromANonReaderDoesNotGrowServerMemory) {
    server_config config = test_config();
    config.queue_bytes = 64 * 1024;
    config.stall_timeout = 60'000ms;  // longer than the flood
    test_server server{config};
    raw_socket flood{server.port(), 4096};
    flood.send(protocol::hello{protocol::protocol_version, "ping-flood", ""});
    (void)server.clients();  // the server thread has run since
    const std::size_t before = heap_in_use();

    std::vector<std::uint8_t> batch;
    for (std::uint64_t n = 0; n < 1000; ++n) {
        const auto frame = protocol::encode(protocol::client_message{protocol::ping{n}}, {});
        batch.insert(batch.end(), frame->begin(), frame->end());
    }
    const auto end = clock_type::now() + 20s;
    std::uint64_t pings = 0;
    std::size_t peak = before;
    try {
        // A write waits while the kernel holds more than the server has read: that only means
        // the server is slower than the flood.
        while (clock_type::now() < end &&
               flood.write_within(batch, std::chrono::duration_cast<std::chrono::milliseconds>(
                                             end - clock_type::now()))) {
            pings += 1000;
            peak = std::max(peak, heap_in_use());
        }
    } catch (const boost::system::system_error& e) {
        std::cout << "[ ping flood ] the server closed the connection: " << e.what() << "\n";
    }
    peak = std::max(peak, heap_in_use());
    const std::size_t growth = peak > before ? peak - before : 0;
    std::cout << "[ ping flood ] " << pings << " pings (" << pings * batch.size() / 1000 / 1024
              << " KiB) sent in 20 s; heap grew by " << growth / 1024 << " KiB\n";
    EXPECT_LT(growth, 1024U * 1024U)
        << "one snapshot (empty world) + 64 KiB of queue + a few control frames";
}

// ---- bad input -------------------------------------------------------------------------------

std::vector<std::uint8_t> garbage_frame(std::mt19937& rng, std::uint32_t length) {
    std::vector<std::uint8_t> bytes(protocol::frame_prefix_bytes + length);
    for (std::size_t i = 0; i < protocol::frame_prefix_bytes; ++i) {
        bytes[i] = static_cast<std::uint8_t>(length >> (8 * i));
    }
    std::uniform_int_distribution<int> byte(0, 255);
    for (std::size_t i = protocol::frame_prefix_bytes; i < bytes.size(); ++i) {
        bytes[i] = static_cast<std::uint8_t>(byte(rng));
    }
    return bytes;
}

// The others can still spawn and see each other's entities.
void expect_others_unaffected(connection& alice, connection& bob) {
    ASSERT_TRUE(alice.is_open());
    ASSERT_TRUE(bob.is_open());
    const Entity e = spawn_ok(alice, component_set{}.set(Name{"still here"}));
    EXPECT_TRUE(poll_all_until(
        {&alice, &bob}, [&] { return bob.mirror().contains(e); }, 5s));
    expect_in_sync(alice);
    expect_in_sync(bob);
}

TEST_P(ServerBadInput, GarbageFrameClosesOnlyThatConnection) {
    test_server server{test_config()};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    std::mt19937 rng{99};

    for (const bool joined_first : {false, true}) {
        for (const std::uint32_t length : {8U, 200U, 4000U}) {
            SCOPED_TRACE((joined_first ? "after Hello, " : "before Hello, ") +
                         std::to_string(length) + " bytes");
            raw_socket bad{server.port()};
            if (joined_first) {
                bad.send(protocol::hello{protocol::protocol_version, "mallory", ""});
            }
            bad.write(garbage_frame(rng, length));
            const raw_socket::close_result closed = bad.read_until_closed(5s);
            EXPECT_TRUE(closed.closed);
            ASSERT_TRUE(closed.reason.has_value()) << "no Disconnect before the close";
            EXPECT_THAT(*closed.reason, HasSubstr("malformed frame"));
        }
    }
    EXPECT_EQ(server.stats().invalid_frames, 6U);
    expect_others_unaffected(*alice, *bob);
}

TEST_P(ServerBadInput, OversizeLengthPrefixClosesOnlyThatConnection) {
    server_config config = test_config();
    config.max_frame_bytes = 4096;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");

    // Protocol 5: a prefix with its top bit set is a length too (from 6 on, a compact frame's).
    for (const std::uint32_t length : {4097U, 0xFFFF'FFFFU}) {
        SCOPED_TRACE(length);
        raw_socket bad{server.port()};
        bad.send(protocol::hello{5, "mallory", ""});
        const std::array<std::uint8_t, 4> prefix{
            static_cast<std::uint8_t>(length), static_cast<std::uint8_t>(length >> 8U),
            static_cast<std::uint8_t>(length >> 16U), static_cast<std::uint8_t>(length >> 24U)};
        bad.write(prefix);
        const raw_socket::close_result closed = bad.read_until_closed(5s);
        EXPECT_TRUE(closed.closed);
        ASSERT_TRUE(closed.reason.has_value());
        EXPECT_EQ(*closed.reason,
                  "frame of " + std::to_string(length) + " bytes exceeds the limit of 4096");
    }
    {
        // Version 6: the compact frame's length, judged before its kind.
        raw_socket bad{server.port()};
        bad.send(protocol::hello{protocol::protocol_version, "mallory", ""});
        bad.write(std::array<std::uint8_t, 4>{0xFF, 0xFF, 0xFF, 0xFF});
        const raw_socket::close_result closed = bad.read_until_closed(5s);
        ASSERT_TRUE(closed.reason.has_value());
        EXPECT_EQ(*closed.reason, "frame of 16777215 bytes exceeds the limit of 4096");
    }
    EXPECT_EQ(server.stats().invalid_frames, 3U);
    expect_others_unaffected(*alice, *bob);
}

TEST_P(ServerBadInput, SilentConnectionIsClosedAfterTheHandshakeTimeout) {
    server_config config = test_config();
    config.hello_timeout = 300ms;
    test_server server{config};
    const auto alice = join(server.port(), "alice");

    raw_socket silent{server.port()};
    raw_socket half_prefix{server.port()};
    half_prefix.write(std::array<std::uint8_t, 2>{8, 0});
    const auto started = clock_type::now();
    const raw_socket::close_result closed = silent.read_until_closed(5s);
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - started);
    EXPECT_TRUE(closed.closed) << "still open after 5 s";
    EXPECT_EQ(closed.frames, 0U);
    EXPECT_TRUE(half_prefix.read_until_closed(5s).closed);
    std::cout << "[ handshake timeout ] closed after " << waited.count() << " ms\n";

    // A joined client is not subject to it.
    alice->poll_for(500ms);
    EXPECT_TRUE(alice->is_open());
    EXPECT_EQ(server.clients(), 1U);
}

// ---- admission -------------------------------------------------------------------------------

TEST_P(ServerAdmission, ThirdClientGetsServerFull) {
    server_config config = test_config();
    config.max_clients = 2;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");

    const auto started = clock_type::now();
    try {
        (void)join(server.port(), "carol");
        ADD_FAILURE() << "a third client was admitted";
    } catch (const client_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("server full (2 clients)"));
    }
    EXPECT_LT(clock_type::now() - started, 3s);
    EXPECT_EQ(server.stats().refused, 1U);

    // A place frees up when a client leaves.
    alice.reset();
    ASSERT_TRUE(bob->poll_until([&] { return server.clients() == 1; }, 5s));
    const auto dave = join(server.port(), "dave");
    EXPECT_TRUE(dave->mirror().ready());
}

TEST_P(ServerAdmission, AuthToken) {
    server_config config = test_config();
    config.auth_token = "s3cret";
    test_server server{config};

    for (const std::string token : {"", "wrong", "s3cret-and-more", "s3cre"}) {
        SCOPED_TRACE("token '" + token + "'");
        try {
            (void)join(server.port(), "mallory", token);
            ADD_FAILURE() << "admitted";
        } catch (const client_error& e) {
            EXPECT_THAT(e.what(), HasSubstr("bad auth token"));
        }
    }
    const auto alice = join(server.port(), "alice", "s3cret");
    EXPECT_TRUE(alice->mirror().ready());
    EXPECT_EQ(server.stats().refused, 4U);
    EXPECT_EQ(server.clients(), 1U);
}

TEST_P(ServerAdmission, ProtocolVersionMismatchIsRefusedWithAReason) {
    test_server server{test_config()};
    const auto c = connect_only(server.port());
    c->send(protocol::hello{protocol::protocol_version + 1, "from-the-future", ""});
    ASSERT_TRUE(c->poll_until([&] { return !c->is_open(); }, 5s));
    EXPECT_EQ(*c->closed_reason(), "protocol version " +
                                       std::to_string(protocol::protocol_version + 1) +
                                       " not supported (server speaks 3 to 6)");
    const auto old = connect_only(server.port());
    old->send(protocol::hello{2, "from-the-past", ""});
    ASSERT_TRUE(old->poll_until([&] { return !old->is_open(); }, 5s));
    EXPECT_EQ(*old->closed_reason(), "protocol version 2 not supported (server speaks 3 to 6)");
    EXPECT_EQ(server.stats().refused, 2U);
}

// Protocol 4 added player input; a version-3 client is served in its own version.
TEST_P(ServerAdmission, AVersionThreeClientIsWelcomedInVersionThree) {
    test_server server{test_config()};
    raw_socket raw{server.port()};
    raw.send(protocol::hello{3, "v3", ""});
    std::vector<std::uint8_t> bytes;
    ASSERT_EQ(raw.read_frame(bytes, 5s), raw_socket::read_status::frame);
    const auto* message = protocol::verify_server_frame(bytes);
    ASSERT_NE(message, nullptr);
    const auto control = protocol::decode_server_control(*message);
    ASSERT_TRUE(control.has_value());
    EXPECT_EQ(std::get<protocol::welcome>(*control).version, 3U);
}

TEST_P(ServerAdmission, CommandRateLimit) {
    server_config config = test_config();
    config.command_rate = 5.0;
    config.command_burst = 5.0;
    test_server server{config};
    const auto alice = join(server.port(), "alice");

    std::vector<std::uint32_t> ids;
    for (int i = 0; i < 20; ++i) {
        ids.push_back(alice->next_request_id());
        alice->send(protocol::spawn{ids.back(), component_set{}.set(Health{i})});
    }
    const auto results = collect(*alice, ids, 5s);
    ASSERT_EQ(results.size(), ids.size());
    int ok = 0;
    int limited = 0;
    for (const auto& [id, result] : results) {
        if (result.ok) {
            ++ok;
        } else {
            EXPECT_EQ(result.code, ErrorCode::RateLimited);
            EXPECT_EQ(result.message, "more than 5 commands per second");
            ++limited;
        }
    }
    EXPECT_GE(ok, 5);
    EXPECT_LE(ok, 7);
    EXPECT_EQ(ok + limited, 20);
    EXPECT_EQ(server.stats().rate_limited, static_cast<std::uint64_t>(limited));
    EXPECT_TRUE(alice->is_open()) << "a burst is not abuse";

    alice->poll_for(500ms);  // two tokens back
    EXPECT_TRUE(spawn(*alice, component_set{}.set(Health{99})).ok);
}

// ---- disconnects -----------------------------------------------------------------------------

TEST_P(ServerDisconnect, ClientsEntitiesAreDespawned) {
    server_config config = test_config();
    config.demo_entities = 5;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");

    std::vector<Entity> hers;
    hers.push_back(spawn_ok(*alice, component_set{}.set(Position{})));
    hers.push_back(spawn_ok(*alice, component_set{}.set(Position{}).set(Velocity{1, 1})));
    hers.push_back(spawn_ok(*alice, component_set{}.set(Name{"x"})));
    const Entity his = spawn_ok(*bob, component_set{}.set(Position{}));
    ASSERT_TRUE(bob->poll_until([&] { return contains_all(*bob, hers); }, 5s));

    alice.reset();
    ASSERT_TRUE(bob->poll_until([&] { return contains_none(*bob, hers); }, 5s));
    EXPECT_TRUE(bob->mirror().contains(his));
    EXPECT_EQ(bob->mirror().size(), 5U + 1U);
    expect_in_sync(*bob);
}

TEST_P(ServerDisconnect, KeepEntitiesOnDisconnect) {
    server_config config = test_config();
    config.keep_entities_on_disconnect = true;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const std::uint32_t alice_id = alice->welcome().client_id;

    std::vector<Entity> hers;
    hers.push_back(spawn_ok(*alice, component_set{}.set(Position{})));
    hers.push_back(spawn_ok(*alice, component_set{}.set(Position{}).set(Velocity{10, 0})));
    ASSERT_TRUE(bob->poll_until([&] { return contains_all(*bob, hers); }, 5s));

    alice.reset();
    ASSERT_TRUE(bob->poll_until([&] { return server.clients() == 1; }, 5s));
    const std::uint64_t gone_at = bob->mirror().tick();
    ASSERT_TRUE(bob->poll_until([&] { return bob->mirror().tick() >= gone_at + 10; }, 5s));
    ASSERT_TRUE(contains_all(*bob, hers));
    for (const Entity e : hers) {
        ASSERT_TRUE(bob->mirror().get<Owner>(e).has_value());
        EXPECT_EQ(bob->mirror().get<Owner>(e)->client, alice_id);
    }
    EXPECT_GT(bob->mirror().get<Position>(hers[1])->x, 0.0F) << "and the world goes on";
    expect_in_sync(*bob);
}

// Issue 12.4: an exception escaping a system used to end the tick coroutine (the server kept
// answering pings but never ticked again). Now the scheduler catches it, the server counts and
// logs it, and the tick goes on.
TEST(ServerSystems, AThrowingUserSystemIsCountedAndTheServerKeepsTicking) {
    server_config config = test_config();
    config.checksum_interval = 5;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    const Entity e = spawn_ok(*alice, component_set{}.set(Position{0.0F, 0.0F}));

    // Writes e's Position every tick, then throws on every other tick: a std::exception or,
    // every fourth tick, something that is not one.
    server.call([e](ecsnet::server::server& s) {
        s.scheduler().add(
            "flaky", ecsnet::ecs::component_access{}.writes<Position>(),
            [e](ecsnet::ecs::SystemContext& ctx) {
                if (!ctx.world.valid(e)) {
                    return;
                }
                ctx.world.patch<Position>(e, [](Position& p) { p.x += 1.0F; });
                if (ctx.tick % 4 == 0) {
                    throw 7;  // NOLINT(hicpp-exception-baseclass): the point of the test
                }
                if (ctx.tick % 2 == 0) {
                    throw std::runtime_error("flaky failed");
                }
            });
    });
    const std::uint64_t added_at = server.tick();

    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().tick() >= added_at + 40; }, 10s))
        << "the server stopped ticking at " << server.tick();
    EXPECT_GE(server.tick(), added_at + 40);
    const server_stats stats = server.stats();
    EXPECT_GE(stats.system_failures, 15U);
    EXPECT_EQ(server.call([](ecsnet::server::server& s) {
        for (const auto& system : s.scheduler().systems()) {
            if (system.name == "flaky") {
                return system.failures;
            }
        }
        return std::uint64_t{0};
    }),
              stats.system_failures);
    // The writes the failing runs made before throwing were replicated like any other.
    ASSERT_TRUE(alice->mirror().get<Position>(e).has_value());
    EXPECT_GE(alice->mirror().get<Position>(e)->x, 30.0F);
    EXPECT_GT(alice->mirror().statistics().checksums_matched, 0U);
    expect_in_sync(*alice);

    // And commands are still served.
    const Entity later = spawn_ok(*alice, component_set{}.set(Health{1}));
    ASSERT_TRUE(alice->poll_until([&] { return contains_all(*alice, {later}); }, 5s));
}

TEST_P(ServerShutdown, StopSendsShuttingDownToEveryClient) {
    server_config config = test_config();
    config.demo_entities = 10;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");
    const auto pending = connect_only(server.port());  // not joined yet
    ASSERT_TRUE(alice->poll_until(
        [&] {
            return server.clients() == 2 && server.call([](ecsnet::server::server& s) {
                return s.pending_connections();
            }) == 1;
        },
        5s));

    const auto took = server.stop();
    EXPECT_LT(took, 5s);
    for (connection* c : {alice.get(), bob.get(), pending.get()}) {
        ASSERT_TRUE(c->poll_until([&] { return !c->is_open(); }, 5s));
        EXPECT_EQ(*c->closed_reason(), "shutting down");
    }
}

// ---- identity (issue 12.2) --------------------------------------------------------------------

std::unique_ptr<connection> join_with(std::uint16_t port, connect_options options) {
    options.port = port;
    options.timeout = 10s;
    return std::make_unique<connection>(over_current_transport(options));
}

TEST_P(ServerIdentity, TheNameIsNotAnIdentity) {
    server_config config = test_config();
    config.keep_entities_on_disconnect = true;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));

    const auto mallory = join(server.port(), "alice");  // the same name, no key
    EXPECT_NE(mallory->welcome().client_id, alice->welcome().client_id);
    const auto result = destroy(*mallory, hers);
    EXPECT_FALSE(result.ok);
    EXPECT_EQ(result.code, ErrorCode::NotOwner);
    alice.reset();
    EXPECT_EQ(destroy(*mallory, hers).code, ErrorCode::NotOwner) << "nor once alice has left";
}

TEST_P(ServerIdentity, TheResumeKeyFromWelcomeIsTheOwner) {
    server_config config = test_config();
    config.keep_entities_on_disconnect = true;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    ASSERT_EQ(alice->welcome().resume_key.size(), protocol::resume_key_bytes);
    const std::uint32_t owner = alice->welcome().client_id;
    const auto key = alice->welcome().resume_key;
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));
    alice.reset();

    connect_options options;
    options.name = "a new name, the same owner";
    options.resume_key = key;
    const auto again = join_with(server.port(), options);
    EXPECT_EQ(again->welcome().client_id, owner);
    EXPECT_EQ(again->welcome().resume_key, key);
    EXPECT_TRUE(destroy(*again, hers).ok);
}

TEST_P(ServerIdentity, AnOwnerWithoutConnectionOrEntityIsForgotten) {
    test_server server{test_config()};
    const auto known = [&] {
        return server.call([](ecsnet::server::server& s) { return s.owners().size(); });
    };
    const auto watcher = join(server.port(), "watcher");
    for (int i = 0; i < 20; ++i) {
        auto c = join(server.port(), "visitor-" + std::to_string(i));
        (void)spawn_ok(*c, component_set{}.set(Position{}));
    }
    ASSERT_TRUE(watcher->poll_until([&] { return known() == 1; }, 5s))
        << known() << " owners known; only the watcher is connected or owns anything";
}

// Connect tokens (issue 24.2): JWTs, HS256 here; ES256 below.
std::string hs256_token(const std::string& secret, const std::string& player,
                        const std::string& world,
                        std::chrono::system_clock::time_point expires =
                            std::chrono::system_clock::now() + 1h,
                        const std::string& jti = ecsnet::server::random_jti()) {
    return ecsnet::server::issue_connect_token({player, world, jti, expires, std::nullopt},
                                               ecsnet::server::token_algorithm::hs256, secret);
}

std::string refusal_of(std::uint16_t port, connect_options options) {
    try {
        (void)join_with(port, std::move(options));
    } catch (const client_error& e) {
        return e.what();
    }
    return "admitted";
}

connect_options with_token(std::string token, std::string name = "player") {
    connect_options options;
    options.connect_token = std::move(token);
    options.name = std::move(name);
    return options;
}

TEST_P(ServerIdentity, ConnectTokensDecideTheOwner) {
    const std::string secret = "a-signing-secret-of-32-bytes...";
    server_config config = test_config();
    config.token_secret = secret;
    config.world_id = "eu-1";
    config.keep_entities_on_disconnect = true;
    test_server server{config};
    const auto now = std::chrono::system_clock::now();
    const auto port = server.port();
    EXPECT_THAT(refusal_of(port, with_token("")), HasSubstr("connect token required"));
    EXPECT_THAT(refusal_of(port, with_token(hs256_token(secret, "alice", "eu-1", now - 1s))),
                HasSubstr("expired"));
    EXPECT_THAT(refusal_of(port, with_token(hs256_token(secret, "alice", "us-2"))),
                HasSubstr("for world 'us-2', this server is world 'eu-1'"));
    EXPECT_THAT(refusal_of(port, with_token(hs256_token("not-the-server's-secret-at-all",
                                                        "alice", "eu-1"))),
                HasSubstr("signature does not match"));
    EXPECT_EQ(server.stats().identity_refused, 4U);

    auto alice = join_with(port, with_token(hs256_token(secret, "alice", "eu-1"), "display only"));
    EXPECT_EQ(alice->welcome().player_id, "alice");
    EXPECT_EQ(alice->welcome().resume_key.size(), protocol::resume_key_bytes)
        << "token owners get a resume key too, to reconnect without a new token";
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));
    const auto bob = join_with(port, with_token(hs256_token(secret, "bob", "eu-1"), "alice"));
    EXPECT_EQ(destroy(*bob, hers).code, ErrorCode::NotOwner);
    alice.reset();
    // Another device, the same player, a new token from the backend.
    const auto alice_again = join_with(port, with_token(hs256_token(secret, "alice", "eu-1")));
    EXPECT_TRUE(destroy(*alice_again, hers).ok);
}

// docs/PROTOCOL.md "Identity", 3.3: an oversize token is an identity refusal like any other
// malformed token (it was refused by the decoder, as an invalid frame, before the resume key
// that needs no token was looked at).
TEST_P(ServerIdentity, AConnectTokenOver2048BytesIsMalformedAndAKnownResumeKeyNeedsNone) {
    const std::string secret = "a-signing-secret-of-32-bytes...";
    server_config config = test_config();
    config.token_secret = secret;
    config.world_id = "eu-1";
    test_server server{config};
    const auto port = server.port();
    const std::string oversize(protocol::max_connect_token_bytes + 1, 'a');
    EXPECT_THAT(refusal_of(port, with_token(oversize)),
                testing::EndsWith("connect token is malformed (longer than 2048 bytes)"));
    EXPECT_EQ(server.stats().identity_refused, 1U);
    EXPECT_EQ(server.stats().invalid_frames, 0U);

    const auto alice = join_with(port, with_token(hs256_token(secret, "alice", "eu-1")));
    connect_options again = with_token(oversize);
    again.resume_key = alice->welcome().resume_key;
    EXPECT_EQ(join_with(port, again)->welcome().player_id, "alice")
        << "with a known resume key the token is not looked at";
}

// The attack of issue 24: a second user replayed alice's token and destroyed her entity; three
// connections holding one token filled a --max-clients 3 server.
TEST_P(ServerIdentity, AConnectTokenAdmitsOnceAndReconnectsUseTheResumeKey) {
    const std::string secret = "a-signing-secret-of-32-bytes...";
    server_config config = test_config();
    config.token_secret = secret;
    config.world_id = "eu-1";
    config.max_clients = 3;
    config.keep_entities_on_disconnect = true;
    test_server server{config};
    const auto port = server.port();
    const std::string token = hs256_token(secret, "alice", "eu-1", std::chrono::system_clock::now() + 1h, "nonce-1");
    auto alice = join_with(port, with_token(token, "alice"));
    const auto key = alice->welcome().resume_key;
    const std::uint32_t owner = alice->welcome().client_id;
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));
    for (int i = 0; i < 3; ++i) {
        EXPECT_THAT(refusal_of(port, with_token(token, "mallory")),
                    testing::EndsWith("refused: connect token already used (jti nonce-1): "
                                      "reconnect with Welcome's resume key, or get a new token"));
    }
    EXPECT_TRUE(alice->is_open()) << "the replays took nobody's seat";
    EXPECT_EQ(server.stats().identity_refused, 3U);
    alice.reset();
    EXPECT_THAT(refusal_of(port, with_token(token)), HasSubstr("already used"))
        << "nor after alice left";

    // Alice reconnects with Welcome's key (her used token along, as ecsnet-client sends it).
    connect_options resume = with_token(token, "alice");
    resume.resume_key = key;
    const auto again = join_with(port, resume);
    EXPECT_EQ(again->welcome().client_id, owner);
    EXPECT_EQ(again->welcome().player_id, "alice");
    EXPECT_EQ(again->welcome().resume_key, key);
    EXPECT_TRUE(destroy(*again, hers).ok);

    // A key the server does not know, without a token, is no way in.
    connect_options guessed;
    guessed.resume_key = key;
    guessed.resume_key[0] ^= 1;
    EXPECT_THAT(refusal_of(port, guessed), HasSubstr("resume key unknown"));
}

TEST_P(ServerIdentity, ANewerConnectionOfAPlayerTakesTheSeat) {
    const std::string secret = "a-signing-secret-of-32-bytes...";
    server_config config = test_config();
    config.token_secret = secret;
    config.world_id = "eu-1";
    config.max_clients = 2;
    config.keep_entities_on_disconnect = true;
    test_server server{config};
    const auto port = server.port();
    auto first = join_with(port, with_token(hs256_token(secret, "alice", "eu-1")));
    const auto bob = join_with(port, with_token(hs256_token(secret, "bob", "eu-1")));
    const Entity hers = spawn_ok(*first, component_set{}.set(Position{}));
    // The server is full, but alice's newer connection takes her own seat.
    const auto second = join_with(port, with_token(hs256_token(secret, "alice", "eu-1")));
    EXPECT_EQ(second->welcome().client_id, first->welcome().client_id);
    ASSERT_TRUE(first->poll_until([&] { return !first->is_open(); }, 5s));
    EXPECT_EQ(first->closed_reason().value_or(""), "signed in elsewhere");
    EXPECT_TRUE(destroy(*second, hers).ok) << "the entities stayed the player's";
    EXPECT_TRUE(bob->is_open());
    EXPECT_EQ(server.stats().seats_taken_over, 1U);
    // By resume key as well.
    connect_options by_key;
    by_key.resume_key = second->welcome().resume_key;
    const auto third = join_with(port, by_key);
    ASSERT_TRUE(second->poll_until([&] { return !second->is_open(); }, 5s));
    EXPECT_EQ(second->closed_reason().value_or(""), "signed in elsewhere");
    EXPECT_TRUE(third->is_open());
}

TEST_P(ServerIdentity, MorePlayerConnectionsWhenConfiguredAndNoSeatsInDevelopmentMode) {
    const std::string secret = "a-signing-secret-of-32-bytes...";
    server_config config = test_config();
    config.token_secret = secret;
    config.max_connections_per_player = 2;
    test_server server{config};
    const auto port = server.port();
    auto first = join_with(port, with_token(hs256_token(secret, "alice", "default")));
    auto second = join_with(port, with_token(hs256_token(secret, "alice", "default")));
    auto third = join_with(port, with_token(hs256_token(secret, "alice", "default")));
    ASSERT_TRUE(first->poll_until([&] { return !first->is_open(); }, 5s));
    EXPECT_EQ(first->closed_reason().value_or(""), "signed in elsewhere") << "the oldest goes";
    second->poll_for(200ms);
    EXPECT_TRUE(second->is_open());
    EXPECT_TRUE(third->is_open());

    // Development owners are not players: a developer's shell and watch share one key.
    test_server development{test_config()};
    auto shell = join(development.port(), "shell");
    connect_options same;
    same.resume_key = shell->welcome().resume_key;
    auto watch = join_with(development.port(), same);
    EXPECT_EQ(watch->welcome().client_id, shell->welcome().client_id);
    shell->poll_for(200ms);
    EXPECT_TRUE(shell->is_open());
}

TEST_P(ServerIdentity, JoinedClientsPerAddressAreBoundedWithoutTokens) {
    server_config config = test_config();
    config.max_clients_per_address = 2;
    test_server server{config};
    const auto a = join(server.port(), "a");
    const auto b = join(server.port(), "b");
    EXPECT_THAT(refusal_of(server.port(), connect_options{}),
                testing::EndsWith("refused: too many clients from your address (2 joined at most)"));
    EXPECT_EQ(server.stats().address_refused, 1U);
    connect_options as_a;
    as_a.resume_key = a->welcome().resume_key;
    EXPECT_THAT(refusal_of(server.port(), as_a), HasSubstr("too many clients from your address"))
        << "a known key is bounded the same";

    // With connect tokens, seats are per player: the address bound does not apply.
    const std::string secret = "a-signing-secret-of-32-bytes...";
    server_config with_tokens = test_config();
    with_tokens.max_clients_per_address = 1;
    with_tokens.token_secret = secret;
    test_server token_server{with_tokens};
    const auto p1 = join_with(token_server.port(), with_token(hs256_token(secret, "p1", "default")));
    const auto p2 = join_with(token_server.port(), with_token(hs256_token(secret, "p2", "default")));
    EXPECT_TRUE(p1->is_open());
    EXPECT_TRUE(p2->is_open());
}

TEST_P(ServerIdentity, APublicKeyServerVerifiesES256AndRefusesAlgorithmConfusion) {
    const std::string dir = ECSNET_JWT_TEST_DIR;
    server_config config = test_config();
    config.token_public_key = dir + "/es256-public.pem";
    config.world_id = "eu-1";
    test_server server{config};
    const auto token = ecsnet::server::issue_connect_token(
        {"alice", "eu-1", ecsnet::server::random_jti(), std::chrono::system_clock::now() + 1h,
         std::nullopt},
        ecsnet::server::token_algorithm::es256,
        ecsnet::server::read_key_file(dir + "/es256-private.pem"));
    const auto alice = join_with(server.port(), with_token(token));
    EXPECT_EQ(alice->welcome().player_id, "alice");
    // HS256 "signed" with the public key, which anyone can read.
    const std::string confused =
        hs256_token(ecsnet::server::read_key_file(config.token_public_key), "mallory", "eu-1");
    EXPECT_THAT(refusal_of(server.port(), with_token(confused)),
                testing::EndsWith("refused: connect token is signed with HS256, this server "
                                  "accepts ES256 only"));
}

// ---- pre-Hello connections (issue 12.3) -------------------------------------------------------

// Issue 24.1: the game's code that a command runs (a listener, valid()) threw out of command
// application and ended the tick loop for good. Now the command is refused with GameFailed,
// undone, counted and logged, and the tick goes on for everyone.
TEST(ServerGameFailures, AListenerThatThrowsRefusesTheCommandAndTheWorldGoesOn) {
    test_server server{test_config()};
    server.call([](ecsnet::server::server& s) {
        const auto cursed = [](ecsnet::ecs::World& w, Entity e) {
            if (w.get<Health>(e).value == 13) {
                throw std::runtime_error("health 13 is cursed");
            }
        };
        s.world().on_construct<Health>().connect(cursed);
        s.world().on_update<Health>().connect(cursed);
    });
    const auto alice = join(server.port(), "alice");
    const auto bob = join(server.port(), "bob");

    const protocol::command_result cursed =
        spawn(*alice, component_set{}.set(Position{1, 1}).set(Health{13}));
    EXPECT_EQ(cursed.code, ErrorCode::GameFailed);
    EXPECT_EQ(cursed.message, "the game refused it: health 13 is cursed (component health)");
    const Entity e = spawn_ok(*alice, component_set{}.set(Position{2, 2}).set(Health{1}));
    const protocol::command_result set_cursed = [&] {
        const std::uint32_t id = alice->next_request_id();
        return alice->request(
            protocol::set_components{id, e, component_set{}.set(Health{13}).set(Position{9, 9})},
            id);
    }();
    EXPECT_EQ(set_cursed.code, ErrorCode::GameFailed);

    // The tick goes on, the others are served, and nobody saw the failed commands' effects.
    const std::uint64_t at = server.tick();
    ASSERT_TRUE(bob->poll_until([&] { return bob->mirror().tick() >= at + 20; }, 10s));
    ASSERT_TRUE(bob->poll_until([&] { return contains_all(*bob, {e}); }, 5s));
    EXPECT_EQ(bob->mirror().get<Health>(e)->value, 1);
    EXPECT_EQ(bob->mirror().get<Position>(e)->x, 2.0F);
    EXPECT_EQ(bob->mirror().size(), 1U) << "the cursed spawn left nothing";
    const auto carol = join(server.port(), "carol");
    EXPECT_TRUE(spawn(*carol, component_set{}.set(Health{2})).ok);
    EXPECT_EQ(server.stats().command_failures, 2U);
    EXPECT_TRUE(server.call([](ecsnet::server::server& s) { return s.health().ticking; }));
    expect_in_sync(*bob);
}

// Issue 24.6: an owner's entities outlive its last connection for --reconnect-grace; a
// reconnect with the resume key within it finds them with the same handles.
TEST_P(ServerReconnectGrace, AReconnectWithinTheGraceFindsTheEntities) {
    server_config config = test_config();
    config.reconnect_grace = 60s;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    const auto key = alice->welcome().resume_key;
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));
    const auto bob = join(server.port(), "bob");
    alice.reset();  // a dropped connection
    ASSERT_TRUE(bob->poll_until([&] { return server.clients() == 1; }, 5s));
    const std::uint64_t gone_at = bob->mirror().tick();
    ASSERT_TRUE(bob->poll_until([&] { return bob->mirror().tick() >= gone_at + 25; }, 5s));
    EXPECT_TRUE(bob->mirror().contains(hers)) << "kept through the grace";

    connect_options options;
    options.name = "alice again";
    options.resume_key = key;
    const auto again = join_with(server.port(), options);
    EXPECT_TRUE(again->mirror().contains(hers));
    EXPECT_TRUE(destroy(*again, hers).ok) << "the same handle, the same owner";
}

TEST_P(ServerReconnectGrace, AfterTheGraceTheEntitiesGoAndTheOwnerIsForgotten) {
    server_config config = test_config();
    config.reconnect_grace = 300ms;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    const auto key = alice->welcome().resume_key;
    const std::uint32_t owner = alice->welcome().client_id;
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));
    const auto bob = join(server.port(), "bob");
    ASSERT_TRUE(bob->poll_until([&] { return contains_all(*bob, {hers}); }, 5s));
    const auto left = clock_type::now();
    alice.reset();
    ASSERT_TRUE(bob->poll_until([&] { return contains_none(*bob, {hers}); }, 5s));
    EXPECT_GE(clock_type::now() - left, 250ms) << "not before the grace";
    EXPECT_EQ(server.stats().grace_despawns, 1U);
    EXPECT_FALSE(server.call([owner](ecsnet::server::server& s) { return s.owners().contains(owner); }));

    connect_options options;
    options.resume_key = key;
    const auto late = join_with(server.port(), options);
    EXPECT_NE(late->welcome().client_id, owner) << "a forgotten key makes a new owner";
    EXPECT_EQ(destroy(*late, hers).code, ErrorCode::UnknownEntity);
}

TEST_P(ServerReconnectGrace, LeavingAgainRestartsTheGrace) {
    server_config config = test_config();
    config.reconnect_grace = 600ms;
    test_server server{config};
    auto alice = join(server.port(), "alice");
    connect_options options;
    options.resume_key = alice->welcome().resume_key;
    const Entity hers = spawn_ok(*alice, component_set{}.set(Position{}));
    const auto bob = join(server.port(), "bob");
    alice.reset();
    std::this_thread::sleep_for(400ms);
    alice = join_with(server.port(), options);  // back within the grace
    alice.reset();                              // and gone again: a new grace from now
    const auto left = clock_type::now();
    ASSERT_TRUE(bob->poll_until([&] { return contains_none(*bob, {hers}); }, 5s));
    EXPECT_GE(clock_type::now() - left, 500ms) << "the first departure's deadline was stale";
}

TEST_P(ServerAdmission, SilentSocketsDoNotLockPlayersOut) {
    server_config config = test_config();
    config.max_clients = 4;
    config.max_pending = 16;
    config.max_pending_per_address = 1000;
    config.hello_timeout = 30s;
    test_server server{config};
    std::vector<std::unique_ptr<raw_socket>> silent;
    for (int i = 0; i < 100; ++i) {
        silent.push_back(std::make_unique<raw_socket>(server.port()));
    }
    // Every player slot is still free, and a prompt Hello gets one.
    for (int i = 0; i < 4; ++i) {
        const auto player = join(server.port(), "player-" + std::to_string(i));
        EXPECT_TRUE(player->mirror().ready());
    }
    const auto stats = server.stats();
    EXPECT_GE(stats.pending_evicted, 84U) << "the oldest silent sockets made room";
    EXPECT_LE(server.call([](ecsnet::server::server& s) { return s.pending_connections(); }), 16U);
}

TEST_P(ServerAdmission, PreHelloConnectionsPerAddressAreBounded) {
    server_config config = test_config();
    config.max_pending_per_address = 3;
    config.hello_timeout = 30s;
    test_server server{config};
    std::vector<std::unique_ptr<raw_socket>> silent;
    for (int i = 0; i < 3; ++i) {
        silent.push_back(std::make_unique<raw_socket>(server.port()));
    }
    ASSERT_TRUE(poll_all_until(
        {},
        [&] {
            return server.call([](ecsnet::server::server& s) { return s.pending_connections(); }) ==
                   3;
        },
        5s));
    raw_socket fourth{server.port()};
    const auto closed = fourth.read_until_closed(5s);
    EXPECT_TRUE(closed.closed);
    EXPECT_EQ(closed.reason, "too many connections from 127.0.0.1 waiting for Hello");
    EXPECT_EQ(server.stats().pending_refused, 1U);
}

// ---- ResyncRequest flood (issue 12.3) ----------------------------------------------------------

TEST_P(ServerResync, RequestsAreCoalescedAndAFloodDisconnects) {
    server_config config = test_config();
    config.demo_entities = 2000;  // a snapshot of ~60 kB: each resync would cost that
    config.resync_interval = 2s;
    test_server server{config};
    const auto c = join(server.port(), "resyncer");
    const auto before = server.stats();
    for (int i = 0; i < 60; ++i) {
        c->send(protocol::resync_request{"again"});
    }
    c->poll_for(500ms);
    auto after = server.stats();
    EXPECT_EQ(after.resyncs_requested - before.resyncs_requested, 60U);
    EXPECT_LE(after.resyncs - before.resyncs, 1U) << "one snapshot, the rest coalesced";
    EXPECT_GE(after.resyncs_coalesced - before.resyncs_coalesced, 59U);
    EXPECT_TRUE(c->is_open()) << "60 within the window is not yet abuse";
    EXPECT_TRUE(c->mirror().ready());

    for (int i = 0; i < 60 && c->is_open(); ++i) {
        c->send(protocol::resync_request{"and again"});
    }
    ASSERT_TRUE(c->poll_until([&] { return !c->is_open(); }, 5s));
    EXPECT_EQ(*c->closed_reason(), "ResyncRequests exceeded 100 per 10 s");
    after = server.stats();
    EXPECT_LE(after.resyncs - before.resyncs, 2U);
}

// ---- the wire contract with docs/PROTOCOL.md (issue 12.10) -------------------------------------

TEST_P(ServerCommandResults, ComeInCommandOrder) {
    test_server server{test_config()};
    const auto c = join(server.port(), "orderly");
    std::vector<std::uint32_t> order;
    c->on_message = [&](const ecsnet::wire::ServerMessage& m) {
        if (m.body_type() == ecsnet::wire::ServerBody::CommandResult) {
            order.push_back(m.body_as_CommandResult()->request_id());
        }
    };
    const float nan = std::numeric_limits<float>::quiet_NaN();
    c->send(protocol::spawn{1, component_set{}.set(Position{1, 2})});
    c->send(protocol::spawn{2, component_set{}.set(Position{nan, 0})});
    c->send(protocol::destroy{3, Entity{4000, 1}});
    c->send(protocol::set_components{4, Entity{1, 1}, component_set{}});
    ASSERT_TRUE(c->poll_until([&] { return order.size() == 4; }, 5s));
    EXPECT_EQ(order, (std::vector<std::uint32_t>{1, 2, 3, 4}));
}

TEST_P(ServerCommandResults, ARateLimitDisconnectSendsEveryReplyOwedFirst) {
    server_config config = test_config();
    config.command_rate = 5.0;
    config.command_burst = 5.0;
    test_server server{config};
    const auto c = join(server.port(), "flooder");
    std::set<std::uint32_t> answered;
    c->on_message = [&](const ecsnet::wire::ServerMessage& m) {
        if (m.body_type() == ecsnet::wire::ServerBody::CommandResult) {
            answered.insert(m.body_as_CommandResult()->request_id());
        }
    };
    // Everything is sent before anything is read: frames are still in flight when the server
    // decides to disconnect.
    constexpr std::uint32_t sent = 1500;
    for (std::uint32_t id = 1; id <= sent; ++id) {
        c->send(protocol::spawn{id, component_set{}.set(Health{1})});
    }
    ASSERT_TRUE(c->poll_until([&] { return !c->is_open(); }, 10s));
    EXPECT_EQ(*c->closed_reason(), "command rate limit exceeded persistently");
    // The server read 5 + 1001 commands before deciding; every one of them was answered,
    // the one that tipped it over included.
    ASSERT_GE(answered.size(), 1006U);
    EXPECT_EQ(*answered.begin(), 1U);
    EXPECT_EQ(*answered.rbegin(), answered.size()) << "no reply missing in between";
}

TEST_P(ServerBadInput, APartialLengthPrefixIsCutByTheFrameTimeout) {
    server_config config = test_config();
    config.frame_timeout = 300ms;
    config.idle_timeout = 60s;
    test_server server{config};
    const auto alice = join(server.port(), "alice");
    raw_socket trickler{server.port()};
    trickler.send(protocol::hello{protocol::protocol_version, "trickler", ""});
    const std::array<std::uint8_t, 2> half_prefix{8, 0};
    trickler.write(half_prefix);
    const auto started = clock_type::now();
    const auto closed = trickler.read_until_closed(5s);
    EXPECT_TRUE(closed.closed);
    EXPECT_LT(clock_type::now() - started, 3s) << "not the 60 s idle timeout";
}

// ---- TLS (issue 12.2) -----------------------------------------------------------------------

server_config tls_config() {
    server_config config = test_config();
    config.tls_cert = ECSNET_TLS_TEST_DIR "/server.pem";
    config.tls_key = ECSNET_TLS_TEST_DIR "/server.key";
    return config;
}

TEST_P(ServerTls, AClientThatVerifiesTheServerJoinsAndPlays) {
    test_server server{tls_config()};
    connect_options options;
    options.tls = true;
    options.ca_file = ECSNET_TLS_TEST_DIR "/ca.pem";
    const auto alice = join_with(server.port(), options);
    const Entity e = spawn_ok(*alice, component_set{}.set(Position{1, 2}));
    ASSERT_TRUE(alice->poll_until([&] { return alice->mirror().contains(e); }, 5s));
    EXPECT_TRUE(destroy(*alice, e).ok);
}

TEST_P(ServerTls, AnUnknownCertificateIsRefusedByDefault) {
    test_server server{tls_config()};
    connect_options options;
    options.tls = true;  // the system's CAs do not know the test CA
    try {
        (void)join_with(server.port(), options);
        ADD_FAILURE() << "joined a server whose certificate nobody vouches for";
    } catch (const client_error& e) {
        EXPECT_THAT(e.what(), HasSubstr("certificate verify failed"));
    }
}

TEST_P(ServerTls, APlainClientIsNotServedAndTheServerGoesOn) {
    test_server server{tls_config()};
    EXPECT_THROW((void)join(server.port(), "plain"), client_error);
    connect_options options;
    options.tls = true;
    options.ca_file = ECSNET_TLS_TEST_DIR "/ca.pem";
    EXPECT_TRUE(join_with(server.port(), options)->mirror().ready());
}

// ---- the tick loop after a stall -------------------------------------------------------------

TEST(ServerTickLoop, AfterAStallMissedTicksAreSkippedNotReplayedBackToBack) {
    // A system that blocks the server's thread once for ~40 tick periods (a VM pause, a
    // stop-the-world swap), and records when each tick's systems started and ended.
    server_config config = test_config();  // 50 ticks/s: a period of 20 ms
    const auto period = std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(1.0 / config.tick_rate));
    test_server server{config};
    struct sample {
        std::uint64_t tick;
        clock_type::time_point start;
        clock_type::time_point end;
    };
    auto samples = std::make_shared<std::vector<sample>>();  // only touched on the server thread
    auto stall_at = std::make_shared<std::optional<std::uint64_t>>();
    server.call([&](ecsnet::server::server& s) {
        s.scheduler().add("stall-once", ecsnet::ecs::component_access{},
                          [&s, samples, stall_at, period](ecsnet::ecs::SystemContext&) {
                              const auto start = clock_type::now();
                              if (stall_at->has_value() && **stall_at == s.tick()) {
                                  std::this_thread::sleep_for(40 * period);
                              }
                              samples->push_back({s.tick(), start, clock_type::now()});
                          });
        return 0;
    });
    for (int i = 0; i < 500 && server.tick() < 2; ++i) {
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_GE(server.tick(), 2U) << "ticking within 5 s";
    const std::uint64_t stalled = server.call([&](ecsnet::server::server& s) {
        *stall_at = s.tick() + 3;
        return s.tick() + 3;
    });
    const auto ran_after_stall = [&] {
        return server.call([&](ecsnet::server::server&) {
            return std::count_if(samples->begin(), samples->end(),
                                 [&](const sample& x) { return x.tick > stalled; });
        });
    };
    const auto deadline = clock_type::now() + 10s;
    while (ran_after_stall() < 15 && clock_type::now() < deadline) {
        std::this_thread::sleep_for(20ms);
    }
    const auto recorded = server.call([&](ecsnet::server::server&) { return *samples; });
    const server_stats stats = server.stats();

    // Tick numbers count the ticks that ran: consecutive, with no gap for the skipped ones.
    const auto first = std::find_if(recorded.begin(), recorded.end(),
                                    [&](const sample& x) { return x.tick == stalled; });
    ASSERT_NE(first, recorded.end());
    ASSERT_GE(recorded.end() - first, 16) << "15 ticks after the stall within 10 s";
    std::size_t back_to_back = 0;
    for (auto it = first + 1; it != first + 16; ++it) {
        EXPECT_EQ(it->tick, (it - 1)->tick + 1);
        // A tick that started less than a quarter period after the previous one ended did not
        // wait for its deadline: it was replayed to catch up.
        if (it->start - (it - 1)->end < period / 4) {
            ++back_to_back;
        }
    }
    std::cout << "[ stall of 40 periods ] " << back_to_back
              << " of the next 15 ticks ran back to back; skipped_ticks " << stats.skipped_ticks
              << "\n";
    EXPECT_LE(back_to_back, 6U) << "the catch-up is capped (5 ticks), then re-anchored";
    EXPECT_GE(stats.skipped_ticks, 30U);
}

// ---- threads ---------------------------------------------------------------------------------

// Two I/O threads and four clients, each driven by a thread of its own: sessions on both I/O
// threads read commands and write deltas while the world ticks and applies them, the hand-over
// ThreadSanitizer must see (scripts/test.sh). Every command is answered, every client mirrors
// what all of them spawned and set, and all mirrors agree at one tick.
TEST(ServerThreads, TwoIoThreadsServeClientsThatSendAndReceiveAtOnce) {
    constexpr std::size_t clients = 4;
    constexpr std::int32_t rounds = 30;
    server_config config = test_config();
    config.io_threads = 2;
    config.demo_entities = 20;
    config.checksum_interval = 5;
    test_server server{config};

    std::vector<std::unique_ptr<connection>> conns(clients);
    std::vector<std::vector<Entity>> spawned(clients);
    std::vector<std::string> failures(clients);
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            try {
                auto c = join(server.port(), "threaded-" + std::to_string(i));
                for (std::int32_t r = 0; r < rounds; ++r) {
                    c->send(protocol::ping{static_cast<std::uint64_t>(r)});
                    const protocol::command_result made = spawn(
                        *c, component_set{}
                                .set(Position{static_cast<float>(i), static_cast<float>(r)})
                                .set(Velocity{1.0F, -1.0F}));
                    if (!made.ok) {
                        failures[i] = "spawn refused: " + made.message;
                        return;
                    }
                    spawned[i].push_back(made.entity);
                    const std::uint32_t id = c->next_request_id();
                    const protocol::command_result set = c->request(
                        protocol::set_components{id, made.entity, component_set{}.set(Health{r})},
                        id);
                    if (!set.ok) {
                        failures[i] = "set refused: " + set.message;
                        return;
                    }
                }
                if (!c->last_pong().has_value()) {
                    failures[i] = "no Pong";
                    return;
                }
                conns[i] = std::move(c);
            } catch (const std::exception& e) {
                failures[i] = e.what();
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    for (std::size_t i = 0; i < clients; ++i) {
        ASSERT_EQ(failures[i], "") << "client " << i;
    }

    // Each sees every entity each spawned, with the last value set.
    std::vector<connection*> all;
    for (const auto& c : conns) {
        all.push_back(c.get());
    }
    const auto has_everything = [&](const connection& c) {
        for (const auto& mine : spawned) {
            for (std::size_t k = 0; k < mine.size(); ++k) {
                const auto health = c.mirror().get<Health>(mine[k]);
                if (!health.has_value() || health->value != static_cast<std::int32_t>(k)) {
                    return false;
                }
            }
        }
        return true;
    };
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return std::all_of(all.begin(), all.end(),
                               [&](const connection* c) { return has_everything(*c); });
        },
        10s))
        << "every client mirrors every entity spawned, with its last Health";

    // All at one tick: record each mirror at every tick from now on until all passed the tick
    // the most advanced one is at.
    std::vector<std::map<std::uint64_t, std::string>> seen(clients);
    std::uint64_t common_tick = 0;
    for (std::size_t i = 0; i < clients; ++i) {
        connection& c = *conns[i];
        seen[i][c.mirror().tick()] = dump(c.mirror());
        common_tick = std::max(common_tick, c.mirror().tick());
        c.on_message = [&c, &mine = seen[i]](const ecsnet::wire::ServerMessage& m) {
            if (m.body_type() == ecsnet::wire::ServerBody::Delta) {
                mine[c.mirror().tick()] = dump(c.mirror());
            }
        };
    }
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return std::all_of(seen.begin(), seen.end(),
                               [&](const auto& s) { return s.contains(common_tick); });
        },
        5s));
    for (std::size_t i = 0; i < clients; ++i) {
        conns[i]->on_message = nullptr;
        EXPECT_EQ(seen[i].at(common_tick), seen[0].at(common_tick))
            << "client " << i << " and client 0 at tick " << common_tick;
        SCOPED_TRACE("client " + std::to_string(i));
        expect_in_sync(*conns[i]);
        EXPECT_GT(conns[i]->mirror().statistics().checksums_matched, 0U);
        EXPECT_TRUE(conns[i]->is_open());
    }
    const server_stats stats = server.stats();
    EXPECT_EQ(stats.rate_limited, 0U);
    EXPECT_EQ(stats.invalid_frames, 0U);
    EXPECT_GT(stats.bytes_out, 0U);
    EXPECT_EQ(server.clients(), clients);
}

}  // namespace server_test

// ---- players coming and going: the game's hooks -----------------------------------------------

namespace server_test {

struct player_log {
    std::vector<std::string> events;  // "joined 3", "joined 3 resumed", "left 3": server thread
};

// Hooks that log on the server's thread and give every joining player an entity of its own,
// as a game gives a player its ship.
void log_players(test_server& server, const std::shared_ptr<player_log>& log) {
    server.call([log](ecsnet::server::server& s) {
        s.on_player_joined = [log, &s](std::uint32_t owner, bool resumed) {
            log->events.push_back("joined " + std::to_string(owner) + (resumed ? " resumed" : ""));
            if (!resumed) {
                const Entity e = s.world().create();
                s.world().emplace<Owner>(e, owner);
                s.world().emplace<Position>(e, 1.0F, 2.0F);
            }
        };
        s.on_player_left = [log](std::uint32_t owner) {
            log->events.push_back("left " + std::to_string(owner));
        };
    });
}

std::vector<std::string> events_of(test_server& server, const std::shared_ptr<player_log>& log) {
    return server.call([log](ecsnet::server::server&) { return log->events; });
}


INSTANTIATE_TEST_SUITE_P(Transports, ServerHandshake, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerReplication, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerCommands, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerSlowClient, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerBadInput, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerAdmission, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerIdentity, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerShutdown, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerResync, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerCommandResults, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerDisconnect, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerReconnectGrace, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerWorkload, every_transport, transport_name);
INSTANTIATE_TEST_SUITE_P(Transports, ServerTls, every_transport, transport_name);

TEST(ServerPlayers, AJoinIsToldOnceAtTheNextTickAndWhatTheHookSpawnsReachesThePlayer) {
    server_config config = test_config();
    config.reconnect_grace = 10s;
    test_server server{config};
    const auto log = std::make_shared<player_log>();
    log_players(server, log);

    auto alice = join(server.port(), "alice");
    const std::uint32_t owner = alice->welcome().client_id;
    const auto owned = [&] {
        std::size_t n = 0;
        alice->mirror().each([&](Entity e) {
            const auto o = alice->mirror().get<Owner>(e);
            n += o && o->client == owner ? 1 : 0;
        });
        return n;
    };
    ASSERT_TRUE(alice->poll_until([&] { return owned() == 1; }, 5s))
        << "the entity the hook spawned did not reach its player";

    // A second connection of the same player is no new player.
    connect_options options;
    options.port = server.port();
    options.resume_key = alice->welcome().resume_key;
    auto second = std::make_unique<connection>(options);
    ASSERT_EQ(second->welcome().client_id, owner);
    second->poll_for(100ms);
    EXPECT_EQ(events_of(server, log), std::vector<std::string>{"joined " + std::to_string(owner)});

    // Left once, when the last connection goes; back within the grace, resumed, entity kept.
    alice.reset();
    second->poll_for(100ms);
    EXPECT_EQ(events_of(server, log).size(), 1U) << "one connection is still there";
    second.reset();
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (events_of(server, log).size() < 2 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);
    }
    auto again = std::make_unique<connection>(options);
    again->poll_for(100ms);
    const std::string id = std::to_string(owner);
    EXPECT_EQ(events_of(server, log),
              (std::vector<std::string>{"joined " + id, "left " + id, "joined " + id + " resumed"}));
    std::size_t mine = 0;
    again->mirror().each([&](Entity e) {
        const auto o = again->mirror().get<Owner>(e);
        mine += o && o->client == owner ? 1 : 0;
    });
    EXPECT_EQ(mine, 1U) << "a resumed player keeps its entity, and the hook made no second one";
}

TEST(ServerPlayers, AHookThatThrowsIsCountedAndTheTicksGoOn) {
    test_server server{test_config()};
    server.call([](ecsnet::server::server& s) {
        s.on_player_joined = [](std::uint32_t, bool) { throw std::runtime_error("no ship left"); };
    });
    const auto failures_before = server.stats().system_failures;
    auto alice = join(server.port(), "alice");
    const std::uint64_t tick = server.tick();
    const Entity e = spawn_ok(*alice, component_set{}.set(Position{}));
    EXPECT_TRUE(alice->poll_until([&] { return alice->mirror().contains(e); }, 5s));
    EXPECT_GT(server.tick(), tick);
    EXPECT_EQ(server.stats().system_failures, failures_before + 1);
}

}  // namespace server_test
