// The game-client SDK's session against a real server in this process (test_server.hpp) that
// runs a game of this test's own: two drifters whose interpolated Glide.x is the tick number,
// a ship (Glide) for every player that joins, the input type Stick, and a log of the Stick each
// entity had when the systems ran, per tick. Most tests run twice: sockets inside update() and
// on the session's network thread. Waits are bounded by count and time; nothing measures speed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test_server.hpp"
#include "ecsnet/client/session.hpp"
#include "ecsnet/protocol/components.hpp"
#include "test_types.hpp"

namespace session_test {

namespace asio = boost::asio;
namespace protocol = ecsnet::protocol;
using asio::ip::tcp;
using ecsnet::client::client_error;
using ecsnet::client::session;
using ecsnet::client::session_options;
using ecsnet::client::session_state;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::test::test_server;
using ecsnet::testing::Glide;
using ecsnet::testing::Stick;
using testing::HasSubstr;
using namespace std::chrono_literals;

// ---- the game ----------------------------------------------------------------------------------

// Server thread only; tests read it through test_server::call().
struct world_log {
    std::vector<Entity> drifters;
    std::map<std::uint64_t, std::map<Entity, Stick>> seen;  // tick -> entity -> its Stick
};

ecsnet::server::game session_game(const std::shared_ptr<world_log>& log) {
    ecsnet::server::game g;
    g.name = "session-test";
    g.register_components = [](protocol::component_registry& types) {
        types.add<Glide>();
        types.add<Stick>();
    };
    g.setup = [log](ecsnet::server::server& s) {
        for (int i = 0; i < 2; ++i) {
            const Entity e = s.world().create();
            s.world().emplace<Glide>(e, Glide{0.0F, static_cast<float>(i), 0, false});
            log->drifters.push_back(e);
        }
        s.scheduler().add("drift", ecsnet::ecs::component_access{}.writes<Glide>(),
                          [log, &s](ecsnet::ecs::SystemContext& ctx) {
                              for (const Entity d : log->drifters) {
                                  if (ctx.world.valid(d)) {
                                      ctx.world.patch<Glide>(d, [&](Glide& glide) {
                                          glide.x = static_cast<float>(s.tick());
                                      });
                                  }
                              }
                          });
        s.scheduler().add("record", ecsnet::ecs::component_access{}.reads<Stick>(),
                          [log, &s](ecsnet::ecs::SystemContext& ctx) {
                              ctx.world.view<const Stick>().each([&](Entity e, const Stick& stick) {
                                  log->seen[s.tick()][e] = stick;
                              });
                          });
        s.on_player_joined = [&s](std::uint32_t owner, bool resumed) {
            if (!resumed) {
                const Entity ship = s.world().create();
                s.world().emplace<protocol::Owner>(ship, owner);
                s.world().emplace<Glide>(ship, Glide{});
            }
        };
    };
    return g;
}

server_config config() {
    server_config c = ecsnet::test::local_server_config(30.0);
    return c;
}

std::string name(Entity e) { return ecsnet::ecs::to_string(e); }

// ---- a player: a session, what its events reported, and a frame loop -------------------------

struct player {
    explicit player(session_options options) : s{std::move(options)} { attach(); }

    void note(std::string line) {
        if (!inside_update) {
            ++outside_update;
        }
        if (std::this_thread::get_id() != game_thread) {
            ++other_thread;
        }
        log.push_back(std::move(line));
    }

    void attach() {
        auto& on = s.events();
        on.joined = [this](const protocol::welcome& w) { note("joined " + std::to_string(w.client_id)); };
        on.reconnected = [this](const protocol::welcome& w) {
            note("reconnected " + std::to_string(w.client_id));
        };
        on.disconnected = [this](const std::string& reason, bool will_reconnect) {
            note("disconnected " + reason + (will_reconnect ? " (will reconnect)" : " (final)"));
        };
        on.spawned = [this](Entity e) { note("spawned " + name(e)); };
        on.entered = [this](Entity e) { note("entered " + name(e)); };
        on.updated = [this](Entity e, std::uint32_t type) {
            note("updated " + name(e) + " " + std::to_string(type));
        };
        on.left = [this](Entity e) { note("left " + name(e)); };
        on.destroyed = [this](Entity e) { note("destroyed " + name(e)); };
        on.removed = [this](Entity e, std::uint32_t type) {
            note("removed " + name(e) + " " + std::to_string(type));
        };
        on.input_rejected = [this](const protocol::input_rejected& r) {
            note("input_rejected " + r.message);
        };
        on.command_result = [this](const protocol::command_result& r) {
            results[r.request_id] = r;
            note("result " + std::to_string(r.request_id));
        };
    }

    void update() {
        inside_update = true;
        struct leave {
            bool& flag;
            ~leave() { flag = false; }
        } guard{inside_update};
        s.update();
        ++updates;
    }

    // Frames until pred() holds or `timeout` passed.
    bool pump_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout = 15s) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (!pred()) {
            if (std::chrono::steady_clock::now() > deadline) {
                return pred();
            }
            update();
            std::this_thread::sleep_for(5ms);
        }
        return true;
    }
    void pump_for(std::chrono::milliseconds duration) {
        (void)pump_until([] { return false; }, duration);
    }
    bool join() {
        return pump_until([&] { return s.state() == session_state::joined; });
    }

    [[nodiscard]] std::size_t count(const std::string& prefix) const {
        return static_cast<std::size_t>(std::count_if(log.begin(), log.end(), [&](const std::string& l) {
            return l.starts_with(prefix);
        }));
    }
    // Position in the log of the first line starting with `prefix`, or -1.
    [[nodiscard]] std::ptrdiff_t index_of(const std::string& prefix) const {
        const auto it = std::find_if(log.begin(), log.end(),
                                     [&](const std::string& l) { return l.starts_with(prefix); });
        return it == log.end() ? -1 : it - log.begin();
    }

    // The ship the game gave this player when it joined.
    Entity own_ship() {
        Entity ship{};
        const auto found = [&] {
            s.mirror().each([&](Entity e) {
                const auto owner = s.mirror().get<protocol::Owner>(e);
                if (owner && owner->client == s.client_id() && s.mirror().get<Glide>(e)) {
                    ship = e;
                }
            });
            return !ship.is_null();
        };
        EXPECT_TRUE(pump_until(found)) << "no ship for client " << s.client_id();
        return ship;
    }

    session s;
    std::vector<std::string> log;
    std::map<std::uint32_t, protocol::command_result> results;
    std::thread::id game_thread = std::this_thread::get_id();
    bool inside_update = false;
    int outside_update = 0;  // events fired outside update()
    int other_thread = 0;    // ... or on another thread
    int updates = 0;
};

// ---- a TCP relay between a session and the server, to cut or silence the connection ----------

class tcp_relay {
public:
    explicit tcp_relay(std::uint16_t upstream)
        : acceptor_{io_, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}},
          port_{acceptor_.local_endpoint().port()},
          upstream_{upstream} {
        accept();
        thread_ = std::thread([this] { io_.run(); });
    }
    tcp_relay(const tcp_relay&) = delete;
    tcp_relay& operator=(const tcp_relay&) = delete;
    ~tcp_relay() {
        on_thread([this] {
            boost::system::error_code ignored;
            acceptor_.close(ignored);
            cut_all();
        });
        thread_.join();
    }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }
    // Closes every connection relayed so far, both ends, without a word. New ones still relay.
    void cut() {
        on_thread([this] { cut_all(); });
    }
    // The connections relayed so far carry nothing more either way; their sockets stay open.
    void freeze() {
        on_thread([this] {
            for (const auto& c : relayed_) {
                c->frozen = true;
            }
        });
    }

private:
    struct connection {
        connection(tcp::socket c, asio::io_context& io) : client{std::move(c)}, server{io} {}
        void close() {
            boost::system::error_code ignored;
            client.close(ignored);
            server.close(ignored);
        }
        tcp::socket client;
        tcp::socket server;
        bool frozen = false;
        std::array<std::uint8_t, 16 * 1024> up{};
        std::array<std::uint8_t, 16 * 1024> down{};
    };
    using buffer = std::array<std::uint8_t, 16 * 1024>;

    void accept() {
        acceptor_.async_accept([this](const boost::system::error_code& ec, tcp::socket socket) {
            if (ec) {
                return;  // closed
            }
            auto c = std::make_shared<connection>(std::move(socket), io_);
            relayed_.push_back(c);
            c->server.async_connect(
                tcp::endpoint{asio::ip::make_address("127.0.0.1"), upstream_},
                [this, c](const boost::system::error_code& e) {
                    if (e) {
                        c->close();
                        return;
                    }
                    pump(c, c->client, c->server, c->up);
                    pump(c, c->server, c->client, c->down);
                });
            accept();
        });
    }

    void pump(const std::shared_ptr<connection>& c, tcp::socket& from, tcp::socket& to, buffer& buf) {
        from.async_read_some(asio::buffer(buf), [this, c, &from, &to, &buf](
                                                    const boost::system::error_code& ec, std::size_t n) {
            if (ec) {
                c->close();
                return;
            }
            if (c->frozen) {
                return;  // dropped, and nothing read any more
            }
            asio::async_write(to, asio::buffer(buf.data(), n),
                              [this, c, &from, &to, &buf](const boost::system::error_code& e, std::size_t) {
                                  if (e) {
                                      c->close();
                                      return;
                                  }
                                  pump(c, from, to, buf);
                              });
        });
    }

    void cut_all() {
        for (const auto& c : relayed_) {
            c->close();
        }
        relayed_.clear();
    }

    template <typename F>
    void on_thread(F f) {
        std::promise<void> done;
        auto finished = done.get_future();
        asio::post(io_, [&] {
            f();
            done.set_value();
        });
        finished.wait();
    }

    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::uint16_t port_;
    std::uint16_t upstream_;
    std::vector<std::shared_ptr<connection>> relayed_;  // relay thread only
    std::thread thread_;
};

// ---- fixtures ------------------------------------------------------------------------------------

class SessionTest : public testing::Test {
protected:
    std::shared_ptr<world_log> log_ = std::make_shared<world_log>();
    test_server server_{config(), session_game(log_)};

    static session_options options(std::uint16_t port, bool network_thread) {
        session_options o;
        o.connect.port = port;
        o.connect.name = "session-test";
        o.network_thread = network_thread;
        return o;
    }
    std::vector<Entity> drifters() {
        return server_.call([log = log_](ecsnet::server::server&) { return log->drifters; });
    }
    std::map<std::uint64_t, std::map<Entity, Stick>> seen() {
        return server_.call([log = log_](ecsnet::server::server&) { return log->seen; });
    }
    static std::optional<Stick> seen_at(const std::map<std::uint64_t, std::map<Entity, Stick>>& log,
                                        std::uint64_t tick, Entity e) {
        const auto at = log.find(tick);
        if (at == log.end() || !at->second.contains(e)) {
            return std::nullopt;
        }
        return at->second.at(e);
    }
};

// Sockets inside update() (false) or on the session's network thread (true).
class Session : public SessionTest, public testing::WithParamInterface<bool> {
protected:
    [[nodiscard]] session_options options(std::uint16_t port) const {
        return SessionTest::options(port, GetParam());
    }
};

INSTANTIATE_TEST_SUITE_P(Threads, Session, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                             return info.param ? "NetworkThread" : "GameThread";
                         });

// ---- joining, events, commands -------------------------------------------------------------------

TEST_P(Session, JoinsInTheBackgroundAndReportsTheWorldInsideUpdate) {
    player p{options(server_.port())};
    // The constructor returned before any Welcome: nothing is known, nothing can be sent.
    EXPECT_EQ(p.s.state(), session_state::connecting);
    EXPECT_FALSE(p.s.mirror().ready());
    EXPECT_EQ(p.s.client_id(), 0U);
    EXPECT_THROW((void)p.s.welcome(), client_error);
    EXPECT_FALSE(p.s.send(protocol::ping{1}));
    EXPECT_THROW(p.s.set_input(Entity{1, 1}, Stick{}), client_error);

    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    EXPECT_NE(p.s.client_id(), 0U);
    EXPECT_EQ(p.s.welcome().client_id, p.s.client_id());
    ASSERT_EQ(p.count("joined"), 1U);
    const auto joined_at = p.index_of("joined " + std::to_string(p.s.client_id()));
    for (const Entity d : drifters()) {
        EXPECT_TRUE(p.s.mirror().contains(d));
        const auto spawned_at = p.index_of("spawned " + name(d));
        EXPECT_GE(spawned_at, 0) << name(d);
        EXPECT_LT(spawned_at, joined_at) << "the snapshot is reported before joined";
    }

    // Every tick's Delta moves the drifters.
    const std::uint32_t glide = p.s.mirror().types().find("glide")->id;
    const std::string drifter_moved = "updated " + name(drifters()[0]) + " " + std::to_string(glide);
    ASSERT_TRUE(p.pump_until([&] { return p.count(drifter_moved) >= 3; }));

    // The game gives each player a ship when it joins.
    const Entity ship = p.own_ship();
    ASSERT_FALSE(ship.is_null());
    EXPECT_GE(p.index_of("spawned " + name(ship)), 0);

    // A command, its result, and what it did.
    const std::uint32_t id = p.s.next_request_id();
    ASSERT_TRUE(p.s.send(protocol::spawn{id, protocol::component_set{}.set(Glide{5.0F, 5.0F, 1, true})}));
    ASSERT_TRUE(p.pump_until([&] { return p.results.contains(id); }));
    const protocol::command_result result = p.results.at(id);
    ASSERT_TRUE(result.ok) << result.message;
    ASSERT_TRUE(p.pump_until([&] { return p.count("spawned " + name(result.entity)) == 1; }));
    EXPECT_EQ(p.s.mirror().get<Glide>(result.entity), (Glide{5.0F, 5.0F, 1, true}));
    const std::uint32_t destroy_id = p.s.next_request_id();
    ASSERT_TRUE(p.s.send(protocol::destroy{destroy_id, result.entity}));
    ASSERT_TRUE(p.pump_until([&] { return p.count("destroyed " + name(result.entity)) == 1; }));
    EXPECT_FALSE(p.s.mirror().contains(result.entity));

    EXPECT_EQ(p.outside_update, 0) << "events fire inside update() only";
    EXPECT_EQ(p.other_thread, 0) << "events fire on the game's thread only";
    EXPECT_EQ(p.count("disconnected"), 0U);
    EXPECT_EQ(p.s.state(), session_state::joined);
    EXPECT_GT(p.s.stats().frames_received, 3U);
    EXPECT_EQ(p.s.stats().reconnects, 0U);
}

TEST_P(Session, OwnedTellsOfThePlayersEntitiesAsTheyCome) {
    player p{options(server_.port())};
    std::vector<Entity> owned;
    p.s.events().owned = [&](Entity e) {
        owned.push_back(e);
        p.note("owned " + name(e));
    };
    // Read when `joined` fires: one update() may also apply the tick that brings the ship, when
    // both frames arrived before it ran (a slow build, a busy machine).
    std::optional<std::size_t> owned_at_join;
    p.s.events().joined = [&p, &owned_at_join,
                           logged = p.s.events().joined](const protocol::welcome& w) {
        logged(w);
        owned_at_join = p.s.owned_entities().size();
    };
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    ASSERT_TRUE(owned_at_join.has_value());
    EXPECT_EQ(*owned_at_join, 0U) << "the ship comes with a tick after the join";

    // The game makes the player's ship when it joins: it arrives after `joined`, told once.
    ASSERT_TRUE(p.pump_until([&] { return !owned.empty(); }));
    const Entity ship = owned.front();
    EXPECT_EQ(ship, p.own_ship());
    EXPECT_GT(p.index_of("spawned " + name(ship)), p.index_of("joined " + std::to_string(p.s.client_id())));
    EXPECT_EQ(p.index_of("owned " + name(ship)), p.index_of("spawned " + name(ship)) + 1);
    EXPECT_EQ(p.s.owned_entities(), std::vector<Entity>{ship});

    // What the player spawns is its own too; the drifters are nobody's.
    const std::uint32_t id = p.s.next_request_id();
    ASSERT_TRUE(p.s.send(protocol::spawn{id, protocol::component_set{}.set(Glide{1.0F, 1.0F, 0, false})}));
    ASSERT_TRUE(p.pump_until([&] { return p.results.contains(id) && owned.size() == 2; }));
    const Entity spawned = p.results.at(id).entity;
    EXPECT_EQ(owned.back(), spawned);
    EXPECT_EQ(p.s.owned_entities(), (std::vector<Entity>{ship, spawned}));
    ASSERT_TRUE(p.s.send(protocol::destroy{p.s.next_request_id(), spawned}));
    ASSERT_TRUE(p.pump_until([&] { return p.count("destroyed " + name(spawned)) == 1; }));
    EXPECT_EQ(p.s.owned_entities(), std::vector<Entity>{ship});
    EXPECT_EQ(owned.size(), 2U) << "told once per entity";
}

TEST_P(Session, NeverWaitsForAServerThatDoesNotAnswer) {
    // It listens but never accepts: the kernel completes the connection, nobody answers Hello.
    asio::io_context io;
    tcp::acceptor silent{io, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
    const std::uint16_t port = silent.local_endpoint().port();
    session_options o = options(port);
    o.connect.timeout = 600ms;
    player p{o};
    int updates_while_connecting = 0;
    ASSERT_TRUE(p.pump_until([&] {
        updates_while_connecting += p.s.state() == session_state::connecting ? 1 : 0;
        return p.s.state() == session_state::closed;
    }));
    EXPECT_GE(updates_while_connecting, 5) << "update() returned at once, frame after frame";
    const std::string reason = "timed out joining 127.0.0.1:" + std::to_string(port) + " (no Welcome)";
    EXPECT_EQ(p.s.closed_reason(), reason);
    EXPECT_EQ(p.log, std::vector<std::string>{"disconnected " + reason + " (final)"});
}

TEST_P(Session, AnAttemptsTimeoutCountsFromTheFirstUpdate) {
    // A game that builds its session, then loads for longer than the timeout before its loop.
    session_options o = options(server_.port());
    o.connect.timeout = 300ms;
    player p{o};
    std::this_thread::sleep_for(600ms);
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    EXPECT_EQ(p.count("disconnected"), 0U);
}

TEST_P(Session, NoServerThereEndsClosedWithTheReason) {
    std::uint16_t port = 0;
    {
        asio::io_context io;
        tcp::acceptor free_port{io, tcp::endpoint{asio::ip::make_address("127.0.0.1"), 0}};
        port = free_port.local_endpoint().port();
    }
    player p{options(port)};
    ASSERT_TRUE(p.pump_until([&] { return p.s.state() == session_state::closed; }));
    const std::string reason = "cannot connect to 127.0.0.1:" + std::to_string(port) +
                               ": connection refused";
    EXPECT_EQ(p.s.closed_reason(), reason);
    EXPECT_EQ(p.log, std::vector<std::string>{"disconnected " + reason + " (final)"});
    p.pump_for(100ms);
    EXPECT_EQ(p.log.size(), 1U) << "nothing after the end";
}

TEST_P(Session, ARefusalEndsClosedWithTheServersReason) {
    server_config c = config();
    c.auth_token = "secret";
    test_server guarded{c, session_game(std::make_shared<world_log>())};
    session_options o = options(guarded.port());
    o.connect.token = "wrong";
    player p{o};
    ASSERT_TRUE(p.pump_until([&] { return p.s.state() == session_state::closed; }));
    const std::string reason =
        "the server at 127.0.0.1:" + std::to_string(guarded.port()) + " refused: bad auth token";
    EXPECT_EQ(p.s.closed_reason(), reason);
    EXPECT_EQ(p.log, std::vector<std::string>{"disconnected " + reason + " (final)"});
}

TEST_P(Session, AServerShuttingDownEndsTheSessionForGood) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    (void)server_.stop();
    ASSERT_TRUE(p.pump_until([&] { return p.s.state() == session_state::closed; }));
    const std::string reason = "disconnected by the server at 127.0.0.1:" +
                               std::to_string(server_.port()) + ": shutting down";
    EXPECT_EQ(p.s.closed_reason(), reason);
    EXPECT_EQ(p.log.back(), "disconnected " + reason + " (final)");
    EXPECT_EQ(p.count("disconnected"), 1U);
    EXPECT_FALSE(p.s.send(protocol::ping{1}));
}

// ---- input ------------------------------------------------------------------------------------------

TEST_P(Session, InputIsStampedForEachTickAndAppliedAtThatTick) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    const Entity ship = p.own_ship();
    EXPECT_THROW(p.s.set_input(ship, Glide{}), client_error) << "not an input type";

    // A new value every frame; the session stamps the ticks that fall due with the current one.
    std::map<std::uint64_t, Stick> stamped;
    for (int frame = 0; frame < 1000 && stamped.size() < 45; ++frame) {
        const Stick value{static_cast<float>(frame % 100) / 128.0F, -0.5F,
                          static_cast<std::uint8_t>(frame % 16)};
        p.s.set_input(ship, value);
        const std::uint64_t ticks_before = p.s.stats().input_ticks_sent;
        p.update();
        const std::uint64_t sent = p.s.stats().input_ticks_sent - ticks_before;
        for (std::uint64_t t = p.s.last_input_tick() + 1 - sent; t <= p.s.last_input_tick(); ++t) {
            EXPECT_FALSE(stamped.contains(t)) << "tick " << t << " stamped twice";
            stamped[t] = value;
        }
        std::this_thread::sleep_for(10ms);
    }
    ASSERT_GE(stamped.size(), 45U);
    EXPECT_EQ(stamped.rbegin()->first - stamped.begin()->first + 1, stamped.size())
        << "every tick from the first on, none skipped";
    EXPECT_LE(p.s.stats().input_frames_sent, p.s.stats().input_ticks_sent);
    // Protocol 6: one full Input, then compact ones (the entity and the type never changed).
    EXPECT_EQ(p.s.stats().compact_input_frames_sent + 1, p.s.stats().input_frames_sent);

    const std::uint64_t last = stamped.rbegin()->first;
    ASSERT_TRUE(p.pump_until([&] { return p.s.acked_input_tick() >= last; }));
    const protocol::input_ack ack = *p.s.last_input_ack();
    const auto log = seen();
    std::size_t matched = 0;
    std::size_t missed = 0;
    for (const auto& [tick, value] : stamped) {
        if (seen_at(log, tick, ship) == value) {
            ++matched;
        } else {
            ++missed;
        }
    }
    // What the systems saw at tick T is what was stamped for T, unless it arrived late.
    EXPECT_LE(missed, ack.late) << matched << " matched";
    EXPECT_GE(matched, 30U);
    EXPECT_FALSE(p.s.last_input_rejected().has_value()) << p.s.last_input_rejected()->message;
}

TEST_P(Session, ASlowFrameSendsTheTicksItMissedInOneInput) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    const Entity ship = p.own_ship();
    p.s.set_input(ship, Stick{0.0F, 0.5F, 1});
    ASSERT_TRUE(p.pump_until([&] { return p.s.acked_input_tick() > 0; }));

    const auto before = p.s.stats();
    const std::uint64_t last_before = p.s.last_input_tick();
    const std::uint32_t late_before = p.s.last_input_ack()->late;
    std::this_thread::sleep_for(250ms);  // a slow frame: about 7 ticks go by
    const Stick slow{0.75F, -0.25F, 2};
    p.s.set_input(ship, slow);
    p.update();
    const auto after = p.s.stats();
    EXPECT_EQ(after.input_frames_sent - before.input_frames_sent, 1U) << "one Input";
    const std::uint64_t ticks = after.input_ticks_sent - before.input_ticks_sent;
    EXPECT_GE(ticks, 3U);
    EXPECT_LE(ticks, protocol::max_input_ticks);
    EXPECT_EQ(p.s.last_input_tick() - last_before, ticks) << "the ticks right after the last sent";

    const std::uint64_t last = p.s.last_input_tick();
    ASSERT_TRUE(p.pump_until([&] { return p.s.acked_input_tick() >= last; }));
    const auto log = seen();
    std::uint64_t matched = 0;
    for (std::uint64_t t = last_before + 1; t <= last; ++t) {
        matched += seen_at(log, t, ship) == slow ? 1 : 0;
    }
    // The first ticks of the batch may well be past when it arrives: counted late, not applied.
    EXPECT_GE(matched, 1U);
    EXPECT_LE(ticks - matched, p.s.last_input_ack()->late - late_before);
}

TEST_P(Session, InputForAnEntityOfSomeoneElseIsRejected) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    p.s.set_input(drifters()[0], Stick{0.5F, 0.5F, 0});
    ASSERT_TRUE(p.pump_until([&] { return p.count("input_rejected") >= 1; }));
    ASSERT_TRUE(p.s.last_input_rejected().has_value());
    EXPECT_EQ(p.s.last_input_rejected()->code, ecsnet::wire::ErrorCode::NotOwner);
    EXPECT_EQ(p.s.state(), session_state::joined);
}

// ---- reconnect -------------------------------------------------------------------------------------

TEST_P(Session, ReconnectsWithTheResumeKeyAndReportsWhatChangedMeanwhile) {
    tcp_relay relay{server_.port()};
    player p{options(relay.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    const std::uint32_t id = p.s.client_id();
    const Entity ship = p.own_ship();
    p.s.set_input(ship, Stick{0.5F, 0.0F, 3});
    ASSERT_TRUE(p.pump_until([&] { return p.s.acked_input_tick() > 0; }));
    const std::uint64_t acked_before = p.s.acked_input_tick();
    const Entity gone = drifters()[0];
    const Entity kept = drifters()[1];

    // The player hears nothing more; meanwhile a drifter goes and a newcomer comes; then the
    // connection drops without a word.
    relay.freeze();
    const Entity newcomer = server_.call([gone](ecsnet::server::server& s) {
        s.world().destroy(gone);
        const Entity e = s.world().create();
        s.world().emplace<Glide>(e, Glide{7.0F, 7.0F, 0, false});
        return e;
    });
    relay.cut();

    ASSERT_TRUE(p.pump_until([&] { return p.count("reconnected") == 1; }, 20s)) << p.s.closed_reason();
    const auto lost_at = p.index_of("disconnected");
    const auto destroyed_at = p.index_of("destroyed " + name(gone));
    const auto spawned_at = p.index_of("spawned " + name(newcomer));
    const auto reconnected_at = p.index_of("reconnected " + std::to_string(id));
    EXPECT_THAT(p.log[static_cast<std::size_t>(lost_at)],
                HasSubstr("lost the connection to 127.0.0.1:" + std::to_string(relay.port())));
    EXPECT_THAT(p.log[static_cast<std::size_t>(lost_at)], HasSubstr("(will reconnect)"));
    EXPECT_LT(lost_at, destroyed_at);
    EXPECT_LT(destroyed_at, reconnected_at);
    EXPECT_LT(lost_at, spawned_at);
    EXPECT_LT(spawned_at, reconnected_at);
    EXPECT_EQ(p.count("disconnected"), 1U);
    EXPECT_EQ(p.count("destroyed " + name(ship)), 0U);
    EXPECT_EQ(p.count("destroyed " + name(kept)), 0U);

    // The same player, the same ship, the same handles.
    EXPECT_EQ(p.s.state(), session_state::joined);
    EXPECT_EQ(p.s.client_id(), id);
    EXPECT_TRUE(p.s.mirror().contains(ship));
    EXPECT_TRUE(p.s.mirror().contains(kept));
    EXPECT_FALSE(p.s.mirror().contains(gone));
    EXPECT_EQ(p.s.mirror().get<Glide>(newcomer), (Glide{7.0F, 7.0F, 0, false}));
    EXPECT_EQ(p.s.stats().reconnects, 1U);
    // The input goes on and is acknowledged again.
    ASSERT_TRUE(p.pump_until([&] { return p.s.acked_input_tick() > acked_before; }));
    EXPECT_EQ(p.outside_update, 0);
    EXPECT_EQ(p.other_thread, 0);
}

TEST_P(Session, AConnectionThatGoesSilentIsLostAndResumed) {
    tcp_relay relay{server_.port()};
    session_options o = options(relay.port());
    o.silence_timeout = 800ms;
    player p{o};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    const std::uint32_t id = p.s.client_id();
    relay.freeze();
    ASSERT_TRUE(p.pump_until([&] { return p.count("reconnected") == 1; }, 20s)) << p.s.closed_reason();
    EXPECT_EQ(p.log[static_cast<std::size_t>(p.index_of("disconnected"))],
              "disconnected lost the connection to 127.0.0.1:" + std::to_string(relay.port()) +
                  ": nothing received for 800 ms (will reconnect)");
    EXPECT_EQ(p.s.client_id(), id);
    EXPECT_EQ(p.s.state(), session_state::joined);
}

// ---- re-entrancy -------------------------------------------------------------------------------------

TEST_P(Session, EventsMayUseTheSessionButNotUpdateIt) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    const Entity ship = p.own_ship();
    const std::uint32_t request = p.s.next_request_id();
    std::string nested;
    bool sent = false;
    bool readable = false;
    // Replaced between frames: serves from the next update().
    p.s.events().updated = [&, recorded = p.s.events().updated](Entity e, std::uint32_t type) {
        recorded(e, type);
        if (!nested.empty()) {
            return;
        }
        try {
            p.s.update();
            nested = "no exception";
        } catch (const std::logic_error& error) {
            nested = error.what();
        }
        readable = p.s.mirror().contains(e) && p.s.sample<Glide>(e).has_value();
        sent = p.s.send(protocol::spawn{request, protocol::component_set{}.set(Glide{})});
        p.s.set_input(ship, Stick{0.25F, 0.0F, 1});
    };
    ASSERT_TRUE(p.pump_until([&] { return !nested.empty(); }));
    EXPECT_THAT(nested, HasSubstr("update() called from one of its events"));
    EXPECT_TRUE(readable);
    EXPECT_TRUE(sent);
    ASSERT_TRUE(p.pump_until([&] { return p.results.contains(request); }));
    EXPECT_TRUE(p.results.at(request).ok) << p.results.at(request).message;
    ASSERT_TRUE(p.pump_until([&] { return p.s.acked_input_tick() > 0; }));
    EXPECT_EQ(p.s.state(), session_state::joined);
}

// A handler that replaces the events (itself included) is not destroyed while it runs: the rest
// of this update() fires the events as they were when it began, the new ones serve from the next.
TEST_P(Session, AnEventMayReplaceTheEventsTheNewOnesServeFromTheNextUpdate) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    int updates = 0;  // update() calls so far, the one running included
    int replaced_in = -1;
    int old_after_replacing = 0;  // the old handler, later in the update that replaced it
    int old_later = 0;            // the old handler in a later update()
    int new_in_same_update = 0;
    int new_later = 0;
    const auto marker = std::make_shared<int>(7);  // owned by the old handler alone
    p.s.events() = {};
    // Both drifters move every tick: each Delta fires `updated` at least twice.
    p.s.events().updated = [&, marker](Entity, std::uint32_t) {
        ASSERT_EQ(*marker, 7) << "the running handler was destroyed";
        if (replaced_in < 0) {
            replaced_in = updates;
            p.s.events().updated = [&](Entity, std::uint32_t) {
                ++(updates == replaced_in ? new_in_same_update : new_later);
            };
            ASSERT_EQ(*marker, 7) << "replacing the events destroyed the running handler";
            return;
        }
        ++(updates == replaced_in ? old_after_replacing : old_later);
    };
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (new_later == 0 && std::chrono::steady_clock::now() < deadline) {
        ++updates;
        p.s.update();
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_GT(new_later, 0);
    EXPECT_GT(old_after_replacing, 0) << "the update that replaced them fires the old events";
    EXPECT_EQ(new_in_same_update, 0);
    EXPECT_EQ(old_later, 0);
    EXPECT_EQ(p.s.state(), session_state::joined);
}

TEST_P(Session, CloseFromAnEventEndsEveryEventAtOnce) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    int closes = 0;
    int after_close = 0;
    auto& on = p.s.events();
    on = {};
    const auto count = [&](auto&&...) { after_close += closes > 0 ? 1 : 0; };
    on.joined = count;
    on.reconnected = count;
    on.disconnected = count;
    on.spawned = count;
    on.entered = count;
    on.left = count;
    on.destroyed = count;
    on.removed = count;
    on.input_rejected = count;
    on.command_result = count;
    // Both drifters move every tick: the first update of a Delta closes, the second never fires.
    on.updated = [&](Entity, std::uint32_t) {
        if (closes++ == 0) {
            p.s.close();
            EXPECT_EQ(p.s.state(), session_state::closed);
        } else {
            ++after_close;
        }
    };
    ASSERT_TRUE(p.pump_until([&] { return closes > 0; }));
    p.pump_for(200ms);
    EXPECT_EQ(closes, 1);
    EXPECT_EQ(after_close, 0);
    EXPECT_EQ(p.s.state(), session_state::closed);
    EXPECT_EQ(p.s.closed_reason(), "closed by the client");
    EXPECT_FALSE(p.s.send(protocol::ping{1}));
}

TEST_P(Session, AnEventThatThrowsLeavesUpdateAndTheSessionGoesOn) {
    player p{options(server_.port())};
    int thrown = 0;
    p.s.events().spawned = [&, recorded = p.s.events().spawned](Entity e) {
        recorded(e);
        if (thrown++ == 0) {
            throw std::runtime_error("a bug in the game");
        }
    };
    int caught = 0;
    const auto deadline = std::chrono::steady_clock::now() + 15s;
    while (p.s.state() != session_state::joined && std::chrono::steady_clock::now() < deadline) {
        try {
            p.update();
        } catch (const std::runtime_error& e) {
            EXPECT_STREQ(e.what(), "a bug in the game");
            ++caught;
        }
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(caught, 1);
    ASSERT_EQ(p.s.state(), session_state::joined) << p.s.closed_reason();
    EXPECT_EQ(p.count("joined"), 1U) << "joined comes with the next update()";
    EXPECT_TRUE(p.s.mirror().ready());
    const std::string drifter_moved = "updated " + name(drifters()[0]);
    ASSERT_TRUE(p.pump_until([&] { return p.count(drifter_moved) >= 3; }));
}

// ---- bounds, interpolation, options -------------------------------------------------------------

TEST_F(SessionTest, AFullSendQueueIsALostConnectionNotGrowth) {
    session_options o = options(server_.port(), false);
    o.max_send_queue_bytes = 4096;
    player p{o};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    // Without update(), nothing is written: the queue fills.
    std::uint64_t accepted = 0;
    while (accepted < 10'000 && p.s.send(protocol::ping{1'000'000 + accepted})) {
        ++accepted;
    }
    EXPECT_GT(accepted, 10U);
    EXPECT_LT(accepted, 10'000U);
    EXPECT_FALSE(p.s.send(protocol::ping{1}));
    ASSERT_TRUE(p.pump_until([&] { return p.count("reconnected") == 1; }, 20s)) << p.s.closed_reason();
    EXPECT_THAT(p.log[static_cast<std::size_t>(p.index_of("disconnected"))],
                HasSubstr("send queue full"));
    EXPECT_EQ(p.s.state(), session_state::joined);
}

TEST_F(SessionTest, SamplesInterpolateBetweenTheTicksAroundTheRenderTick) {
    player p{options(server_.port(), false)};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    const std::uint64_t joined_tick = p.s.mirror().tick();
    ASSERT_TRUE(p.pump_until([&] { return p.s.mirror().tick() >= joined_tick + 8; }));
    const Entity d = drifters()[0];
    const auto newest = static_cast<double>(p.s.mirror().tick());
    const double offset = static_cast<double>(p.s.mirror().get<Glide>(d)->x) - newest;  // x is the tick
    for (const double back : {4.0, 2.5, 1.25, 0.5, 0.0}) {
        const auto value = p.s.sample<Glide>(d, newest - back);
        ASSERT_TRUE(value.has_value());
        EXPECT_NEAR(value->x, newest - back + offset, 1e-3) << "render tick " << newest - back;
    }
    // Frames late: the last step goes on, for 3 ticks at most (interpolation's default).
    EXPECT_NEAR(p.s.sample<Glide>(d, newest + 1.0)->x, newest + 1.0 + offset, 1e-3);
    EXPECT_NEAR(p.s.sample<Glide>(d, newest + 10.0)->x, newest + 3.0 + offset, 1e-3);
    // The implicit render tick is the clock's.
    EXPECT_EQ(p.s.sample<Glide>(d), p.s.sample<Glide>(d, p.s.render_tick()));
    EXPECT_LT(p.s.render_tick(), p.s.server_time().arrival_tick());
    // A type the server does not interpolate reads as the mirror's latest.
    const Entity ship = p.own_ship();
    EXPECT_EQ(p.s.sample<protocol::Owner>(ship), p.s.mirror().get<protocol::Owner>(ship));
}

TEST(SessionOptions, ASessionAlwaysJoins) {
    session_options o;
    o.connect.join = false;
    EXPECT_THROW(session{o}, client_error);
    session_options bad_delay;
    bad_delay.reconnect.first_delay = 0ms;
    EXPECT_THROW(session{bad_delay}, client_error);
}

}  // namespace session_test

namespace session_test {

TEST_P(Session, CloseReleasesTheConnectionWithoutAnotherUpdate) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    ASSERT_EQ(server_.clients(), 1U);
    p.s.close();
    // A game leaves its loop once the session is closed: no update() from here on, and the
    // server must see the player go all the same.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (server_.clients() != 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(10ms);
    }
    EXPECT_EQ(server_.clients(), 0U) << "the socket stayed open after close()";
}

TEST_P(Session, AnEntityThatStopsStandsStillInsteadOfDriftingOn) {
    player p{options(server_.port())};
    ASSERT_TRUE(p.join()) << p.s.closed_reason();
    p.pump_for(500ms);  // a history of moves
    // The drifters stop; nothing interpolated changes any more, but Deltas go on every tick.
    const auto stopped = server_.call([log = log_](ecsnet::server::server&) {
        return std::exchange(log->drifters, {});
    });
    ASSERT_FALSE(stopped.empty());
    p.pump_for(1s);  // the render tick is well past the last move
    const auto shown = p.s.sample<Glide>(stopped.front());
    const auto latest = p.s.mirror().get<Glide>(stopped.front());
    ASSERT_TRUE(shown && latest);
    EXPECT_EQ(shown->x, latest->x) << "extrapolated past a tick that brought no move";
}

}  // namespace session_test
