// Persistence end to end, in this process (docs/PERSISTENCE.md): the demo game's server with a
// state dir, real clients, a graceful stop and a "crash" (the server destroyed without stop():
// no final checkpoint), then a second server on the same dir.
#include "ecsnet/server/persistence.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <future>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/server/server.hpp"
#include "state_image.hpp"

namespace {

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
    explicit running_server(server_config config) {
        spdlog::set_level(spdlog::level::warn);
        server_.emplace(io_, std::move(config), ecsnet::demo::game());
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
};

server_config config_for(const fs::path& dir, bool journal) {
    server_config c;
    c.bind = "127.0.0.1";
    c.port = 0;
    c.ws_port = -1;
    c.tick_rate = 50.0;
    c.shutdown_grace = 1000ms;
    c.reconnect_grace = 60s;  // restored owners keep their entities until they come back
    c.demo_entities = 0;
    c.state_dir = dir.string();
    c.checkpoint_interval = 0s;  // only at shutdown
    c.journal = journal;
    return c;
}

std::unique_ptr<connection> join(std::uint16_t port,
                                 std::optional<std::vector<std::uint8_t>> key = {}) {
    connect_options options;
    options.port = port;
    options.name = "alice";
    options.timeout = 10s;
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
    ASSERT_EQ(files_like(dir.path(), "checkpoint-").size(), 1U) << "the final checkpoint";

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
    EXPECT_TRUE(files_like(dir.path(), "checkpoint-").empty()) << "a crash writes no checkpoint";
    EXPECT_TRUE(files_like(at_ack.path(), "checkpoint-").empty());
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
    EXPECT_TRUE(files_like(dir.path(), "checkpoint-").empty());
    running_server second{config_for(dir.path(), false)};
    EXPECT_FALSE(second.call([](ecsnet::server::server& s) { return s.restored().has_value(); }));
    EXPECT_TRUE(world_of(second).empty());
}

}  // namespace
