// Interest management end to end: the demo game's server with `--interest-radius` (its setup
// calls interest().use_grid<Position>), in this process over real sockets, and clients with
// mirrors. Every loop is bounded in count and time; nothing here measures speed.
#include "ecsnet/server/server.hpp"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/game.hpp"
#include "client_polling.hpp"
#include "test_server.hpp"
#include "test_support.hpp"

namespace interest_server_test {

namespace asio = boost::asio;
namespace protocol = ecsnet::protocol;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Health;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::server::server_config;
using ecsnet::test::held;
using ecsnet::test::join;
using ecsnet::test::raw_socket;
using ecsnet::test::poll_all_until;
using ecsnet::test::test_server;
using protocol::component_set;
using namespace std::chrono_literals;

server_config interest_config() {
    server_config c = ecsnet::test::local_server_config(50.0);
    c.interest_radius = 50.0F;
    c.interest_cell = 25.0F;
    c.client_budget = 0.0;  // unlimited unless a test says otherwise
    c.checksum_interval = 5;
    return c;
}

Entity spawn_at(connection& c, float x, float y) {
    const std::uint32_t id = c.next_request_id();
    const auto result =
        c.request(protocol::spawn{id, component_set{}.set(Position{x, y}).set(Health{10})}, id);
    EXPECT_TRUE(result.ok) << result.message;
    return result.entity;
}

void set_position(connection& c, Entity e, float x, float y) {
    const std::uint32_t id = c.next_request_id();
    const auto result =
        c.request(protocol::set_components{id, e, component_set{}.set(Position{x, y})}, id);
    EXPECT_TRUE(result.ok) << result.message;
}



struct event_log {
    std::vector<Entity> spawned, entered, left, destroyed;
    void attach(protocol::mirror& m) {
        auto& e = m.events();
        e.on_spawn = [this](Entity x) { spawned.push_back(x); };
        e.on_enter = [this](Entity x) { entered.push_back(x); };
        e.on_leave = [this](Entity x) { left.push_back(x); };
        e.on_destroy = [this](Entity x) { destroyed.push_back(x); };
    }
    static bool has(const std::vector<Entity>& v, Entity e) {
        return std::find(v.begin(), v.end(), e) != v.end();
    }
};

TEST(InterestServer, EachClientHoldsItsViewOwnAndGlobalEntities) {
    test_server server{interest_config()};
    auto alice = join(server.port(), "alice");
    auto bob = join(server.port(), "bob");
    auto builder = join(server.port(), "builder");  // no focus: sees its own and global ones
    const std::vector<connection*> all{alice.get(), bob.get(), builder.get()};
    EXPECT_EQ(alice->welcome().interest_radius, 50.0F);
    alice->send(protocol::focus{-500, -500});
    bob->send(protocol::focus{500, 500});

    const Entity a1 = spawn_at(*builder, -500, -500);
    const Entity a2 = spawn_at(*builder, -510, -490);
    const Entity b1 = spawn_at(*builder, 505, 500);
    const Entity nowhere = spawn_at(*builder, 0, 0);
    const Entity alices = spawn_at(*alice, 900, -900);  // far from every focus, but hers
    std::uint32_t id = builder->next_request_id();
    const auto global = builder->request(protocol::spawn{id, component_set{}.set(Health{1})}, id);
    ASSERT_TRUE(global.ok) << global.message;
    const Entity g = global.entity;

    event_log alice_events;
    event_log bob_events;
    alice_events.attach(alice->mirror());
    bob_events.attach(bob->mirror());
    const std::set<Entity> alice_view{a1, a2, alices, g};
    const std::set<Entity> bob_view{b1, g};
    const std::set<Entity> builder_view{a1, a2, b1, nowhere, g};
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return held(alice->mirror()) == alice_view && held(bob->mirror()) == bob_view &&
                   held(builder->mirror()) == builder_view;
        },
        10s))
        << "alice holds " << held(alice->mirror()).size() << ", bob " << held(bob->mirror()).size();

    // Out of alice's area into bob's: a leave and an entry, not a destroy and a spawn.
    set_position(*builder, a1, 500, 505);
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return event_log::has(alice_events.left, a1) && event_log::has(bob_events.entered, a1);
        },
        10s));
    EXPECT_FALSE(event_log::has(alice_events.destroyed, a1));
    EXPECT_FALSE(event_log::has(bob_events.spawned, a1));
    EXPECT_EQ(bob->mirror().get<Position>(a1), (Position{500, 505})) << "entered whole";
    EXPECT_FALSE(alice->mirror().contains(a1));

    // Destroying what both see: a destroy at both.
    id = builder->next_request_id();
    ASSERT_TRUE(builder->request(protocol::destroy{id, g}, id).ok);
    ASSERT_TRUE(poll_all_until(
        all,
        [&] {
            return event_log::has(alice_events.destroyed, g) &&
                   event_log::has(bob_events.destroyed, g);
        },
        10s));
    EXPECT_FALSE(event_log::has(alice_events.left, g));

    // Checksums over what each holds keep matching.
    const auto matched = [](const connection& c) {
        return c.mirror().statistics().checksums_matched;
    };
    const auto m0 = matched(*alice);
    const auto n0 = matched(*bob);
    ASSERT_TRUE(poll_all_until(
        all, [&] { return matched(*alice) > m0 + 2 && matched(*bob) > n0 + 2; }, 10s));
    for (const connection* c : all) {
        EXPECT_EQ(c->mirror().statistics().checksums_mismatched, 0U);
        EXPECT_EQ(c->mirror().statistics().inconsistencies, 0U) << c->mirror().error();
        EXPECT_GT(c->mirror().statistics().checksums_matched, 0U);
    }
    EXPECT_EQ(held(alice->mirror()), (std::set<Entity>{a2, alices}));
    EXPECT_EQ(held(bob->mirror()), (std::set<Entity>{a1, b1}));
}

TEST(InterestServer, ABudgetTooSmallForTheViewConverges) {
    server_config config = interest_config();
    config.demo_entities = 300;
    config.world_half_extent = 100.0F;
    config.interest_radius = 400.0F;  // the whole world is in view
    config.interest_cell = 100.0F;
    config.client_budget = 2000.0;
    auto server = std::make_unique<test_server>(config);
    auto c = join(server->port(), "slow-link");
    EXPECT_EQ(c->welcome().client_budget, 2000U);
    c->send(protocol::focus{0, 0});
    // Moving entities compete for the budget with the entries: every one still arrives.
    ASSERT_TRUE(poll_all_until(
        {c.get()}, [&] { return c->mirror().size() == 300; }, 120s))
        << "holds " << c->mirror().size() << " of 300";
    const auto m0 = c->mirror().statistics().checksums_matched;
    ASSERT_TRUE(poll_all_until(
        {c.get()}, [&] { return c->mirror().statistics().checksums_matched > m0 + 2; }, 10s));
    EXPECT_EQ(c->mirror().statistics().checksums_mismatched, 0U);
    EXPECT_EQ(c->mirror().statistics().inconsistencies, 0U) << c->mirror().error();
    const auto stats = server->call([](ecsnet::server::server& s) {
        const auto ids = s.joined_sessions();
        return ids.empty() || s.view_of(ids[0]) == nullptr ? ecsnet::server::view_stats{}
                                                           : s.view_of(ids[0])->stats();
    });
    EXPECT_GT(stats.deferred, 0U) << "the budget must have been binding";
    EXPECT_EQ(stats.entered, 300U);
}

// Requirement 5: a corrupted mirror is caught by the per-client checksum. One raw client's
// frames feed two mirrors; one frame's value bytes are altered for the second only.
TEST(InterestServer, TheChecksumCatchesACorruptedMirror) {
    test_server server{interest_config()};
    auto builder = join(server.port(), "builder");
    raw_socket raw{server.port()};
    raw.send(protocol::hello{protocol::protocol_version, "watcher", ""});
    raw.send(protocol::focus{0, 0});
    protocol::mirror good;
    protocol::mirror corrupt;
    std::vector<std::uint8_t> bytes;
    bool corrupted = false;
    bool armed = false;  // corrupt the next Delta that sets a value
    std::optional<std::string> resync_reason;
    const auto read_until = [&](const std::function<bool()>& pred,
                                std::chrono::milliseconds timeout) {
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            builder->poll_for(1ms);
            if (raw.read_frame(bytes, 20ms) != raw_socket::read_status::frame) {
                if (pred()) {
                    return true;
                }
                continue;
            }
            const auto* message = protocol::verify_server_frame(bytes);
            if (message == nullptr) {
                throw std::runtime_error("the server sent an unverifiable frame");
            }
            ecsnet::test::apply_to_mirror(good, *message);
            std::vector<std::uint8_t> altered = bytes;
            if (armed && !corrupted && message->body_type() == ecsnet::wire::ServerBody::Delta) {
                const auto* updated = message->body_as_Delta()->updated();
                if (updated != nullptr && updated->size() > 0 &&
                    updated->Get(0)->values() != nullptr && updated->Get(0)->values()->size() > 0) {
                    const auto at = updated->Get(0)->values()->data() - bytes.data();
                    altered[static_cast<std::size_t>(at)] ^= 0x40U;
                    corrupted = true;
                }
            }
            const auto* changed = protocol::verify_server_frame(altered);
            if (changed == nullptr) {
                throw std::runtime_error("the altered frame does not verify");
            }
            ecsnet::test::apply_to_mirror(corrupt, *changed);
            if (auto reason = corrupt.take_resync_reason(); reason && !resync_reason) {
                resync_reason = reason;
                raw.send(protocol::resync_request{*reason});
            }
            if (pred()) {
                return true;
            }
        }
        return false;
    };

    const Entity e = spawn_at(*builder, 1, 1);
    ASSERT_TRUE(read_until([&] { return good.contains(e) && corrupt.contains(e); }, 10s));
    ASSERT_TRUE(read_until([&] { return good.statistics().checksums_matched > 0; }, 10s));
    EXPECT_EQ(corrupt.statistics().checksums_mismatched, 0U) << "identical so far";

    armed = true;
    set_position(*builder, e, 2, 2);  // the Delta carrying it is altered for `corrupt`
    ASSERT_TRUE(read_until([&] { return corrupted; }, 10s));
    EXPECT_NE(corrupt.get<Position>(e), good.get<Position>(e)) << "the alteration reached a value";
    ASSERT_TRUE(read_until([&] { return corrupt.statistics().checksums_mismatched > 0; }, 10s))
        << "the per-client checksum did not catch the corrupted value";
    EXPECT_TRUE(resync_reason.has_value()) << "a mismatch asks for a resync";
    EXPECT_EQ(good.statistics().checksums_mismatched, 0U);

    // The resync (an empty Snapshot, then entries) repairs the corrupted mirror.
    const auto matched = corrupt.statistics().checksums_matched;
    ASSERT_TRUE(read_until([&] { return corrupt.statistics().checksums_matched > matched; }, 10s));
    EXPECT_EQ(corrupt.get<Position>(e), (Position{2, 2}));
    EXPECT_EQ(ecsnet::test::dump(corrupt), ecsnet::test::dump(good));
    EXPECT_EQ(good.statistics().checksums_mismatched, 0U);
}

// A game's policy that throws while `failing` is set (after its own grid caught up, so the grid
// stays right): issue 24.1's "same for interest policies".
class flaky_policy final : public ecsnet::server::interest_policy {
public:
    flaky_policy(std::unique_ptr<interest_policy> inner, std::shared_ptr<std::atomic<bool>> failing)
        : inner_{std::move(inner)}, failing_{std::move(failing)} {}

    void update(const ecsnet::ecs::World& world,
                const ecsnet::ecs::World::change_set_type& changes) override {
        inner_->update(world, changes);
        fail_if_failing("update");
    }
    void collect(const ecsnet::ecs::World& world, std::uint32_t owner,
                 const ecsnet::server::player_interest& p, std::vector<Entity>& out) override {
        inner_->collect(world, owner, p, out);  // half done, then it throws
        fail_if_failing("collect");
    }
    void priorities(const ecsnet::ecs::World& world, std::uint32_t owner,
                    const ecsnet::server::player_interest& p, std::span<const Entity> entities,
                    std::span<float> out) const override {
        fail_if_failing("priorities");
        inner_->priorities(world, owner, p, entities, out);
    }
    void views_needed(bool needed) override { inner_->views_needed(needed); }
    [[nodiscard]] bool sees_everything(const ecsnet::ecs::World& world, std::uint32_t owner,
                                       const ecsnet::server::player_interest& p) const override {
        fail_if_failing("sees_everything");
        return inner_->sees_everything(world, owner, p);
    }

private:
    void fail_if_failing(const char* what) const {
        if (*failing_) {
            throw std::runtime_error(std::string{what} + " failed on purpose");
        }
    }
    std::unique_ptr<interest_policy> inner_;
    std::shared_ptr<std::atomic<bool>> failing_;
};

TEST(InterestServer, APolicyThatThrowsKeepsEachViewAsItIsAndTheTickGoesOn) {
    test_server server{interest_config()};
    const auto failing = std::make_shared<std::atomic<bool>>(false);
    server.call([failing](ecsnet::server::server& s) {
        auto grid = std::make_unique<ecsnet::server::grid_interest>(
            25.0F, ecsnet::ecs::type_hash_v<Position>,
            [](const ecsnet::ecs::World& w, Entity e) -> std::optional<ecsnet::server::point> {
                const Position* p = w.try_get<Position>(e);
                return p == nullptr ? std::nullopt
                                    : std::optional<ecsnet::server::point>{{p->x, p->y}};
            });
        s.interest().set_policy(std::make_unique<flaky_policy>(std::move(grid), failing));
    });
    auto alice = join(server.port(), "alice");
    auto builder = join(server.port(), "builder");
    const std::vector<connection*> all{alice.get(), builder.get()};
    alice->send(protocol::focus{0, 0});
    const Entity near = spawn_at(*builder, 1, 1);
    const Entity far = spawn_at(*builder, 500, 500);
    ASSERT_TRUE(poll_all_until(all, [&] { return held(alice->mirror()) == std::set<Entity>{near}; },
                               10s));

    failing->store(true);
    set_position(*builder, near, 2, 3);     // held: its update still flows
    const Entity later = spawn_at(*builder, 4, 4);  // would enter: waits for the policy
    const std::uint64_t at = server.call([](ecsnet::server::server& s) { return s.tick(); });
    ASSERT_TRUE(poll_all_until(
        all, [&] { return alice->mirror().tick() >= at + 25 && alice->mirror().get<Position>(near)->x == 2.0F; },
        10s))
        << "the server stopped ticking, or the held entity's update was lost";
    EXPECT_EQ(held(alice->mirror()), std::set<Entity>{near}) << "nothing entered nor left";
    EXPECT_GT(server.call([](ecsnet::server::server& s) { return s.stats().policy_failures; }), 25U);

    failing->store(false);
    ASSERT_TRUE(poll_all_until(
        all, [&] { return held(alice->mirror()) == std::set<Entity>{near, later}; }, 10s));
    EXPECT_FALSE(alice->mirror().contains(far));
    EXPECT_EQ(alice->mirror().statistics().checksums_mismatched, 0U) << alice->mirror().error();
    EXPECT_GT(alice->mirror().statistics().checksums_matched, 0U);
}

}  // namespace interest_server_test
