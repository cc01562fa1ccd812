// Persistence end to end, in this process (docs/PERSISTENCE.md): the demo game's server with a
// state dir, real clients, a graceful stop and a "crash" (the server destroyed without stop():
// no final checkpoint), then a second server on the same dir.
#include "ecsnet/server/persistence/persistence.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/server/admission/connect_token.hpp"
#include "ecsnet/server/persistence/state_dir.hpp"
#include "ecsnet/server/run.hpp"
#include "ecsnet/server/server.hpp"
#include "client_polling.hpp"
#include "state_image.hpp"
#include "test_server.hpp"

namespace persistence_test {

namespace fs = std::filesystem;
namespace protocol = ecsnet::protocol;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Health;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::test::temp_dir;
using protocol::component_set;
using protocol::Owner;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// The server on a thread of its own, like test_server.hpp's, that can also "crash": its
// io_context stops and the server object goes without server::stop(), so nothing of the
// graceful shutdown (the last commands, the final checkpoint) runs.
class running_server {
public:
    explicit running_server(server_config config,
                            const ecsnet::server::game& g = ecsnet::demo::game()) {
        spdlog::set_level(spdlog::level::warn);
        server_.emplace(io_, std::move(config), g);
        std::promise<std::uint16_t> port;
        auto port_future = port.get_future();
        thread_ = std::thread([this, port = std::move(port)]() mutable {
            try {
                server_->start();
                port.set_value(server_->port());
            } catch (...) {
                port.set_exception(std::current_exception());
                return;
            }
            io_.run();
            ended_.set_value();
        });
        try {
            port_ = port_future.get();
        } catch (...) {
            thread_.join();
            throw;
        }
    }
    running_server(const running_server&) = delete;
    running_server& operator=(const running_server&) = delete;
    ~running_server() { stop(); }

    [[nodiscard]] std::uint16_t port() const noexcept { return port_; }

    // Whether io_context::run() returned by itself (the server stopped on its own) within
    // `timeout`; then the server's failure(), read after its thread is done.
    std::optional<std::string> ended_within(std::chrono::milliseconds timeout) {
        if (ended_future_.wait_for(timeout) != std::future_status::ready) {
            return std::nullopt;
        }
        thread_.join();
        std::string failure = server_->failure();
        server_.reset();
        return failure;
    }

    template <typename F>
    auto call(F f) -> std::invoke_result_t<F&, ecsnet::server::server&> {
        using result = std::invoke_result_t<F&, ecsnet::server::server&>;
        auto task = std::make_shared<std::packaged_task<result()>>(
            [this, f = std::move(f)]() mutable { return f(*server_); });
        auto future = task->get_future();
        boost::asio::post(io_, [task] { (*task)(); });
        if (future.wait_for(5s) != std::future_status::ready) {
            throw std::runtime_error("the server thread did not answer within 5 s");
        }
        return future.get();
    }

    // Graceful: server::stop() (the final checkpoint), then run() returns by itself.
    void stop() {
        if (!thread_.joinable()) {
            return;
        }
        boost::asio::post(io_, [this] { server_->stop(); });
        thread_.join();
        server_.reset();
    }

    // No server::stop(): the loop ends where it is and the server goes.
    void crash() {
        if (!thread_.joinable()) {
            return;
        }
        io_.stop();
        thread_.join();
        server_.reset();
    }

private:
    boost::asio::io_context io_;
    std::optional<ecsnet::server::server> server_;
    std::thread thread_;
    std::uint16_t port_{0};
    std::promise<void> ended_;
    std::future<void> ended_future_{ended_.get_future()};
};

server_config config_for(const fs::path& dir, bool journal) {
    server_config c = ecsnet::test::local_server_config(50.0);
    c.ws_port = -1;
    c.reconnect_grace = 60s;  // restored owners keep their entities until they come back
    c.demo_entities = 0;
    c.state_dir = dir.string();
    c.checkpoint_interval = 0s;  // only at shutdown
    c.journal = journal;
    return c;
}

std::unique_ptr<connection> join(std::uint16_t port,
                                 std::optional<std::vector<std::uint8_t>> key = {}) {
    connect_options options = ecsnet::test::join_options(port, "alice");
    if (key) {
        options.resume_key = *key;
    }
    return std::make_unique<connection>(options);
}

protocol::command_result spawn(connection& c, const Position& p, const Health& h) {
    const std::uint32_t id = c.next_request_id();
    return c.request(protocol::spawn{id, component_set{}.set(p).set(h)}, id);
}

protocol::command_result destroy(connection& c, Entity e) {
    const std::uint32_t id = c.next_request_id();
    return c.request(protocol::destroy{id, e}, id);
}

std::vector<fs::path> files_like(const fs::path& dir, const std::string& prefix) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        if (entry.path().filename().string().starts_with(prefix)) {
            out.push_back(entry.path());
        }
    }
    return out;
}

// What the server's world holds: each entity's Position, Health and Owner.
struct kept {
    Position position;
    Health health;
    std::uint32_t owner{};
    bool operator==(const kept&) const = default;
};

std::map<Entity, kept> world_of(running_server& server) {
    return server.call([](ecsnet::server::server& s) {
        std::map<Entity, kept> out;
        const auto& w = s.world();
        w.each([&](Entity e) {
            kept k;
            if (const auto* p = w.try_get<Position>(e)) {
                k.position = *p;
            }
            if (const auto* h = w.try_get<Health>(e)) {
                k.health = *h;
            }
            if (const auto* o = w.try_get<Owner>(e)) {
                k.owner = o->client;
            }
            out.emplace(e, k);
        });
        return out;
    });
}

void copy_dir_without_lock(const fs::path& from, const fs::path& to) {
    for (const auto& entry : fs::directory_iterator(from)) {
        if (entry.path().filename() != "lock") {
            fs::copy_file(entry.path(), to / entry.path().filename(),
                          fs::copy_options::overwrite_existing);
        }
    }
}

TEST(ServerPersistence, AStoppedServerComesBackWithTheSameWorldAndOwners) {
    temp_dir dir;
    std::vector<std::uint8_t> key;
    std::uint32_t client_id = 0;
    std::vector<Entity> spawned;
    std::map<Entity, kept> before;
    std::uint64_t tick_before = 0;
    {
        running_server first{config_for(dir.path(), false)};
        EXPECT_FALSE(first.call([](ecsnet::server::server& s) { return s.restored().has_value(); }))
            << "an empty dir is a new world";
        auto alice = join(first.port());
        key = alice->welcome().resume_key;
        client_id = alice->welcome().client_id;
        for (int i = 0; i < 4; ++i) {
            const auto result =
                spawn(*alice, Position{1.5F * static_cast<float>(i), 0.1F}, Health{100 + i});
            ASSERT_TRUE(result.ok) << result.message;
            spawned.push_back(result.entity);
        }
        ASSERT_TRUE(destroy(*alice, spawned[1]).ok);  // a free slot in the checkpoint
        before = world_of(first);
        ASSERT_EQ(before.size(), 3U);
        alice.reset();
        tick_before = first.call([](ecsnet::server::server& s) { return s.tick(); });
        first.stop();
    }
    ASSERT_EQ(files_like(dir.path(), "checkpoint-").size(), 2U)
        << "the new world's start-up checkpoint and the final one";

    running_server second{config_for(dir.path(), false)};
    const auto restored = second.call([](ecsnet::server::server& s) { return s.restored(); });
    ASSERT_TRUE(restored.has_value());
    EXPECT_EQ(restored->entities, 3U);
    EXPECT_THAT(restored->checkpoint, HasSubstr("checkpoint-"));
    EXPECT_GE(restored->tick, tick_before);
    EXPECT_GE(second.call([](ecsnet::server::server& s) { return s.tick(); }), tick_before);
    EXPECT_EQ(world_of(second), before) << "same ids (index and version), values and owners";

    // The owner comes back with its resume key and owns its entities.
    auto again = join(second.port(), key);
    EXPECT_EQ(again->welcome().client_id, client_id);
    ASSERT_TRUE(again->poll_until([&] { return again->mirror().contains(spawned[3]); }, 5s));
    EXPECT_FALSE(again->mirror().contains(spawned[1]));
    const auto result = destroy(*again, spawned[0]);
    EXPECT_TRUE(result.ok) << result.message;
    EXPECT_EQ(result.code, ecsnet::wire::ErrorCode::None);
    // A stale id stays stale: the destroyed one is unknown.
    EXPECT_FALSE(destroy(*again, spawned[1]).ok);
    // A newcomer is another owner and may not destroy them.
    auto bob = join(second.port());
    EXPECT_NE(bob->welcome().client_id, client_id);
    EXPECT_FALSE(destroy(*bob, spawned[2]).ok);
}

TEST(ServerPersistence, ASecondServerOnTheSameDirIsRefused) {
    temp_dir dir;
    running_server first{config_for(dir.path(), false)};
    try {
        running_server second{config_for(dir.path(), false)};
        ADD_FAILURE() << "two servers run on one state dir";
    } catch (const std::exception& e) {
        EXPECT_THAT(e.what(), HasSubstr("is in use by another server (lock held)"));
    }
    // The first one is unharmed.
    auto alice = join(first.port());
    EXPECT_TRUE(spawn(*alice, Position{}, Health{1}).ok);
}

TEST(ServerPersistence, WithTheJournalAnAcknowledgedCommandSurvivesACrash) {
    temp_dir dir;
    temp_dir at_ack;  // the dir as it was when the Ok arrived
    std::vector<std::uint8_t> key;
    std::map<Entity, kept> acknowledged;
    Entity destroyed;
    {
        running_server first{config_for(dir.path(), true)};
        auto alice = join(first.port());
        key = alice->welcome().resume_key;
        std::vector<Entity> mine;
        for (int i = 0; i < 3; ++i) {
            const auto r = spawn(*alice, Position{7.0F, static_cast<float>(i)}, Health{i});
            ASSERT_TRUE(r.ok) << r.message;
            mine.push_back(r.entity);
        }
        ASSERT_TRUE(destroy(*alice, mine[0]).ok);
        destroyed = mine[0];
        // Every Ok above means: in the journal, on disk. Copy the dir at this moment.
        copy_dir_without_lock(dir.path(), at_ack.path());
        acknowledged = world_of(first);
        ASSERT_EQ(acknowledged.size(), 2U);
        first.crash();
    }
    EXPECT_EQ(files_like(dir.path(), "checkpoint-").size(), 1U)
        << "the start-up checkpoint only: a crash writes none";
    EXPECT_EQ(files_like(at_ack.path(), "checkpoint-").size(), 1U);
    EXPECT_EQ(files_like(at_ack.path(), "journal-").size(), 1U);

    for (const fs::path* state : {&at_ack.path(), &dir.path()}) {
        SCOPED_TRACE(state->string());
        running_server second{config_for(*state, true)};
        const auto restored = second.call([](ecsnet::server::server& s) { return s.restored(); });
        ASSERT_TRUE(restored.has_value());
        EXPECT_GE(restored->journal.batches, 1U);
        EXPECT_TRUE(restored->journal.torn.empty());
        EXPECT_GE(restored->tick, restored->journal.last_tick) << "the tick goes on";
        EXPECT_GE(second.call([](ecsnet::server::server& s) { return s.tick(); }),
                  restored->journal.last_tick);
        EXPECT_EQ(world_of(second), acknowledged);

        auto again = join(second.port(), key);
        const Entity last = std::prev(acknowledged.end())->first;
        ASSERT_TRUE(again->poll_until([&] { return again->mirror().contains(last); }, 5s));
        EXPECT_FALSE(again->mirror().contains(destroyed));
        const auto result = destroy(*again, last);
        EXPECT_TRUE(result.ok) << result.message << " (the owner came back with its key)";
        second.crash();
    }
}

TEST(ServerPersistence, WithoutTheJournalACrashLosesWhatFollowedTheLastCheckpoint) {
    temp_dir dir;
    {
        running_server first{config_for(dir.path(), false)};
        auto alice = join(first.port());
        ASSERT_TRUE(spawn(*alice, Position{}, Health{1}).ok);
        first.crash();
    }
    EXPECT_EQ(files_like(dir.path(), "checkpoint-").size(), 1U) << "the start-up checkpoint";
    running_server second{config_for(dir.path(), false)};
    EXPECT_TRUE(second.call([](ecsnet::server::server& s) { return s.restored().has_value(); }))
        << "the world that started, empty";
    EXPECT_TRUE(world_of(second).empty());
}

// Issue 37: the game's start-up entities were in no checkpoint until the first periodic one,
// and a header-only journal made the restart "restored", so setup() skipped its spawns: a
// kill before the first checkpoint left 0 entities (with the journal) or a world that was not
// the one that ran (without it).
class StartUpWorld : public ::testing::TestWithParam<bool> {};

TEST_P(StartUpWorld, AKillBeforeTheFirstCheckpointKeepsTheStartUpWorld) {
    const bool journal = GetParam();
    temp_dir dir;
    server_config config = config_for(dir.path(), journal);
    config.demo_entities = 12;
    std::set<Entity> started;
    {
        running_server first{config};
        for (const auto& [e, k] : world_of(first)) {
            started.insert(e);
        }
        ASSERT_EQ(started.size(), 12U);
        first.crash();
    }
    for (int life = 0; life < 2; ++life) {
        SCOPED_TRACE("life " + std::to_string(life + 2));
        running_server next{config};
        const auto restored = next.call([](ecsnet::server::server& s) { return s.restored(); });
        ASSERT_TRUE(restored.has_value()) << "the world that ran, not a new one";
        EXPECT_THAT(restored->checkpoint, HasSubstr("checkpoint-"));
        std::set<Entity> now;
        for (const auto& [e, k] : world_of(next)) {
            now.insert(e);
        }
        EXPECT_EQ(now, started) << "the same ids, not spawned again, not lost";
        next.crash();  // and again: the next restart still finds them
    }
}

INSTANTIATE_TEST_SUITE_P(ServerPersistence, StartUpWorld, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Journal" : "NoJournal"; });

// The demo game plus a system that makes an entity every tick until it has made `count`:
// structural changes that no command made.
ecsnet::server::game spawning_game(std::shared_ptr<int> count) {
    ecsnet::server::game g = ecsnet::demo::game();
    g.setup = [setup = g.setup, count](ecsnet::server::server& s) {
        setup(s);
        s.scheduler().add("spawner", ecsnet::ecs::component_access{}.writes<Position, Health>(),
                          [count](ecsnet::ecs::SystemContext& ctx) {
                              if (*count > 0) {
                                  --*count;
                                  const auto e = ctx.commands.create();
                                  ctx.commands.emplace<Position>(e, 3.0F, 4.0F);
                                  ctx.commands.emplace<Health>(e, 77);
                              }
                          });
    };
    return g;
}

TEST(ServerPersistence, WithTheJournalWhatSystemsMadeAndEndedSurvivesACrash) {
    temp_dir dir;
    std::map<Entity, kept> before;
    Entity expired;
    {
        running_server first{config_for(dir.path(), true), spawning_game(std::make_shared<int>(5))};
        auto alice = join(first.port());
        // A command's entity that the demo's lifetime system ends three ticks later.
        const std::uint32_t id = alice->next_request_id();
        const auto r = alice->request(
            protocol::spawn{id, component_set{}.set(Position{}).set(ecsnet::demo::Lifetime{3})}, id);
        ASSERT_TRUE(r.ok) << r.message;
        expired = r.entity;
        const auto deadline = std::chrono::steady_clock::now() + 5s;
        std::size_t made = 0;
        while (std::chrono::steady_clock::now() < deadline) {
            before = world_of(first);
            made = 0;
            for (const auto& [e, k] : before) {
                made += k.health.value == 77 ? 1 : 0;
            }
            if (made == 5 && !before.contains(expired)) {
                break;
            }
            std::this_thread::sleep_for(20ms);
        }
        ASSERT_EQ(made, 5U);
        ASSERT_FALSE(before.contains(expired));
        // Acknowledged: its batch is durable, and the batches of the ticks before it.
        const auto last = spawn(*alice, Position{9.0F, 9.0F}, Health{5});
        ASSERT_TRUE(last.ok) << last.message;
        before = world_of(first);
        first.crash();
    }
    running_server second{config_for(dir.path(), true), spawning_game(std::make_shared<int>(0))};
    const auto after = world_of(second);
    std::set<Entity> ids_before;
    std::set<Entity> ids_after;
    for (const auto& [e, k] : before) {
        ids_before.insert(e);
    }
    for (const auto& [e, k] : after) {
        ids_after.insert(e);
        if (k.health.value == 77) {
            EXPECT_EQ(k.position.x, 3.0F) << "a system's entity comes back with its values";
        }
    }
    EXPECT_EQ(ids_after, ids_before) << "the system's 5 entities back, the expired one not";
    EXPECT_FALSE(after.contains(expired));
}

// A checkpoint's copy runs on the copier thread between two ticks: the next tick waits for it.
// Every tick a system stamps every entity's Health with a number one higher, and the ticks come
// back to back (500 Hz, more entities than a tick period can copy), so a copy that overlapped a
// tick would hold two stamps (and, under TSan, race with the tick's writes).
TEST(ServerPersistence, APeriodicCheckpointHoldsTheWorldOfOneTick) {
    constexpr int entities = 200'000;
    temp_dir dir;
    server_config config = config_for(dir.path(), false);
    config.tick_rate = 500.0;
    config.checkpoint_interval = 1s;
    config.keep_checkpoints = 100;
    ecsnet::server::game g = ecsnet::demo::game();
    g.setup = [setup = g.setup](ecsnet::server::server& s) {
        // The first system of each tick: its writes come as early in the tick as can be.
        auto stamp = std::make_shared<std::int32_t>(0);
        s.scheduler().add("stamp", ecsnet::ecs::component_access{}.writes<Health>(),
                          [stamp](ecsnet::ecs::SystemContext& ctx) {
                              ++*stamp;
                              ctx.world.view<Health>().each([&](Health& h) { h.value = *stamp; });
                          });
        setup(s);
        for (int i = 0; i < entities; ++i) {
            // Position and Velocity are copied before Health: the copy of Health starts late.
            const Entity e = s.world().create();
            s.world().emplace<Position>(e, Position{1.0F, 2.0F});
            s.world().emplace<ecsnet::demo::Velocity>(e, ecsnet::demo::Velocity{0.0F, 0.0F});
            s.world().emplace<Health>(e, Health{-1});
        }
    };
    {
        running_server server{config, g};
        // Clients joining while checkpoints are taken: their snapshots read the world beside
        // the copy.
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        std::size_t written = 0;  // the start-up checkpoint, then the periodic ones
        while (std::chrono::steady_clock::now() < deadline && written < 3) {
            auto client = join(server.port());
            std::this_thread::sleep_for(100ms);
            written = ecsnet::server::state_dir::open_read_only(dir.path()).checkpoints().size();
        }
        ASSERT_GE(written, 3U) << "two periodic checkpoints in 20 s";
    }
    const auto state = ecsnet::server::state_dir::open_read_only(dir.path());
    std::set<std::int32_t> stamps;
    for (const auto& file : state.checkpoints()) {
        const auto image = ecsnet::server::read_checkpoint(file);
        SCOPED_TRACE("checkpoint of tick " + std::to_string(image.tick));
        const auto column = std::find_if(image.columns.begin(), image.columns.end(),
                                          [](const auto& c) { return c.type.name == "health"; });
        ASSERT_NE(column, image.columns.end());
        ASSERT_EQ(column->indices.size(), static_cast<std::size_t>(entities));
        std::set<std::int32_t> in_this;
        for (std::size_t i = 0; i < column->indices.size(); ++i) {
            std::int32_t value = 0;
            std::memcpy(&value, column->values.data() + i * sizeof value, sizeof value);
            in_this.insert(value);
        }
        EXPECT_EQ(in_this.size(), 1U) << "stamps from " << *in_this.begin() << " to "
                                      << *in_this.rbegin() << ": the copy overlapped a tick";
        stamps.insert(*in_this.begin());
    }
    EXPECT_GE(stamps.size(), 3U) << "the start-up, two periodic and the final checkpoint";
}

// No file of this process may grow past `bytes` while it lives: a write past it fails with
// EFBIG (SIGXFSZ ignored), as a write to a full file system fails with ENOSPC.
class full_disk {
public:
    explicit full_disk(std::uintmax_t bytes) : old_handler_{std::signal(SIGXFSZ, SIG_IGN)} {
        if (::getrlimit(RLIMIT_FSIZE, &saved_) != 0) {
            throw std::runtime_error("getrlimit failed");
        }
        rlimit full = saved_;
        full.rlim_cur = static_cast<rlim_t>(bytes);
        if (::setrlimit(RLIMIT_FSIZE, &full) != 0) {
            throw std::runtime_error("setrlimit failed");
        }
    }
    full_disk(const full_disk&) = delete;
    full_disk& operator=(const full_disk&) = delete;
    ~full_disk() {
        ::setrlimit(RLIMIT_FSIZE, &saved_);
        std::signal(SIGXFSZ, old_handler_);
    }

private:
    void (*old_handler_)(int);
    rlimit saved_{};
};

// Issue 37: a replayed connect token was refused within one process life, but admitted again
// after a restart of a persistent world (and could then act as the player). Admitted token ids
// are kept with the world, in the checkpoint and the journal, until they expire.
class TokensAfterARestart : public ::testing::TestWithParam<bool> {};

TEST_P(TokensAfterARestart, AnAdmittedTokenIsRefusedAfterARestart) {
    const bool crash = GetParam();  // crash: the journal has it; stop: the final checkpoint
    temp_dir dir;
    server_config config = config_for(dir.path(), true);
    const std::string secret = "a-signing-secret-of-32-bytes....";
    config.token_secret = secret;
    config.world_id = "eu-1";
    const auto token = [&](const std::string& jti) {
        return ecsnet::server::issue_connect_token(
            {"alice", "eu-1", jti, std::chrono::system_clock::now() + 1h, std::nullopt},
            ecsnet::server::token_algorithm::hs256, secret);
    };
    const auto join_with = [](std::uint16_t port, const std::string& t) {
        connect_options options;
        options.port = port;
        options.name = "alice";
        options.timeout = 10s;
        options.connect_token = t;
        return std::make_unique<connection>(options);
    };
    const std::string used = token("jti-used-once");
    {
        running_server first{config};
        auto alice = join_with(first.port(), used);
        ASSERT_TRUE(spawn(*alice, Position{}, Health{1}).ok) << "acknowledged: its batch, "
                                                                "the token's too, is durable";
        if (crash) {
            first.crash();
        } else {
            alice.reset();
            first.stop();
        }
    }
    running_server second{config};
    try {
        auto replayer = join_with(second.port(), used);
        ADD_FAILURE() << "a token admitted before the restart admits again";
    } catch (const std::exception& e) {
        EXPECT_THAT(e.what(), HasSubstr("connect token already used"));
    }
    EXPECT_EQ(world_of(second).size(), 1U) << "the player's entity is untouched";
    auto fresh = join_with(second.port(), token("jti-new"));
    EXPECT_TRUE(fresh->is_open()) << "a new token of the same player admits";
}

INSTANTIATE_TEST_SUITE_P(ServerPersistence, TokensAfterARestart, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Crash" : "Stop"; });

// After one acknowledged spawn (the journal exists), the disk is made full under it and 16
// spawns are sent without waiting: their batch cannot be written.
void owe_sixteen_on_a_full_disk(connection& alice, const fs::path& dir,
                                std::optional<full_disk>& full) {
    if (!spawn(alice, Position{}, Health{1}).ok) {
        throw std::runtime_error("the first spawn was refused");
    }
    const auto journals = files_like(dir, "journal-");
    if (journals.size() != 1) {
        throw std::runtime_error(std::to_string(journals.size()) + " journal segments, not 1");
    }
    full.emplace(fs::file_size(journals.front()));
    for (int i = 0; i < 16; ++i) {
        const std::uint32_t id = alice.next_request_id();
        alice.send(protocol::spawn{id, component_set{}.set(Position{}).set(Health{i})});
    }
}

// Issue 37: a journal that cannot be written said "shutting down" and then kept the process
// alive forever, and the client owed replies heard nothing. Now: the SIGTERM path, a
// Disconnect naming the reason at once, and io_context::run() returns with failure() set.
// The disk is "full" through full_disk (RLIMIT_FSIZE).
TEST(ServerPersistence, AJournalThatCannotBeWrittenStopsTheServerAndTellsTheClients) {
    temp_dir dir;
    running_server server{config_for(dir.path(), true)};
    auto alice = join(server.port());
    std::optional<full_disk> full;
    owe_sixteen_on_a_full_disk(*alice, dir.path(), full);
    const bool told = alice->poll_until([&] { return !alice->is_open(); }, 10s);
    const auto failure = server.ended_within(10s);
    full.reset();

    ASSERT_TRUE(told) << "the client owed 16 replies heard nothing";
    EXPECT_THAT(*alice->closed_reason(), HasSubstr("the journal cannot be written"));
    EXPECT_THAT(*alice->closed_reason(), HasSubstr("File too large"));
    ASSERT_TRUE(failure.has_value()) << "the server did not stop by itself";
    EXPECT_THAT(*failure, HasSubstr("the journal cannot be written"));
    for (std::uint32_t id = 2; id <= 17; ++id) {
        EXPECT_FALSE(alice->take_result(id).has_value()) << "an unjournaled reply was sent";
    }
}

// The same through run(), as the process runs: it must return (no signal needed) with exit
// status 1, which is what Kubernetes, systemd or compose see.
TEST(ServerRun, ExitsOneByItselfWhenTheJournalCannotBeWritten) {
    temp_dir dir;
    std::uint16_t port = 0;
    {
        boost::asio::io_context io;
        boost::asio::ip::tcp::acceptor probe{
            io, {boost::asio::ip::make_address("127.0.0.1"), 0}};
        port = probe.local_endpoint().port();
    }
    std::vector<std::string> args{"ecsnet-server",  "--bind",      "127.0.0.1",
                                  "--port",         std::to_string(port),
                                  "--state-dir",    dir.path().string(),
                                  "--journal",      "--log-level", "warn"};
    std::vector<char*> argv;
    for (std::string& a : args) {
        argv.push_back(a.data());
    }
    auto exit_code = std::async(std::launch::async, [&] {
        return ecsnet::server::run(static_cast<int>(argv.size()), argv.data(), ecsnet::demo::game());
    });
    // However the test ends, run() must return before the future is destroyed (which waits):
    // SIGTERM is what a supervisor would have had to send.
    struct stop_if_running {
        std::future<int>& run;
        ~stop_if_running() {
            if (run.valid() && run.wait_for(0s) != std::future_status::ready) {
                std::raise(SIGTERM);
            }
        }
    } guard{exit_code};
    std::unique_ptr<connection> alice;
    for (int attempt = 0; attempt < 100 && alice == nullptr; ++attempt) {
        try {
            alice = join(port);
        } catch (const std::exception&) {
            std::this_thread::sleep_for(50ms);
        }
    }
    ASSERT_NE(alice, nullptr) << "run() did not listen on " << port;
    std::optional<full_disk> full;
    owe_sixteen_on_a_full_disk(*alice, dir.path(), full);
    const bool told = alice->poll_until([&] { return !alice->is_open(); }, 10s);
    const bool returned = exit_code.wait_for(10s) == std::future_status::ready;
    full.reset();
    EXPECT_TRUE(told);
    ASSERT_TRUE(returned) << "run() waited for a signal after the journal failed";
    EXPECT_EQ(exit_code.get(), 1) << "a supervisor must see the failure";
}

TEST(ServerPersistence, AFinalCheckpointThatCannotBeWrittenIsAFailure) {
    temp_dir dir;
    const fs::path state = dir.path() / "state";
    running_server server{config_for(state, false)};
    auto alice = join(server.port());
    ASSERT_TRUE(spawn(*alice, Position{}, Health{1}).ok);
    fs::remove_all(state);  // the volume went away: the checkpoint's file cannot be made
    server.call([](ecsnet::server::server& s) {
        s.stop();
        return 0;
    });
    const auto failure = server.ended_within(10s);
    ASSERT_TRUE(failure.has_value());
    EXPECT_THAT(*failure, HasSubstr("the final checkpoint could not be written"));
    ASSERT_TRUE(alice->poll_until([&] { return !alice->is_open(); }, 5s));
    EXPECT_THAT(*alice->closed_reason(), HasSubstr("the final checkpoint could not be written"));
}

}  // namespace persistence_test
