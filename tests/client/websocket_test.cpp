// The client library over WebSocket (connect_options::websocket: the server's --ws-port, one
// binary message per frame) against the server in this process (test_server.hpp) running the
// demo: the blocking connection beside a TCP client of the same world (their mirrors' checksums
// agree), commands and their errors, wss with the test CA, errors that name the transport; the
// SDK's session joining, commanding and reconnecting over WebSocket; and the rule "each message
// exactly one frame" against a WebSocket server of this file's own. Waits are bounded by count
// and time; nothing measures speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_server.hpp"
#include "ecsnet/client/connection.hpp"
#include "ecsnet/client/session.hpp"
#include "ecsnet/demo/components.hpp"
#include "latency_proxy.hpp"

namespace websocket_test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace protocol = ecsnet::protocol;
namespace wire = ecsnet::wire;
using asio::ip::tcp;
using ecsnet::client::client_error;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::client::session;
using ecsnet::client::session_options;
using ecsnet::client::session_state;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::test::latency_proxy;
using ecsnet::test::test_server;
using protocol::component_set;
using testing::HasSubstr;
using namespace std::chrono_literals;

constexpr std::size_t demo_entities = 200;

server_config demo_config() {
    server_config c = ecsnet::test::local_server_config(30.0);
    c.ws_port = 0;
    c.checksum_interval = 3;
    c.demo_entities = demo_entities;
    return c;
}

server_config wss_config() {
    server_config c = demo_config();
    c.tls_cert = ECSNET_TLS_DIR "/server.pem";
    c.tls_key = ECSNET_TLS_DIR "/server.key";
    return c;
}

connect_options tcp_options(std::uint16_t port, const std::string& name) {
    connect_options o;
    o.port = port;
    o.name = name;
    o.timeout = 20s;
    return o;
}

connect_options ws_options(std::uint16_t port, const std::string& name) {
    connect_options o = tcp_options(port, name);
    o.websocket = true;
    return o;
}

connect_options wss_options(std::uint16_t port, const std::string& name) {
    connect_options o = ws_options(port, name);
    o.tls = true;
    o.ca_file = ECSNET_TLS_DIR "/ca.pem";
    return o;
}

// What a connection's constructor threw.
std::string connect_error(const connect_options& options) {
    try {
        connection c{options};
    } catch (const client_error& e) {
        return e.what();
    }
    return "connected";
}

// The mirror's own checksum at each tick the server sent one for (on_message runs after the
// mirror applied the Checksum).
struct checksum_log {
    std::map<std::uint64_t, std::uint64_t> by_tick;

    void attach(connection& c) {
        c.on_message = [this, &c](const wire::ServerMessage& m) {
            if (m.body_type() == wire::ServerBody::Checksum &&
                c.mirror().tick() == m.body_as_Checksum()->tick()) {
                by_tick[m.body_as_Checksum()->tick()] = c.mirror().checksum();
            }
        };
    }
};

std::vector<std::uint64_t> common_ticks(const checksum_log& a, const checksum_log& b) {
    std::vector<std::uint64_t> ticks;
    for (const auto& entry : a.by_tick) {
        if (b.by_tick.contains(entry.first)) {
            ticks.push_back(entry.first);
        }
    }
    return ticks;
}

void expect_consistent(const connection& c, std::uint64_t min_matched) {
    const auto& stats = c.mirror().statistics();
    EXPECT_GE(stats.checksums_matched, min_matched);
    EXPECT_EQ(stats.checksums_mismatched, 0U);
    EXPECT_EQ(stats.inconsistencies, 0U) << c.mirror().error();
    EXPECT_EQ(stats.snapshots, 1U) << "no resync was needed";
    EXPECT_TRUE(c.is_open()) << c.closed_reason().value_or("");
}

// ---- the blocking connection -----------------------------------------------------------------

TEST(ConnectionOverWebSocket, FollowsTheWorldWithTheChecksumsOfATcpClient) {
    test_server s{demo_config()};
    ASSERT_NE(s.ws_port(), 0);
    connection ws{ws_options(s.ws_port(), "ws")};
    connection plain{tcp_options(s.tcp_port(), "tcp")};
    EXPECT_TRUE(ws.mirror().ready());
    EXPECT_GE(ws.mirror().size(), demo_entities) << "the snapshot";
    const std::uint64_t joined_at = ws.mirror().tick();

    checksum_log ws_sums;
    checksum_log tcp_sums;
    ws_sums.attach(ws);
    tcp_sums.attach(plain);
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (common_ticks(ws_sums, tcp_sums).size() < 3 && ws.is_open() && plain.is_open() &&
           std::chrono::steady_clock::now() < deadline) {
        ws.poll_for(20ms);
        plain.poll_for(20ms);
    }
    const auto ticks = common_ticks(ws_sums, tcp_sums);
    ASSERT_GE(ticks.size(), 3U) << "ws: " << ws.closed_reason().value_or("open")
                                << ", tcp: " << plain.closed_reason().value_or("open");
    for (const std::uint64_t tick : ticks) {
        EXPECT_EQ(ws_sums.by_tick[tick], tcp_sums.by_tick[tick]) << "tick " << tick;
    }
    EXPECT_GT(ws.mirror().tick(), joined_at) << "deltas moved the mirror on";
    expect_consistent(ws, 3);
    expect_consistent(plain, 3);
    EXPECT_GT(ws.frames_received(), 3U);
}

TEST(ConnectionOverWebSocket, CommandsAndTheirErrorsAreTheTcpOnes) {
    test_server s{demo_config()};
    connection ws{ws_options(s.ws_port(), "ws")};
    connection plain{tcp_options(s.tcp_port(), "tcp")};

    const std::uint32_t id = ws.next_request_id();
    const protocol::command_result spawned = ws.request(
        protocol::spawn{id, component_set{}.set(Position{3.0F, 4.0F}).set(Name{"from-ws"})}, id);
    ASSERT_TRUE(spawned.ok) << spawned.message;
    EXPECT_TRUE(ws.poll_until([&] { return ws.mirror().contains(spawned.entity); }, 10s));
    EXPECT_TRUE(plain.poll_until([&] { return plain.mirror().contains(spawned.entity); }, 10s))
        << "the TCP client sees what the WebSocket client spawned";
    EXPECT_EQ(plain.mirror().get<Name>(spawned.entity), Name{"from-ws"});

    const Entity missing{1'000'000, 1};
    const std::uint32_t ws_id = ws.next_request_id();
    const protocol::command_result over_ws = ws.request(protocol::destroy{ws_id, missing}, ws_id);
    const std::uint32_t tcp_id = plain.next_request_id();
    const protocol::command_result over_tcp =
        plain.request(protocol::destroy{tcp_id, missing}, tcp_id);
    EXPECT_FALSE(over_ws.ok);
    EXPECT_NE(over_ws.message, "");
    EXPECT_EQ(over_ws.code, over_tcp.code);
    EXPECT_EQ(over_ws.message, over_tcp.message);
    EXPECT_TRUE(ws.is_open()) << ws.closed_reason().value_or("");
}

TEST(ConnectionOverWebSocket, WssVerifiesTheServerWithTheTestCa) {
    test_server s{wss_config()};
    connection wss{wss_options(s.ws_port(), "wss")};
    EXPECT_GE(wss.mirror().size(), demo_entities);
    checksum_log sums;
    sums.attach(wss);
    EXPECT_TRUE(wss.poll_until([&] { return sums.by_tick.size() >= 2 || !wss.is_open(); }, 20s));
    expect_consistent(wss, 2);

    // Without the CA the certificate is not trusted; without TLS the upgrade meets a TLS server.
    connect_options untrusted = wss_options(s.ws_port(), "untrusted");
    untrusted.ca_file.clear();
    EXPECT_THAT(connect_error(untrusted),
                HasSubstr("TLS handshake with 127.0.0.1:" + std::to_string(s.ws_port()) + " failed"));
    connect_options plain_ws = ws_options(s.ws_port(), "plain");
    plain_ws.timeout = 5s;
    const std::string refused = connect_error(plain_ws);
    EXPECT_THAT(refused, HasSubstr("WebSocket upgrade at 127.0.0.1:" + std::to_string(s.ws_port())));
    EXPECT_THAT(refused, HasSubstr("if it serves wss, connect with TLS"));
}

TEST(ConnectionOverWebSocket, TheWrongPortForTheTransportIsNamed) {
    test_server s{demo_config()};
    connect_options ws_at_tcp = ws_options(s.tcp_port(), "ws-at-tcp");
    ws_at_tcp.timeout = 5s;
    const std::string upgrade = connect_error(ws_at_tcp);
    EXPECT_THAT(upgrade, HasSubstr("WebSocket upgrade at 127.0.0.1:" + std::to_string(s.tcp_port())));
    EXPECT_THAT(upgrade, HasSubstr("is it the server's WebSocket port?"));

    connect_options tcp_at_ws = tcp_options(s.ws_port(), "tcp-at-ws");
    tcp_at_ws.timeout = 5s;
    const std::string closed = connect_error(tcp_at_ws);
    EXPECT_THAT(closed, HasSubstr("server at 127.0.0.1:" + std::to_string(s.ws_port()) + " refused"));
    EXPECT_THAT(closed, HasSubstr("if it is a WebSocket port, with --ws"));
}

// ---- the rule: each message exactly one frame --------------------------------------------------

// A WebSocket server of this test's own, for what ecsnet-server never sends: after the upgrade
// it sends `messages`, then waits for the client to go. With `refusal`, it answers the upgrade
// request with that raw HTTP response instead. Serves one connection, on its own thread.
class fake_websocket_server {
public:
    struct message {
        std::vector<std::uint8_t> bytes;
        bool text = false;
    };

    explicit fake_websocket_server(std::vector<message> messages, std::string refusal = {})
        : acceptor_{io_, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}},
          port_{acceptor_.local_endpoint().port()} {
        // The client's leaving ends serve() with an exception: that is its normal end.
        asio::co_spawn(io_, serve(std::move(messages), std::move(refusal)),
                       [](const std::exception_ptr&) {});
        thread_ = std::thread([this] { io_.run_for(60s); });
    }
    fake_websocket_server(const fake_websocket_server&) = delete;
    fake_websocket_server& operator=(const fake_websocket_server&) = delete;
    ~fake_websocket_server() {
        io_.stop();
        thread_.join();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

private:
    asio::awaitable<void> serve(std::vector<message> messages, std::string refusal) {
        tcp::socket socket = co_await acceptor_.async_accept(asio::use_awaitable);
        beast::flat_buffer buffer;
        if (!refusal.empty()) {
            beast::http::request<beast::http::empty_body> request;
            co_await beast::http::async_read(socket, buffer, request, asio::use_awaitable);
            co_await asio::async_write(socket, asio::buffer(refusal), asio::use_awaitable);
            co_return;
        }
        beast::websocket::stream<tcp::socket> ws{std::move(socket)};
        co_await ws.async_accept(asio::use_awaitable);
        for (const message& m : messages) {
            ws.text(m.text);
            co_await ws.async_write(asio::buffer(m.bytes), asio::use_awaitable);
        }
        co_await ws.async_read(buffer, asio::use_awaitable);
    }

    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::uint16_t port_;
    std::thread thread_;
};

// A frame's bytes: the 4-byte little-endian length, then `body`.
std::vector<std::uint8_t> frame_of(const std::string& body, std::uint32_t announced) {
    // Sized first: g++ 12 -O3 warns (array-bounds) on an insert after a 4-byte initializer.
    std::vector<std::uint8_t> bytes(4 + body.size());
    for (std::size_t i = 0; i < 4; ++i) {
        bytes[i] = static_cast<std::uint8_t>(announced >> (8U * i));
    }
    std::copy(body.begin(), body.end(), bytes.begin() + 4);
    return bytes;
}
std::vector<std::uint8_t> frame_of(const std::string& body) {
    return frame_of(body, static_cast<std::uint32_t>(body.size()));
}

struct ending {
    std::string reason;
    std::uint64_t bytes_received{0};
};

// How a connection to the fake server ended, once it did.
ending end_at(const fake_websocket_server& fake) {
    connect_options o = ws_options(fake.port(), "to-fake");
    o.join = false;  // no Hello: the fake speaks no protocol
    o.timeout = 5s;
    connection c{o};
    EXPECT_TRUE(c.poll_until([&] { return !c.is_open(); }, 5s));
    return {c.closed_reason().value_or("still open"), c.bytes_received()};
}
std::string closed_reason_at(const fake_websocket_server& fake) { return end_at(fake).reason; }

TEST(WebSocketFraming, AMessageHoldingTwoFramesEndsTheConnection) {
    std::vector<std::uint8_t> two = frame_of("abcd");
    const auto second = frame_of("efgh");
    two.insert(two.end(), second.begin(), second.end());
    const fake_websocket_server fake{{{two}}};
    EXPECT_EQ(closed_reason_at(fake), "server sent a WebSocket message holding more than one frame");
}

TEST(WebSocketFraming, AMessageEndingInsideItsFrameEndsTheConnection) {
    const fake_websocket_server fake{{{frame_of("only ten b", 100)}}};
    EXPECT_EQ(closed_reason_at(fake), "server sent a WebSocket message that ends inside a frame");
}

TEST(WebSocketFraming, ATextMessageEndsTheConnection) {
    const fake_websocket_server fake{{{frame_of("abcd"), true}}};
    EXPECT_EQ(closed_reason_at(fake),
              "server sent a WebSocket text message (frames are binary messages)");
}

// The control: a message of one frame passes the framing, read in pieces, and reaches the
// protocol, which refuses these bytes as a frame (they are no FlatBuffer). Bytes count the
// message's header: 10 bytes for a payload past 65535.
TEST(WebSocketFraming, OneFramePerMessageReachesTheFrameVerifier) {
    const std::string body(70'000, 'x');
    const fake_websocket_server fake{{{frame_of(body)}}};
    const ending end = end_at(fake);
    EXPECT_THAT(end.reason, HasSubstr("malformed frame from the server"));
    EXPECT_EQ(end.bytes_received, protocol::frame_prefix_bytes + body.size() + 10);
}

TEST(WebSocketFraming, ARefusedUpgradeGivesTheServersAnswer) {
    const std::string body = "ecsnet: this Origin is not allowed\n";
    const fake_websocket_server fake{
        {},
        "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: " +
            std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body};
    connect_options o = ws_options(fake.port(), "refused");
    o.timeout = 5s;
    EXPECT_EQ(connect_error(o), "WebSocket upgrade at 127.0.0.1:" + std::to_string(fake.port()) +
                                    " refused: HTTP 403 Forbidden: ecsnet: this Origin is not "
                                    "allowed");
}

// ---- the game SDK's session ------------------------------------------------------------------

// A session and what its events reported; the frame loop pumps update().
struct player {
    explicit player(session_options options) : s{std::move(options)} {
        auto& on = s.events();
        on.joined = [this](const protocol::welcome&) { log.emplace_back("joined"); };
        on.reconnected = [this](const protocol::welcome&) { log.emplace_back("reconnected"); };
        on.disconnected = [this](const std::string& reason, bool will_reconnect) {
            log.push_back("disconnected: " + reason + (will_reconnect ? " (will reconnect)" : ""));
        };
        on.command_result = [this](const protocol::command_result& r) { results[r.request_id] = r; };
    }

    bool pump_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 15s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!pred() && std::chrono::steady_clock::now() < deadline) {
            s.update();
            std::this_thread::sleep_for(5ms);
        }
        return pred();
    }
    bool logged(const std::string& line) const {
        return std::find(log.begin(), log.end(), line) != log.end();
    }

    session s;
    std::vector<std::string> log;
    std::map<std::uint32_t, protocol::command_result> results;
};

session_options session_over(const connect_options& connect, bool network_thread) {
    session_options o;
    o.connect = connect;
    o.network_thread = network_thread;
    return o;
}

class SessionOverWebSocket : public testing::TestWithParam<bool> {};

TEST_P(SessionOverWebSocket, JoinsCommandsAndReconnectsWithItsResumeKey) {
    test_server s{demo_config()};
    // A relay to drop the connection as a network would.
    latency_proxy proxy{{.target_port = s.ws_port(), .latency = 0ms}};
    player p{session_over(ws_options(proxy.port(), "ws-session"), GetParam())};
    ASSERT_TRUE(p.pump_until([&] { return p.s.state() != session_state::connecting; }))
        << "no Welcome and snapshot";
    ASSERT_EQ(p.s.state(), session_state::joined) << p.s.closed_reason();
    EXPECT_GE(p.s.mirror().size(), demo_entities);

    const std::uint32_t id = p.s.next_request_id();
    ASSERT_TRUE(p.s.send(
        protocol::spawn{id, component_set{}.set(Position{1.0F, 2.0F}).set(Name{"ws-session"})}));
    ASSERT_TRUE(p.pump_until([&] { return p.results.contains(id); })) << "no CommandResult";
    ASSERT_TRUE(p.results[id].ok) << p.results[id].message;
    const Entity spawned = p.results[id].entity;
    EXPECT_TRUE(p.pump_until([&] { return p.s.mirror().contains(spawned); }));
    const auto matched = p.s.mirror().statistics().checksums_matched;
    EXPECT_TRUE(p.pump_until([&] { return p.s.mirror().statistics().checksums_matched >= matched + 2; }));

    proxy.drop();
    ASSERT_TRUE(p.pump_until([&] { return p.logged("reconnected"); }))
        << "state " << ecsnet::client::to_string(p.s.state()) << ": " << p.s.closed_reason();
    EXPECT_EQ(p.s.state(), session_state::joined);
    EXPECT_EQ(p.s.stats().reconnects, 1U);
    EXPECT_TRUE(p.s.mirror().contains(spawned)) << "the player's entity outlived the drop";
    const auto resumed = p.s.mirror().statistics().checksums_matched;
    EXPECT_TRUE(p.pump_until([&] { return p.s.mirror().statistics().checksums_matched >= resumed + 2; }));
    EXPECT_EQ(p.s.mirror().statistics().checksums_mismatched, 0U);
    EXPECT_EQ(p.s.mirror().statistics().inconsistencies, 0U) << p.s.mirror().error();
    EXPECT_GT(p.s.stats().bytes_received, 0U);
}

TEST_P(SessionOverWebSocket, JoinsOverWss) {
    test_server s{wss_config()};
    player p{session_over(wss_options(s.ws_port(), "wss-session"), GetParam())};
    ASSERT_TRUE(p.pump_until([&] { return p.s.state() != session_state::connecting; }));
    ASSERT_EQ(p.s.state(), session_state::joined) << p.s.closed_reason();
    EXPECT_GE(p.s.mirror().size(), demo_entities);
    const auto matched = p.s.mirror().statistics().checksums_matched;
    EXPECT_TRUE(p.pump_until([&] { return p.s.mirror().statistics().checksums_matched >= matched + 2; }));
    EXPECT_EQ(p.s.mirror().statistics().checksums_mismatched, 0U);
}

TEST_P(SessionOverWebSocket, AnUpgradeAtTheTcpPortClosesWithTheReason) {
    test_server s{demo_config()};
    connect_options at_tcp = ws_options(s.tcp_port(), "ws-at-tcp");
    at_tcp.timeout = 5s;
    player p{session_over(at_tcp, GetParam())};
    ASSERT_TRUE(p.pump_until([&] { return p.s.state() == session_state::closed; }));
    EXPECT_THAT(p.s.closed_reason(),
                HasSubstr("WebSocket upgrade at 127.0.0.1:" + std::to_string(s.tcp_port())));
    EXPECT_FALSE(p.logged("joined"));
}

INSTANTIATE_TEST_SUITE_P(Threads, SessionOverWebSocket, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                             return info.param ? "NetworkThread" : "GameThread";
                         });

}  // namespace websocket_test
