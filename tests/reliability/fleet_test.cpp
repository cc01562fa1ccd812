// Issue #28, a fleet on one machine: three ecsnet-server processes with their own world ids and
// one shared HS256 secret, an allocator stand-in that hands out ready worlds and mints connect
// tokens for them (what a matchmaker and the game's backend do, `issue-token --world`), and
// real clients. Claims: players of different worlds are isolated, a drained world sends its
// players away cleanly and they are placed elsewhere, and each process's /metrics add up to
// what its clients saw.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "client_polling.hpp"
#include "harness.hpp"
#include "http_get.hpp"
#include "process.hpp"

namespace {

namespace protocol = ecsnet::protocol;
using ecsnet::client::client_error;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Name;
using ecsnet::test::http_get;
using ecsnet::test::server;
using protocol::component_set;
using testing::HasSubstr;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

const std::string fleet_secret = "fleet-test-secret-0123456789abcdef";
const std::vector<std::string> world_ids{"world-a", "world-b", "world-c"};

// ---- the fleet ---------------------------------------------------------------------------------

struct world_process {
    std::string id;
    std::unique_ptr<server> process;
    std::uint16_t admin_port = 0;
};

// Three servers started side by side (each waits for its "listening" line), each with an admin
// endpoint on a free port and a 2 s drain. No demo entities: a mirror then holds exactly what
// the world's players spawned.
class fleet {
public:
    fleet() {
        std::vector<std::future<std::unique_ptr<server>>> starting;
        for (const std::string& id : world_ids) {
            starting.push_back(std::async(std::launch::async, [id] {
                return std::make_unique<server>(std::vector<std::string>{
                    "--world-id", id, "--token-secret", fleet_secret, "--admin-port", "0",
                    "--drain-seconds", "2", "--demo-entities", "0"});
            }));
        }
        for (std::size_t i = 0; i < world_ids.size(); ++i) {
            world_process w{world_ids[i], starting[i].get()};
            const auto admin = ecsnet::test::admin_port(*w.process, 10s);
            if (!admin) {
                throw std::runtime_error(w.id + " logged no admin endpoint:\n" + w.process->log());
            }
            w.admin_port = *admin;
            worlds_.push_back(std::move(w));
        }
    }
    fleet(const fleet&) = delete;
    fleet& operator=(const fleet&) = delete;
    // Every process gets SIGTERM first, so their drains run at once; each server's destructor
    // then sends the second signal, which ends a drain without waiting it out.
    ~fleet() {
        for (const world_process& w : worlds_) {
            if (w.process->pid() > 0) {
                ::kill(w.process->pid(), SIGTERM);
            }
        }
        std::this_thread::sleep_for(100ms);
    }

    [[nodiscard]] const std::vector<world_process>& worlds() const noexcept { return worlds_; }
    [[nodiscard]] const world_process& world(const std::string& id) const {
        for (const world_process& w : worlds_) {
            if (w.id == id) {
                return w;
            }
        }
        throw std::out_of_range("no world " + id);
    }

private:
    std::vector<world_process> worlds_;
};

// ---- the allocator stand-in ----------------------------------------------------------------

struct placement {
    std::string world;
    std::uint16_t port = 0;
    std::string token;
};

// Knows the fleet's worlds; places a player on the ready world (GET /readyz == 200, asked at
// each placement) with the fewest players it placed there, the first listed on a tie, and
// mints that player's connect token for that world with the shared secret.
class allocator {
public:
    struct world {
        std::string id;
        std::uint16_t port = 0;
        std::uint16_t admin_port = 0;
    };

    explicit allocator(const fleet& f) {
        for (const world_process& w : f.worlds()) {
            worlds_.push_back({w.id, w.process->port(), w.admin_port});
        }
    }

    // nullopt when no world is ready.
    [[nodiscard]] std::optional<placement> place(const std::string& player) {
        const world* best = nullptr;
        for (const world& w : worlds_) {
            if (ready(w) && (best == nullptr || players_on(w.id) < players_on(best->id))) {
                best = &w;
            }
        }
        if (best == nullptr) {
            return std::nullopt;
        }
        placed_[player] = best->id;
        return placement{best->id, best->port, mint(player, best->id)};
    }

    // The player left its world (disconnected, or sent away by a drain).
    void release(const std::string& player) { placed_.erase(player); }

    [[nodiscard]] std::size_t players_on(const std::string& world_id) const {
        return static_cast<std::size_t>(std::count_if(
            placed_.begin(), placed_.end(), [&](const auto& p) { return p.second == world_id; }));
    }
    [[nodiscard]] std::size_t players() const noexcept { return placed_.size(); }

    // What the game's backend does: `ecsnet-server issue-token --player P --world W`.
    [[nodiscard]] static std::string mint(const std::string& player, const std::string& world_id) {
        return ecsnet::server::issue_connect_token(
            {.player = player,
             .world = world_id,
             .jti = ecsnet::server::random_jti(),
             .expires = std::chrono::system_clock::now() + std::chrono::minutes{10},
             .not_before = std::nullopt},
            ecsnet::server::token_algorithm::hs256, fleet_secret);
    }

private:
    static bool ready(const world& w) { return http_get(w.admin_port, "/readyz", 3s).status == 200; }

    std::vector<world> worlds_;
    std::map<std::string, std::string> placed_;  // player -> world id
};

// ---- players -------------------------------------------------------------------------------

struct player {
    std::string id;
    placement where;
    std::unique_ptr<connection> link;
    std::size_t ok_results = 0;
    std::size_t failed_results = 0;
    std::uint64_t bytes_at_close = 0;  // what it had received when it closed
    std::uint64_t frames_at_close = 0;
};

std::unique_ptr<connection> join(std::uint16_t port, const std::string& name,
                                 const std::string& token) {
    connect_options options = ecsnet::test::join_options(port, name);
    options.connect_token = token;
    return std::make_unique<connection>(options);
}

// Places a player through the allocator and joins it there.
std::unique_ptr<player> place_and_join(allocator& a, const std::string& id) {
    auto p = std::make_unique<player>();
    p->id = id;
    auto where = a.place(id);
    if (!where) {
        ADD_FAILURE() << "the allocator found no ready world for " << id;
        return nullptr;
    }
    p->where = std::move(*where);
    p->link = join(p->where.port, id, p->where.token);
    return p;
}

// Players "player-0".."player-(n-1)", each placed and joined; stops at the first that fails
// (its failure is reported), so the caller checks the count.
std::vector<std::unique_ptr<player>> place_players(allocator& a, int n) {
    std::vector<std::unique_ptr<player>> players;
    for (int i = 0; i < n; ++i) {
        auto p = place_and_join(a, "player-" + std::to_string(i));
        if (p == nullptr) {
            ADD_FAILURE() << "player-" << i << " was not placed and joined";
            break;
        }
        players.push_back(std::move(p));
    }
    return players;
}

// The reason a join was refused; empty when it was admitted.
std::string refusal(std::uint16_t port, const std::string& name, const std::string& token) {
    try {
        const auto admitted = join(port, name, token);
        return {};
    } catch (const client_error& e) {
        return e.what();
    }
}

// The server logs a refusal around when it sends it: wait (bounded) for the line.
testing::AssertionResult log_has(const server& s, const std::string& needle) {
    for (int round = 0; round < 100; ++round) {
        if (s.log().find(needle) != std::string::npos) {
            return testing::AssertionSuccess();
        }
        std::this_thread::sleep_for(50ms);
    }
    return testing::AssertionFailure() << "no \"" << needle << "\" in the log:\n" << s.log();
}

// Reads every open player's frames, a few milliseconds each in turn, until done() holds; at
// most `timeout`. Returns done().
bool serve_until(const std::vector<player*>& players, const std::function<bool()>& done,
                 std::chrono::milliseconds timeout) {
    const auto deadline = clock_type::now() + timeout;
    const auto rounds = timeout / 5ms + 1;
    for (auto round = rounds; round > 0 && !done() && clock_type::now() < deadline; --round) {
        for (player* p : players) {
            if (p->link->is_open()) {
                p->link->poll_for(5ms);
            }
        }
    }
    return done();
}

template <typename Owned>
std::vector<player*> pointers(const Owned& owned) {
    std::vector<player*> out;
    for (const auto& p : owned) {
        out.push_back(p.get());
    }
    return out;
}

// Sends the commands, reads until each has its CommandResult (other players keep being read),
// and tallies the results on the player.
void run_commands(player& p, std::vector<protocol::client_message> commands,
                  const std::vector<player*>& everyone) {
    std::vector<std::uint32_t> ids = ecsnet::test::send_numbered(*p.link, commands);
    std::size_t answered = 0;
    const bool all = serve_until(
        everyone,
        [&] {
            for (std::uint32_t& id : ids) {
                if (id == 0) {
                    continue;
                }
                if (const auto result = p.link->take_result(id)) {
                    ++(result->ok ? p.ok_results : p.failed_results);
                    id = 0;
                    ++answered;
                }
            }
            return answered == ids.size();
        },
        10s);
    EXPECT_TRUE(all) << p.id << ": " << answered << " of " << ids.size()
                     << " CommandResults within 10 s";
}

protocol::client_message spawn_named(const std::string& name) {
    return protocol::spawn{0, component_set{}.set(Name{name})};
}

// Every Name in a player's mirror.
std::multiset<std::string> names_seen(const connection& c) {
    std::multiset<std::string> out;
    c.mirror().each([&](auto entity) {
        if (const auto name = c.mirror().get<Name>(entity)) {
            out.insert(name->value);
        }
    });
    return out;
}
std::multiset<std::string> names_seen(const player& p) { return names_seen(*p.link); }

// ---- /metrics ------------------------------------------------------------------------------

// Samples of a Prometheus text exposition (format 0.0.4): `name{labels} value`, keyed by
// "name" or "name{labels}" exactly as written. Comments (# HELP, # TYPE) are skipped.
class metrics {
public:
    // nullopt, with the reason in `problem`, unless the endpoint answers 200.
    static std::optional<metrics> scrape(std::uint16_t admin_port, std::string& problem) {
        const auto reply = http_get(admin_port, "/metrics", 3s);
        if (reply.status != 200) {
            problem = "GET /metrics on :" + std::to_string(admin_port) + " answered " +
                      std::to_string(reply.status) + " " + reply.error + reply.body;
            return std::nullopt;
        }
        return metrics{reply.body};
    }

    explicit metrics(const std::string& text) {
        std::istringstream in{text};
        for (std::string line; std::getline(in, line);) {
            if (line.empty() || line[0] == '#') {
                continue;
            }
            // The value follows the last space outside the labels (label values may hold spaces).
            const auto labels_end = line.rfind('}');
            const auto space = line.find(' ', labels_end == std::string::npos ? 0 : labels_end);
            if (space == std::string::npos) {
                continue;
            }
            samples_[line.substr(0, space)] = std::stod(line.substr(space + 1));
        }
    }

    // One sample, e.g. value("ecsnet_commands_total{result=\"ok\"}"); 0 when absent (a
    // labelled counter appears once it counted).
    [[nodiscard]] double value(const std::string& key) const {
        const auto it = samples_.find(key);
        return it == samples_.end() ? 0.0 : it->second;
    }
    // Every sample of a family: `name` and `name{...}`.
    [[nodiscard]] double sum(const std::string& name) const {
        double total = 0;
        for (const auto& [key, v] : samples_) {
            if (key == name || key.starts_with(name + "{")) {
                total += v;
            }
        }
        return total;
    }

private:
    std::map<std::string, double> samples_;
};

std::uint64_t count(double v) { return static_cast<std::uint64_t>(v); }

// ---- the tests -----------------------------------------------------------------------------

// Six players, two per world; each spawns two named entities. Every mirror holds exactly its
// own world's four, and a token for world-a is refused by world-b and world-c (and then still
// admits at world-a: refusing it did not spend it).
TEST(Fleet, WorldsAreIsolatedAndATokenAdmitsOnlyToItsWorld) {
    fleet f;
    allocator a{f};
    std::vector<std::unique_ptr<player>> players = place_players(a, 6);
    ASSERT_EQ(players.size(), 6U);
    for (const std::string& id : world_ids) {
        EXPECT_EQ(a.players_on(id), 2U) << id;
    }
    const auto everyone = pointers(players);
    std::map<std::string, std::multiset<std::string>> spawned;  // world -> names
    for (const auto& p : players) {
        EXPECT_EQ(p->link->welcome().player_id, p->id) << "the token's player";
        const std::string prefix = p->where.world + "/" + p->id + "/";
        run_commands(*p, {spawn_named(prefix + "0"), spawn_named(prefix + "1")}, everyone);
        EXPECT_EQ(p->ok_results, 2U) << p->id;
        spawned[p->where.world].insert({prefix + "0", prefix + "1"});
    }
    const bool converged = serve_until(
        everyone,
        [&] {
            return std::all_of(players.begin(), players.end(), [&](const auto& p) {
                return names_seen(*p) == spawned[p->where.world];
            });
        },
        10s);
    EXPECT_TRUE(converged);
    for (const auto& p : players) {
        EXPECT_EQ(names_seen(*p), spawned[p->where.world]) << p->id << " on " << p->where.world;
        EXPECT_EQ(p->link->mirror().size(), 4U) << p->id << " on " << p->where.world;
        EXPECT_TRUE(p->link->is_open()) << p->id << ": " << p->link->closed_reason().value_or("");
    }

    const std::string token_for_a = allocator::mint("wanderer", "world-a");
    for (const std::string other : {"world-b", "world-c"}) {
        const std::string why = refusal(f.world(other).process->port(), "wanderer", token_for_a);
        EXPECT_THAT(why, HasSubstr("connect token is for world 'world-a', this server is world '" +
                                   other + "'"));
        EXPECT_TRUE(log_has(*f.world(other).process, "world 'world-a'"));
    }
    // Joined: its snapshot is complete.
    const auto admitted = join(f.world("world-a").process->port(), "wanderer", token_for_a);
    EXPECT_EQ(names_seen(*admitted), spawned["world-a"]);
}

// SIGTERM to world-b: /readyz turns 503, the allocator places new players on world-a and
// world-c only, world-b's players are still served during the 2 s drain and then get
// Disconnect "shutting down" (not a reset), world-b exits 0, and its players are placed on
// the other worlds with new tokens and see those worlds.
TEST(Fleet, ADrainedWorldSendsItsPlayersAwayAndTheAllocatorPlacesThemElsewhere) {
    fleet f;
    allocator a{f};
    std::vector<std::unique_ptr<player>> players = place_players(a, 6);
    ASSERT_EQ(players.size(), 6U);
    std::map<std::string, std::multiset<std::string>> spawned;
    for (const auto& p : players) {
        const std::string name = p->where.world + "/" + p->id;
        run_commands(*p, {spawn_named(name)}, pointers(players));
        spawned[p->where.world].insert(name);
    }
    std::vector<player*> on_b;
    for (const auto& p : players) {
        if (p->where.world == "world-b") {
            on_b.push_back(p.get());
        }
    }
    ASSERT_EQ(on_b.size(), 2U);

    const world_process& b = f.world("world-b");
    ASSERT_EQ(http_get(b.admin_port, "/readyz").status, 200U);
    ASSERT_EQ(::kill(b.process->pid(), SIGTERM), 0);
    ecsnet::test::http_reply ready;
    serve_until(
        pointers(players),
        [&] { return (ready = http_get(b.admin_port, "/readyz")).status == 503U; }, 5s);
    EXPECT_EQ(ready.status, 503U) << ready.error << ready.body;
    EXPECT_THAT(ready.body, HasSubstr("draining"));

    // Balanced at 2-2-2, a placement ignoring readiness would give world-b one of these four.
    std::vector<std::unique_ptr<player>> late;
    for (int i = 0; i < 4; ++i) {
        auto p = std::make_unique<player>();
        p->id = "late-" + std::to_string(i);
        auto where = a.place(p->id);
        ASSERT_TRUE(where.has_value()) << p->id;
        ASSERT_NE(where->world, "world-b") << p->id;
        p->where = std::move(*where);
        p->link = join(p->where.port, p->id, p->where.token);
        late.push_back(std::move(p));
    }

    // Served during the drain: deltas keep coming, the connections stay open.
    std::vector<std::uint64_t> deltas_before;
    for (player* p : on_b) {
        deltas_before.push_back(p->link->mirror().statistics().deltas);
    }
    auto everyone = pointers(players);
    for (const auto& p : late) {
        everyone.push_back(p.get());
    }
    const bool served = serve_until(
        everyone,
        [&] {
            for (std::size_t i = 0; i < on_b.size(); ++i) {
                if (on_b[i]->link->mirror().statistics().deltas < deltas_before[i] + 5) {
                    return false;
                }
            }
            return true;
        },
        5s);
    EXPECT_TRUE(served) << "world-b's players got no deltas while it drained";
    for (player* p : on_b) {
        EXPECT_TRUE(p->link->is_open()) << p->id << ": " << p->link->closed_reason().value_or("");
    }

    // Then sent away with a word, and the process ends with 0.
    serve_until(
        everyone,
        [&] { return std::none_of(on_b.begin(), on_b.end(), [](player* p) { return p->link->is_open(); }); },
        15s);
    for (player* p : on_b) {
        EXPECT_EQ(p->link->closed_reason().value_or("still open"), "shutting down") << p->id;
    }
    EXPECT_EQ(ecsnet::test::exit_status_of(b.process->pid(), 10s), 0) << b.process->log();
    const std::string log = b.process->log();
    EXPECT_LT(log.find("draining: the listener is closed"), log.find("drain over, shutting down"))
        << log;
    EXPECT_EQ(ecsnet::test::sanitizer_report(log), "");

    // The allocator places them again: another world, a new token, and they see that world.
    for (player* p : on_b) {
        a.release(p->id);
        const std::string old_token = p->where.token;
        auto where = a.place(p->id);
        ASSERT_TRUE(where.has_value()) << p->id;
        EXPECT_NE(where->world, "world-b");
        EXPECT_NE(where->token, old_token);
        p->where = std::move(*where);
        p->link = join(p->where.port, p->id, p->where.token);
    }
    EXPECT_EQ(a.players_on("world-b"), 0U);
    EXPECT_EQ(a.players(), 10U);
    const bool moved = serve_until(
        everyone,
        [&] {
            return std::all_of(on_b.begin(), on_b.end(), [&](player* p) {
                return names_seen(*p) == spawned[p->where.world];
            });
        },
        10s);
    EXPECT_TRUE(moved);
    for (player* p : on_b) {
        EXPECT_EQ(names_seen(*p), spawned[p->where.world]) << p->id << " on " << p->where.world;
        EXPECT_TRUE(p->link->is_open()) << p->id << ": " << p->link->closed_reason().value_or("");
    }
}

// Six players (2-2-2 by the allocator), one of whom leaves (2-2-1); each runs spawns (OK) and a
// destroy of an entity that does not exist (refused). Per world, /metrics says: ecsnet_clients
// = the players the allocator has there (their sum: all of them), commands_total{result="ok"}
// = the OK CommandResults its clients received (and the other results the refused ones), and
// once every client closed and the counters stopped moving, bytes_sent_total is at least what
// the world's clients received and at most `slack_per_client` more per client.
TEST(Fleet, EachWorldsMetricsAddUpToWhatItsClientsSaw) {
    // What a client did not read when it closed: the frames the server wrote between the
    // client's last read and its seeing the close, normally a few milliseconds: a tick's delta
    // (tens of bytes in this still world), now and then a checksum or a Pong. 2 KiB per client
    // is dozens of such frames, room for a loaded machine (CI under ASan) that delays the
    // server's read of the close by many ticks. Runs so far: 0 unread bytes (FIGURES lines).
    constexpr std::uint64_t slack_per_client = 2048;

    fleet f;
    allocator a{f};
    std::vector<std::unique_ptr<player>> players = place_players(a, 6);
    ASSERT_EQ(players.size(), 6U);
    const auto everyone = pointers(players);
    for (std::size_t i = 0; i < players.size(); ++i) {
        std::vector<protocol::client_message> commands;
        for (std::size_t k = 0; k <= i; ++k) {
            commands.push_back(spawn_named(players[i]->id + "/" + std::to_string(k)));
        }
        commands.push_back(protocol::destroy{0, ecsnet::ecs::Entity{}});
        run_commands(*players[i], std::move(commands), everyone);
        EXPECT_EQ(players[i]->ok_results, i + 1) << players[i]->id;
        EXPECT_EQ(players[i]->failed_results, 1U) << players[i]->id;
    }
    // The last one leaves: 2-2-1.
    player& leaver = *players.back();
    leaver.link->poll_for(5ms);
    leaver.bytes_at_close = leaver.link->bytes_received();
    leaver.frames_at_close = leaver.link->frames_received();
    leaver.link->close();
    a.release(leaver.id);

    struct tally {
        std::uint64_t ok = 0;
        std::uint64_t failed = 0;
    };
    std::map<std::string, tally> seen;
    for (const auto& p : players) {
        seen[p->where.world].ok += p->ok_results;
        seen[p->where.world].failed += p->failed_results;
    }

    // ecsnet_clients is set once a tick: wait (bounded) for the leaver to be gone.
    std::map<std::string, metrics> scraped;
    std::string problem;
    serve_until(
        everyone,
        [&] {
            scraped.clear();
            for (const world_process& w : f.worlds()) {
                auto m = metrics::scrape(w.admin_port, problem);
                if (!m) {
                    return false;
                }
                if (count(m->value("ecsnet_clients")) != a.players_on(w.id)) {
                    problem = w.id + ": ecsnet_clients " + std::to_string(m->value("ecsnet_clients")) +
                              ", placed " + std::to_string(a.players_on(w.id));
                    return false;
                }
                scraped.emplace(w.id, std::move(*m));
            }
            return true;
        },
        5s);
    ASSERT_EQ(scraped.size(), f.worlds().size()) << problem;
    std::uint64_t clients_total = 0;
    for (const world_process& w : f.worlds()) {
        const metrics& m = scraped.at(w.id);
        EXPECT_EQ(count(m.value("ecsnet_clients")), a.players_on(w.id)) << w.id;
        clients_total += count(m.value("ecsnet_clients"));
        EXPECT_EQ(count(m.value("ecsnet_commands_total{result=\"ok\"}")), seen[w.id].ok) << w.id;
        EXPECT_EQ(count(m.sum("ecsnet_commands_total")), seen[w.id].ok + seen[w.id].failed) << w.id;
        const std::size_t left = w.id == leaver.where.world ? 1 : 0;
        EXPECT_EQ(count(m.sum("ecsnet_connections_total")), a.players_on(w.id) + left) << w.id;
    }
    EXPECT_EQ(clients_total, a.players());
    EXPECT_EQ(a.players(), 5U);

    // Everyone reads what has arrived, then closes; the servers stop writing once they see it.
    std::map<std::string, std::uint64_t> received;
    std::map<std::string, std::uint64_t> frames_received;
    std::map<std::string, std::uint64_t> clients_of;
    for (const auto& p : players) {
        if (p->link->is_open()) {
            p->link->poll_for(5ms);
            p->bytes_at_close = p->link->bytes_received();
            p->frames_at_close = p->link->frames_received();
            p->link->close();
        }
        received[p->where.world] += p->bytes_at_close;
        frames_received[p->where.world] += p->frames_at_close;
        ++clients_of[p->where.world];
    }
    for (const world_process& w : f.worlds()) {
        // Settled: no client left and the byte counter unchanged over 100 ms; at most 50 rounds.
        std::optional<double> previous;
        double sent = -1;
        double frames_sent = -1;
        bool settled = false;
        for (int round = 0; round < 50 && !settled; ++round) {
            const auto m = metrics::scrape(w.admin_port, problem);
            ASSERT_TRUE(m.has_value()) << problem;
            sent = m->value("ecsnet_bytes_sent_total");
            frames_sent = m->value("ecsnet_frames_sent_total");
            settled = m->value("ecsnet_clients") == 0 && previous == sent;
            previous = sent;
            if (!settled) {
                std::this_thread::sleep_for(100ms);
            }
        }
        EXPECT_TRUE(settled) << w.id << ": ecsnet_bytes_sent_total kept moving";
        const std::uint64_t server_sent = count(sent);
        EXPECT_GE(server_sent, received[w.id]) << w.id;
        EXPECT_LE(server_sent, received[w.id] + slack_per_client * clients_of[w.id]) << w.id;
        EXPECT_GE(count(frames_sent), frames_received[w.id]) << w.id;
        ecsnet::test::figures{"fleet_metrics_" + w.id}
            .add("clients", clients_of[w.id])
            .add("bytes_sent_total", server_sent)
            .add("bytes_received_by_clients", received[w.id])
            .add("unread_bytes", server_sent - std::min(server_sent, received[w.id]))
            .add("frames_sent_total", count(frames_sent))
            .add("frames_received_by_clients", frames_received[w.id])
            .print();
    }
}

}  // namespace
