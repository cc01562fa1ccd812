// Observers (docs/SERVER.md, "Observers"): the web inspector's privileged WebSocket session,
// admitted by the admin endpoint's GET /observe, over real sockets in this process. Every wait
// is bounded in count and time; nothing here measures speed.
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/config.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "http_get.hpp"
#include "client_polling.hpp"
#include "test_server.hpp"
#include "test_support.hpp"

namespace ecsnet::test {

// A value only its owner receives, and a player input: shaped like the demo's Velocity.
struct Secret {
    float x{};
    float y{};
    friend bool operator==(const Secret&, const Secret&) = default;
};
struct Stick {
    float x{};
    float y{};
    friend bool operator==(const Stick&, const Stick&) = default;
};

}  // namespace ecsnet::test

template <>
struct ecsnet::protocol::replicated<ecsnet::test::Secret>
    : replicate<ecsnet::demo::wire::Velocity, "secret", replicate_options{.owner_only = true}> {};
template <>
struct ecsnet::protocol::replicated<ecsnet::test::Stick>
    : replicate<ecsnet::demo::wire::Velocity, "stick", replicate_options{.input = true}> {};

namespace observer_test {

namespace asio = boost::asio;
namespace protocol = ecsnet::protocol;
using ecsnet::client::client_error;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Health;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::test::held;
using ecsnet::test::http_exchange;
using ecsnet::test::poll_all_until;
using ecsnet::test::Secret;
using ecsnet::test::Stick;
using ecsnet::test::websocket_upgrade_request;
using ecsnet::test::http_get;
using ecsnet::test::test_server;
using ecsnet::wire::ErrorCode;
using testing::HasSubstr;
using testing::StartsWith;
using namespace std::chrono_literals;

// What the game heard of players, on the world thread (read through test_server::call).
struct player_log {
    int joined{0};
    int left{0};
};

// Positions on a grid (under interest management when the config has a radius), a secret,
// an input type, and the player hooks counted.
ecsnet::server::game observed_game(std::shared_ptr<player_log> log) {
    ecsnet::server::game g;
    g.name = "observed";
    g.register_components = [](protocol::component_registry& types) {
        types.add<Position>();
        types.add<Health>();
        types.add<Secret>();
        types.add<Stick>();
    };
    g.setup = [log](ecsnet::server::server& s) {
        if (s.config().interest_radius > 0.0F) {
            s.interest().use_grid<Position>(
                25.0F, [](const Position& p) { return ecsnet::server::point{p.x, p.y}; });
        }
        s.on_player_joined = [log](std::uint32_t, bool) { ++log->joined; };
        s.on_player_left = [log](std::uint32_t) { ++log->left; };
    };
    return g;
}

server_config observer_config() {
    server_config c = ecsnet::test::local_server_config(50.0);
    c.reconnect_grace = 0ms;
    c.checksum_interval = 5;
    c.interest_radius = 50.0F;
    c.client_budget = 0.0;
    return c;
}

// The server with the admin endpoint, as ecsnet-server runs them.
struct observed_server {
    explicit observed_server(server_config config, ecsnet::server::admin_options admin = {})
        : log{std::make_shared<player_log>()}, server{std::move(config), observed_game(log)} {
        admin_port = server.start_admin(std::move(admin));
    }
    player_log players() {
        return server.call([log = log](ecsnet::server::server&) { return *log; });
    }
    std::shared_ptr<player_log> log;
    test_server server;
    std::uint16_t admin_port{0};
};

connect_options player_options(std::uint16_t port, const std::string& name) {
    connect_options o;
    o.port = port;
    o.name = name;
    o.timeout = 10s;
    return o;
}

connect_options observer_options(std::uint16_t admin_port, const std::string& query = "") {
    connect_options o = player_options(admin_port, "inspector");
    o.websocket = true;
    o.ws_path = "/observe" + query;
    return o;
}

std::unique_ptr<connection> join(const connect_options& o) { return std::make_unique<connection>(o); }

std::string refusal_of(const connect_options& o) {
    try {
        (void)join(o);
    } catch (const client_error& e) {
        return e.what();
    }
    return "admitted";
}

Entity spawn(connection& c, protocol::component_set values, ErrorCode expected = ErrorCode::None) {
    const std::uint32_t id = c.next_request_id();
    const auto result = c.request(protocol::spawn{id, std::move(values)}, id);
    EXPECT_EQ(result.code, expected) << result.message;
    return result.entity;
}



nlohmann::json json_of(std::uint16_t admin_port, const std::string& path) {
    const auto reply = http_get(admin_port, path);
    EXPECT_EQ(reply.status, 200U) << path << ": " << reply.error << reply.body;
    return reply.status == 200 ? nlohmann::json::parse(reply.body) : nlohmann::json{};
}

// ---- admission ------------------------------------------------------------------------------

TEST(ObserverAdmission, TheTokenIsRequiredWhenSetAndCompared) {
    server_config config = observer_config();
    config.inspector_token = "s3cret+token";
    observed_server s{config};
    const auto port = s.admin_port;
    EXPECT_THAT(http_exchange(port, websocket_upgrade_request(port, "/observe")), StartsWith("HTTP/1.1 401"));
    EXPECT_THAT(http_exchange(port, websocket_upgrade_request(port, "/observe?token=s3cret")),
                StartsWith("HTTP/1.1 401"));
    EXPECT_THAT(refusal_of(observer_options(port)), HasSubstr("401"));
    // Percent-encoded, as the inspector sends it (encodeURIComponent).
    auto observer = join(observer_options(port, "?token=s3cret%2Btoken"));
    EXPECT_EQ(observer->welcome().client_id, 0U);
    EXPECT_EQ(s.server.call([](ecsnet::server::server& x) { return x.observers(); }), 1U);
    // /clients too; the probes stay open.
    EXPECT_EQ(http_get(port, "/clients").status, 401U);
    EXPECT_EQ(http_get(port, "/clients?token=s3cret%2Btoken").status, 200U);
    EXPECT_EQ(http_get(port, "/status").status, 200U);
    EXPECT_EQ(http_get(port, "/healthz").status, 200U);
}

TEST(ObserverAdmission, OriginsFollowTheSameHostRuleAndAPlainGetIs426) {
    observed_server s{observer_config()};
    const auto port = s.admin_port;
    const std::string refused = http_exchange(
        port, websocket_upgrade_request(port, "/observe", "Origin: https://evil.example.com\r\n"));
    EXPECT_THAT(refused, StartsWith("HTTP/1.1 403"));
    EXPECT_THAT(refused, HasSubstr("--admin-allowed-origins"));
    EXPECT_THAT(http_exchange(port, websocket_upgrade_request(port, "/observe",
                                                    "Origin: http://127.0.0.1:" +
                                                        std::to_string(port) + "\r\n")),
                StartsWith("HTTP/1.1 101"))
        << "the inspector's own page (same host and port) may";
    EXPECT_THAT(http_exchange(port, "GET /observe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
                StartsWith("HTTP/1.1 426"));
    EXPECT_EQ(http_get(port, "/healthz").status, 200U) << "the endpoint goes on";
}

// An upgrade of /observe with this Host and Origin (each left out when empty).
std::string observe_as(std::uint16_t port, const std::string& host, const std::string& origin,
                       const std::string& query = "") {
    return http_exchange(port, "GET /observe" + query + " HTTP/1.1\r\n" +
                                   (host.empty() ? "" : "Host: " + host + "\r\n") +
                                   "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                   "Sec-WebSocket-Version: 13\r\n" +
                                   (origin.empty() ? "" : "Origin: " + origin + "\r\n") + "\r\n");
}

TEST(ObserverAdmission, ARebindingPagesHostNameIsRefusedItsOwnOriginNotWithstanding) {
    observed_server s{observer_config()};
    const auto port = s.admin_port;
    const std::string p = std::to_string(port);
    // evil.example resolves to 127.0.0.1 now: its page's Origin equals its Host.
    const std::string refused = observe_as(port, "evil.example:" + p, "http://evil.example:" + p);
    EXPECT_THAT(refused, StartsWith("HTTP/1.1 403"));
    EXPECT_THAT(refused, HasSubstr("--admin-allowed-hosts"));
    EXPECT_THAT(http_exchange(port, "GET /clients HTTP/1.1\r\nHost: evil.example:" + p + "\r\n\r\n"),
                StartsWith("HTTP/1.1 403"));
    EXPECT_EQ(s.server.call([](ecsnet::server::server& x) { return x.observers(); }), 0U);
    // The inspector's page on localhost or an address (kubectl port-forward, an SSH tunnel).
    EXPECT_THAT(observe_as(port, "localhost:" + p, "http://localhost:" + p), StartsWith("HTTP/1.1 101"));
    EXPECT_THAT(observe_as(port, "127.0.0.1:" + p, "http://127.0.0.1:" + p), StartsWith("HTTP/1.1 101"));
    EXPECT_THAT(observe_as(port, "localhost", ""), StartsWith("HTTP/1.1 101")) << "no Origin: no browser";
}

TEST(ObserverAdmission, AdminAllowedHostsAddsANameForTheInspector) {
    const std::string name = "admin.example.internal";
    {
        observed_server s{observer_config()};
        EXPECT_THAT(observe_as(s.admin_port, name, ""), StartsWith("HTTP/1.1 403"))
            << "not listed";
    }
    ecsnet::server::admin_options options;
    options.allowed_hosts = {name};
    observed_server s{observer_config(), options};
    const std::string p = std::to_string(s.admin_port);
    EXPECT_THAT(observe_as(s.admin_port, name + ":" + p, "http://" + name + ":" + p),
                StartsWith("HTTP/1.1 101"));
    EXPECT_THAT(observe_as(s.admin_port, "evil.example:" + p, "http://evil.example:" + p),
                StartsWith("HTTP/1.1 403"));
}

TEST(ObserverAdmission, TheGamePortsAllowedOriginsDoNotOpenObserve) {
    server_config config = observer_config();
    config.ws_port = 0;
    config.ws_allowed_origins = {"*"};
    {
        observed_server s{config};
        const auto port = s.admin_port;
        const std::string refused =
            observe_as(port, "127.0.0.1:" + std::to_string(port), "https://evil.example");
        EXPECT_THAT(refused, StartsWith("HTTP/1.1 403"));
        EXPECT_THAT(refused, HasSubstr("--admin-allowed-origins"));
    }
    // The admin endpoint's own list does.
    ecsnet::server::admin_options options;
    options.allowed_origins = {"https://ops.example.com"};
    observed_server s{config, options};
    const auto listed = s.admin_port;
    const std::string listed_host = "127.0.0.1:" + std::to_string(listed);
    EXPECT_THAT(observe_as(listed, listed_host, "https://ops.example.com"), StartsWith("HTTP/1.1 101"));
    EXPECT_THAT(observe_as(listed, listed_host, "https://evil.example"), StartsWith("HTTP/1.1 403"));
}

TEST(ObserverAdmission, OffLoopbackObserversAndClientsNeedTheToken) {
    ecsnet::server::admin_options wildcard;
    wildcard.bind = "0.0.0.0";  // reached through 127.0.0.1 below
    {
        observed_server s{observer_config(), wildcard};
        const auto port = s.admin_port;
        const std::string host = "127.0.0.1:" + std::to_string(port);
        const std::string refused = observe_as(port, host, "");
        EXPECT_THAT(refused, StartsWith("HTTP/1.1 403"));
        EXPECT_THAT(refused, HasSubstr("--inspector-token"));
        EXPECT_THAT(refusal_of(observer_options(port)), HasSubstr("403"));
        EXPECT_EQ(http_get(port, "/clients").status, 403U);
        EXPECT_EQ(http_get(port, "/healthz").status, 200U);
        EXPECT_EQ(http_get(port, "/status").status, 200U);
    }
    server_config config = observer_config();
    config.inspector_token = "s3cret";
    observed_server s{config, wildcard};
    const auto port = s.admin_port;
    EXPECT_THAT(observe_as(port, "127.0.0.1:" + std::to_string(port), ""), StartsWith("HTTP/1.1 401"));
    auto observer = join(observer_options(port, "?token=s3cret"));
    EXPECT_EQ(observer->welcome().client_id, 0U);
    EXPECT_EQ(http_get(port, "/clients?token=s3cret").status, 200U);
}

TEST(ObserverAdmission, PastMaxObserversTheNextIsDisconnected) {
    server_config config = observer_config();
    config.max_observers = 1;
    observed_server s{config};
    auto first = join(observer_options(s.admin_port));
    EXPECT_THAT(refusal_of(observer_options(s.admin_port)), HasSubstr("too many observers (1)"));
    first.reset();
    // Its slot comes back once the server has seen it go.
    std::string outcome;
    for (int i = 0; i < 50 && outcome != "admitted"; ++i) {
        outcome = refusal_of(observer_options(s.admin_port));
        if (outcome != "admitted") {
            std::this_thread::sleep_for(20ms);
        }
    }
    EXPECT_EQ(outcome, "admitted");
}

// ---- what an observer is ------------------------------------------------------------------

TEST(Observer, SeesTheWholeWorldUnderInterestWhileAPlayersViewIsPartial) {
    observed_server s{observer_config()};
    // The server's own entities, far apart: a player focused on one sees that one.
    const std::vector<Entity> placed = s.server.call([](ecsnet::server::server& x) {
        std::vector<Entity> out;
        for (const Position p : {Position{0, 0}, Position{400, 400}, Position{-400, 300}}) {
            const Entity e = x.world().create();
            x.world().emplace<Position>(e, p);
            out.push_back(e);
        }
        return out;
    });
    // Made outside a tick: their spawn goes out with the next one, which must come before a
    // snapshot (a snapshot taken now would hold them, and the delta spawn them again).
    const std::uint64_t made_at = s.server.tick();
    for (int i = 0; i < 250 && s.server.tick() <= made_at; ++i) {
        std::this_thread::sleep_for(2ms);
    }
    ASSERT_GT(s.server.tick(), made_at);
    auto alice = join(player_options(s.server.port(), "alice"));
    EXPECT_EQ(alice->welcome().interest_radius, 50.0F);
    alice->send(protocol::focus{0.0F, 0.0F});
    auto observer = join(observer_options(s.admin_port));
    EXPECT_EQ(observer->welcome().interest_radius, 0.0F) << "it gets the whole world";
    EXPECT_EQ(observer->welcome().client_budget, 0U) << "and no budget";
    const std::set<Entity> everything(placed.begin(), placed.end());
    EXPECT_TRUE(poll_all_until({alice.get(), observer.get()}, [&] {
        return held(alice->mirror()) == std::set<Entity>{placed[0]} &&
               held(observer->mirror()) == everything;
    }, 5s)) << "alice holds " << held(alice->mirror()).size() << ", the observer "
            << held(observer->mirror()).size();

    // What alice makes far from her focus: hers, so she holds it; the observer sees it too.
    const Entity far = spawn(*alice, protocol::component_set{}.set(Position{800, -800}));
    EXPECT_TRUE(poll_all_until({alice.get(), observer.get()},
                               [&] { return observer->mirror().contains(far); }, 5s));
    const auto moved = s.server.call([e = placed[1]](ecsnet::server::server& x) {
        x.world().replace<Position>(e, Position{410, 400});
        return true;
    });
    EXPECT_TRUE(moved);
    EXPECT_TRUE(poll_all_until({observer.get()}, [&] {
        const auto p = observer->mirror().get<Position>(placed[1]);
        return p.has_value() && p->x == 410.0F;
    }, 5s)) << "it follows changes everywhere";
    EXPECT_FALSE(alice->mirror().contains(placed[1]));
    ASSERT_TRUE(observer->poll_until([&] { return observer->last_checksum().has_value(); }, 5s));
    EXPECT_TRUE(observer->is_open()) << observer->closed_reason().value_or("");
    EXPECT_EQ(s.server.stats().resyncs, 0U) << "its checksums agree";
}

TEST(Observer, TakesNoPlayerSlotAndTheGameDoesNotHearOfIt) {
    server_config config = observer_config();
    config.max_clients = 1;
    observed_server s{config};
    auto observer = join(observer_options(s.admin_port));
    EXPECT_EQ(http_get(s.admin_port, "/readyz").status, 200U) << "an observer fills no slot";
    EXPECT_EQ(s.server.clients(), 0U);
    auto alice = join(player_options(s.server.port(), "alice"));
    EXPECT_EQ(s.server.clients(), 1U);
    const auto readyz = http_get(s.admin_port, "/readyz");
    EXPECT_EQ(readyz.status, 503U);
    EXPECT_THAT(readyz.body, HasSubstr("full, 1/1"));
    const auto status = json_of(s.admin_port, "/status");
    EXPECT_EQ(status.value("clients", -1), 1);
    EXPECT_EQ(status.value("observers", -1), 1);

    // Both were admitted, yet the game heard of one player; nor of the observer leaving.
    observer.reset();
    alice.reset();
    bool settled = false;
    for (int i = 0; i < 100 && !settled; ++i) {
        settled = s.server.call([](ecsnet::server::server& x) {
            return x.clients() == 0 && x.observers() == 0;
        }) && s.players().left == 1;
        std::this_thread::sleep_for(20ms);
    }
    EXPECT_TRUE(settled);
    EXPECT_EQ(s.players().joined, 1);
    EXPECT_EQ(s.players().left, 1);
}

TEST(Observer, IsReadOnlyByDefaultAndSendsNoInput) {
    observed_server s{observer_config()};
    auto alice = join(player_options(s.server.port(), "alice"));
    const Entity ship = spawn(*alice, protocol::component_set{}.set(Position{1, 2}));
    auto observer = join(observer_options(s.admin_port));
    EXPECT_EQ(observer->welcome().client_id, 0U);
    EXPECT_TRUE(observer->welcome().resume_key.empty()) << "no owner to resume";

    const std::uint32_t id = observer->next_request_id();
    const auto refused =
        observer->request(protocol::spawn{id, protocol::component_set{}.set(Position{5, 5})}, id);
    EXPECT_FALSE(refused.ok);
    EXPECT_EQ(refused.code, ErrorCode::ReadOnly);
    EXPECT_EQ(refused.message, "the inspector is read-only (start the server with --inspector-writes)");
    EXPECT_STREQ(protocol::to_string(refused.code), "ReadOnly") << "the C++ client names it";
    const std::uint32_t id2 = observer->next_request_id();
    EXPECT_EQ(observer->request(protocol::destroy{id2, ship}, id2).code, ErrorCode::ReadOnly);
    ASSERT_TRUE(observer->poll_until([&] { return observer->mirror().contains(ship); }, 5s));

    // Input, even for an entity it could name: refused like a bad owner's.
    protocol::input input{ship, s.server.tick() + 2, {}};
    input.ticks.push_back(protocol::component_set{}.set(Stick{1, 0}));
    observer->send(input);
    ASSERT_TRUE(observer->poll_until([&] { return observer->last_input_rejected().has_value(); }, 5s));
    EXPECT_EQ(observer->last_input_rejected()->code, ErrorCode::NotOwner);
    EXPECT_THAT(observer->last_input_rejected()->message, HasSubstr("observer"));
    EXPECT_TRUE(observer->is_open());
    EXPECT_EQ(s.server.call([](ecsnet::server::server& x) { return x.world().alive(); }), 1U)
        << "nothing it sent changed the world";
}

TEST(Observer, OwnerOnlyValuesStayWithTheirOwner) {
    observed_server s{observer_config()};
    auto alice = join(player_options(s.server.port(), "alice"));
    const Entity ship =
        spawn(*alice, protocol::component_set{}.set(Position{1, 2}).set(Secret{3, 4}));
    auto observer = join(observer_options(s.admin_port));
    const auto* secret_type = observer->mirror().types().find("secret");
    ASSERT_NE(secret_type, nullptr);
    const std::optional<std::uint32_t> secret_id = secret_type->id;
    ASSERT_TRUE(poll_all_until({alice.get(), observer.get()}, [&] {
        return observer->mirror().contains(ship) && alice->mirror().has(ship, *secret_id);
    }, 5s));
    EXPECT_FALSE(observer->mirror().has(ship, *secret_id)) << "in the snapshot";
    const std::uint32_t id = alice->next_request_id();
    EXPECT_TRUE(alice->request(protocol::set_components{id, ship,
                                                        protocol::component_set{}.set(Secret{5, 6})},
                               id)
                    .ok);
    ASSERT_TRUE(alice->poll_until([&] {
        const auto v = alice->mirror().get<Secret>(ship);
        return v.has_value() && v->x == 5.0F;
    }, 5s));
    observer->poll_for(200ms);
    EXPECT_FALSE(observer->mirror().has(ship, *secret_id)) << "nor in deltas";
    EXPECT_TRUE(observer->is_open());
}

TEST(Observer, WithWritesItIsAnOwnerUnderTheSameRules) {
    server_config config = observer_config();
    config.inspector_writes = true;
    observed_server s{config};
    auto alice = join(player_options(s.server.port(), "alice"));
    const Entity hers = spawn(*alice, protocol::component_set{}.set(Position{1, 2}));
    auto observer = join(observer_options(s.admin_port));
    EXPECT_NE(observer->welcome().client_id, 0U);
    EXPECT_NE(observer->welcome().client_id, alice->welcome().client_id);
    EXPECT_FALSE(observer->welcome().resume_key.empty());
    const Entity mine = spawn(*observer, protocol::component_set{}.set(Position{7, 7}));
    EXPECT_FALSE(mine.is_null());
    const std::uint32_t id = observer->next_request_id();
    const auto foreign = observer->request(protocol::destroy{id, hers}, id);
    EXPECT_EQ(foreign.code, ErrorCode::NotOwner) << foreign.message;
    const std::uint32_t id2 = observer->next_request_id();
    EXPECT_TRUE(observer->request(protocol::destroy{id2, mine}, id2).ok);
    EXPECT_EQ(s.players().joined, 1) << "an observer with an owner is still no player";
}

TEST(Observer, WithWritesUnderConnectTokensItNeedsATokenElseStaysReadOnly) {
    const std::string secret = "0123456789abcdef0123456789abcdef";
    server_config config = observer_config();
    config.inspector_writes = true;
    config.token_secret = secret;
    config.world_id = "w1";
    observed_server s{config};
    auto anonymous = join(observer_options(s.admin_port));
    EXPECT_EQ(anonymous->welcome().client_id, 0U);
    const std::uint32_t id = anonymous->next_request_id();
    EXPECT_EQ(anonymous->request(protocol::spawn{id, protocol::component_set{}.set(Position{})}, id)
                  .code,
              ErrorCode::ReadOnly);

    connect_options o = observer_options(s.admin_port);
    o.connect_token = ecsnet::server::issue_connect_token(
        {"ops", "w1", ecsnet::server::random_jti(), std::chrono::system_clock::now() + 1h,
         std::nullopt},
        ecsnet::server::token_algorithm::hs256, secret);
    auto ops = join(o);
    EXPECT_NE(ops->welcome().client_id, 0U);
    EXPECT_EQ(ops->welcome().player_id, "ops");
    spawn(*ops, protocol::component_set{}.set(Position{1, 1}));

    o.connect_token = "not.a.token";
    EXPECT_THAT(refusal_of(o), HasSubstr("refused")) << "a bad credential is refused, not ignored";
}

TEST(Observer, StopDisconnectsItLikeAnySession) {
    observed_server s{observer_config()};
    auto observer = join(observer_options(s.admin_port));
    (void)s.server.stop();
    ASSERT_TRUE(observer->poll_until([&] { return !observer->is_open(); }, 5s));
    EXPECT_EQ(observer->closed_reason(), "shutting down");
}

// ---- /clients -------------------------------------------------------------------------------

TEST(AdminClients, ListsPlayersWithTheirViewAndObserversFlagged) {
    server_config config = observer_config();
    config.client_budget = 32'000.0;
    observed_server s{config};
    auto alice = join(player_options(s.server.port(), "alice"));
    alice->send(protocol::focus{10.0F, -20.0F});
    (void)spawn(*alice, protocol::component_set{}.set(Position{10, -20}));
    auto observer = join(observer_options(s.admin_port));
    const auto alice_owner = alice->welcome().client_id;

    // Published once a second by the world thread.
    nlohmann::json list;
    const auto find = [&](bool observer_flag) -> const nlohmann::json* {
        for (const auto& c : list.at("clients")) {
            if (c.at("observer") == observer_flag) {
                return &c;
            }
        }
        return nullptr;
    };
    for (int i = 0; i < 60; ++i) {
        alice->poll_for(20ms);
        observer->poll_for(20ms);
        list = json_of(s.admin_port, "/clients");
        const auto* a = find(false);
        if (list.at("clients").size() == 2 && a != nullptr && !a->at("interest").is_null() &&
            a->at("bytes_out").get<std::uint64_t>() > 0) {
            break;
        }
    }
    ASSERT_EQ(list.at("clients").size(), 2U) << list.dump();
    EXPECT_GT(list.at("tick").get<std::uint64_t>(), 0U);
    const nlohmann::json* a = find(false);
    const nlohmann::json* o = find(true);
    ASSERT_NE(a, nullptr);
    ASSERT_NE(o, nullptr);
    EXPECT_EQ(a->at("owner"), alice_owner);
    EXPECT_EQ(a->at("name"), "alice");
    EXPECT_EQ(a->at("transport"), "TCP");
    EXPECT_THAT(a->at("address").get<std::string>(), StartsWith("127.0.0.1:"));
    EXPECT_EQ(a->at("budget_bytes_per_s"), 32'000.0);
    ASSERT_FALSE(a->at("interest").is_null()) << list.dump();
    EXPECT_EQ(a->at("interest").at("x"), 10.0);
    EXPECT_EQ(a->at("interest").at("y"), -20.0);
    EXPECT_EQ(a->at("interest").at("radius"), 50.0);
    EXPECT_GT(a->at("bytes_out").get<std::uint64_t>(), 0U);
    EXPECT_GT(a->at("bytes_in").get<std::uint64_t>(), 0U) << "Hello, Focus, Spawn";
    EXPECT_EQ(o->at("owner"), 0);
    EXPECT_EQ(o->at("name"), "inspector");
    EXPECT_EQ(o->at("transport"), "WebSocket");
    EXPECT_TRUE(o->at("interest").is_null());
    EXPECT_EQ(o->at("budget_bytes_per_s"), 0.0);
    EXPECT_EQ(o->at("view_entities"), 1) << "the whole world: alice's one entity";
    for (const char* key : {"session", "player", "joined_tick", "bytes_out_per_s", "dropped_frames",
                            "resyncs", "view_entities"}) {
        EXPECT_TRUE(a->contains(key)) << key;
        EXPECT_TRUE(o->contains(key)) << key;
    }

    const auto status = json_of(s.admin_port, "/status");
    EXPECT_EQ(status.at("interest").at("enabled"), true);
    EXPECT_EQ(status.at("interest").at("cell_size"), 25.0);
    EXPECT_EQ(status.at("interest").at("radius"), 50.0);
    EXPECT_EQ(status.at("interest").at("budget_bytes_per_tick"), 640) << "32,000 B/s at 50 Hz";
}

// ---- flags ----------------------------------------------------------------------------------

int parse_exit(std::vector<const char*> args) {
    args.insert(args.begin(), "ecsnet-server");
    return ecsnet::server::parse_command_line(static_cast<int>(args.size()), args.data())
        .exit_code.value_or(-1);
}

TEST(ObserverFlags, NeedTheAdminPortAndAreRead) {
    EXPECT_EQ(parse_exit({"--inspector-token", "x"}), 2);
    EXPECT_EQ(parse_exit({"--inspector-writes"}), 2);
    EXPECT_EQ(parse_exit({"--max-observers", "2"}), 2);
    EXPECT_EQ(parse_exit({"--admin-port", "0", "--max-observers", "2000"}), 2);
    const char* args[] = {"ecsnet-server", "--admin-port", "0", "--inspector-token", "t",
                          "--inspector-writes", "--max-observers", "7"};
    const auto parsed = ecsnet::server::parse_command_line(8, args);
    ASSERT_FALSE(parsed.exit_code.has_value());
    EXPECT_EQ(parsed.config.inspector_token, "t");
    EXPECT_TRUE(parsed.config.inspector_writes);
    EXPECT_EQ(parsed.config.max_observers, 7U);
    const char* defaults[] = {"ecsnet-server", "--admin-port", "0"};
    const auto d = ecsnet::server::parse_command_line(3, defaults);
    EXPECT_FALSE(d.config.inspector_writes);
    EXPECT_EQ(d.config.max_observers, 4U);
    EXPECT_TRUE(d.config.inspector_token.empty());
}

}  // namespace observer_test
