// Issue #29's crash tests: the real ecsnet-server with a state dir (--state-dir), killed with
// SIGKILL at random moments while three clients send commands, restarted on the same dir, and
// the restored world compared with what the clients were acknowledged. With --journal nothing
// acknowledged is lost; without it at most one checkpoint interval; a graceful stop loses
// nothing; a torn or corrupt newest checkpoint is skipped for the previous one, with a log line
// saying which file and why (docs/PERSISTENCE.md).
//
// The kill delays come from one seed, printed first; ECSNET_PERSISTENCE_SEED=N replays a run.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ecsnet/client/connection.hpp"
#include "ecsnet/demo/components.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "harness.hpp"
#include "process.hpp"

namespace {

namespace fs = std::filesystem;
namespace protocol = ecsnet::protocol;
using ecsnet::client::connect_options;
using ecsnet::client::connection;
using ecsnet::demo::Health;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::ecs::Entity;
using ecsnet::test::server;
using ecsnet::wire::ErrorCode;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

constexpr std::size_t player_count = 3;
constexpr std::size_t max_in_flight = 8;          // commands a player has sent and not seen answered
constexpr auto send_spacing = 12ms;               // ~80 commands/s a player: under --command-rate 200
constexpr std::size_t target_live_per_player = 16;

std::string str(Entity e) { return ecsnet::ecs::to_string(e); }

// A state dir of its own, removed with everything in it.
class temp_dir {
public:
    temp_dir() {
        std::string pattern = (fs::temp_directory_path() / "ecsnet-persistence-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed");
        }
        path_ = pattern;
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    ~temp_dir() {
        std::error_code ignored;
        fs::remove_all(path_, ignored);
    }
    [[nodiscard]] const fs::path& path() const noexcept { return path_; }
    [[nodiscard]] std::string str() const { return path_.string(); }

private:
    fs::path path_;
};

std::uint64_t test_seed() {
    if (const char* given = std::getenv("ECSNET_PERSISTENCE_SEED"); given != nullptr && *given) {
        return std::stoull(given);
    }
    return std::random_device{}();
}

// The demo game with `demo_entities` of its own (made by setup(), moved and bounced by its
// systems; none: the world holds what the players spawned), a reconnect grace far longer than a test (restored owners keep their entities until they are back), and
// the state dir.
std::unique_ptr<server> start(const temp_dir& dir, const std::vector<std::string>& extra,
                              std::size_t demo_entities = 0) {
    std::vector<std::string> args{"--state-dir", dir.str(), "--demo-entities",
                                  std::to_string(demo_entities), "--reconnect-grace", "600"};
    args.insert(args.end(), extra.begin(), extra.end());
    return std::make_unique<server>(args);
}

std::unique_ptr<connection> join(std::uint16_t port, const std::string& name,
                                 const std::vector<std::uint8_t>& resume_key = {}) {
    connect_options options;
    options.port = port;
    options.name = name;
    options.resume_key = resume_key;
    options.timeout = 20s;  // a sanitized server restoring its world
    return std::make_unique<connection>(options);
}

std::string last_lines(const std::string& log, std::size_t n = 40) {
    const auto all = ecsnet::test::lines(log);
    std::string out;
    for (std::size_t i = all.size() > n ? all.size() - n : 0; i < all.size(); ++i) {
        out += all[i] + "\n";
    }
    return out;
}

// ---- what a fresh client sees ------------------------------------------------------------------

struct observed_entity {
    std::uint32_t owner = 0;  // 0: none (the server's)
    std::optional<std::int32_t> health;
    std::optional<Position> position;
    std::optional<std::string> name;
    // Every component the mirror holds, by wire name: canonical bytes in hex, or "text:...".
    std::map<std::string, std::string> values;
    friend bool operator==(const observed_entity&, const observed_entity&) = default;
};

struct world_view {
    std::uint64_t tick = 0;
    std::map<Entity, observed_entity> entities;

    [[nodiscard]] bool contains(Entity e) const { return entities.contains(e); }
    // The live entity at e's index, whatever its version.
    [[nodiscard]] std::optional<Entity> at_index(std::uint32_t index) const {
        const auto it = entities.lower_bound(Entity{index, 0});
        if (it != entities.end() && it->first.index() == index) {
            return it->first;
        }
        return std::nullopt;
    }
};

world_view view_of(const connection& c) {
    const protocol::mirror& m = c.mirror();
    world_view out;
    out.tick = m.tick();
    m.each([&](Entity e) {
        observed_entity o;
        if (const auto owner = m.get<protocol::Owner>(e)) {
            o.owner = owner->client;
        }
        if (const auto h = m.get<Health>(e)) {
            o.health = h->value;
        }
        o.position = m.get<Position>(e);
        if (const auto n = m.get<Name>(e)) {
            o.name = n->value;
        }
        for (const protocol::component_info& info : m.types().types()) {
            if (!m.has(e, info.id)) {
                continue;
            }
            if (info.is_string) {
                const std::string* text = m.text(e, info.id);
                o.values[info.name] = "text:" + (text != nullptr ? *text : std::string{});
            } else {
                std::string hex;
                for (const std::byte b : m.value(e, info.id)) {
                    static constexpr char digits[] = "0123456789abcdef";
                    hex += digits[std::to_integer<unsigned>(b) >> 4U];
                    hex += digits[std::to_integer<unsigned>(b) & 0xFU];
                }
                o.values[info.name] = hex;
            }
        }
        out.entities.emplace(e, std::move(o));
    });
    return out;
}

// The world as a new connection's snapshot shows it (no resume key: an owner of nothing, which
// the server forgets when it leaves).
world_view observe(std::uint16_t port) {
    auto audit = join(port, "persistence-audit");
    return view_of(*audit);
}

std::string describe(const observed_entity& o) {
    std::string out = "owner " + std::to_string(o.owner);
    for (const auto& [type, value] : o.values) {
        out += " " + type + "=" + value;
    }
    return out;
}

// ---- the players -------------------------------------------------------------------------------

enum class kind { spawn, set_health, destroy };

struct command {
    kind what = kind::spawn;
    Entity target;             // set/destroy: the entity named; spawn: the one the answer named
    std::int32_t health = 0;   // spawn/set_health: the value sent
    std::optional<clock_type::time_point> acked;  // when its Ok arrived
};

// One client identity driving spawn / set health / destroy commands over its connection,
// pipelined (up to max_in_flight unanswered), with increasing health values. It remembers
// this run's commands and whether each was acknowledged, and what the last check found (the
// baseline), so that after a restart it can say what the world must and may hold.
class player {
public:
    player(std::string name, std::uint64_t seed) : name_{std::move(name)}, rng_{seed} {}

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] std::uint32_t owner() const noexcept { return owner_; }
    [[nodiscard]] std::size_t acked() const noexcept { return acked_total_; }
    [[nodiscard]] std::size_t in_doubt() const noexcept { return in_doubt_total_; }
    [[nodiscard]] const std::map<Entity, std::int32_t>& baseline() const noexcept { return baseline_; }

    // Joins (with the resume key after the first time). An owner whose entities the restored
    // world holds must be the same owner again; one that owns nothing may come back as a new one
    // (the server forgets owners with neither connection nor entity).
    void connect(std::uint16_t port) {
        link_ = join(port, name_, key_);
        const auto& welcome = link_->welcome();
        if (!baseline_.empty() && welcome.client_id != owner_) {
            throw std::runtime_error(name_ + " presented its resume key and came back as owner " +
                                     std::to_string(welcome.client_id) + ", not " +
                                     std::to_string(owner_) + ", which owns " +
                                     std::to_string(baseline_.size()) + " restored entities");
        }
        owner_ = welcome.client_id;
        if (!welcome.resume_key.empty()) {
            key_ = welcome.resume_key;
        }
        next_send_ = clock_type::now();
    }

    // Sends the next command when it is time and the pipe has room, then reads what arrived.
    void drive() {
        const auto now = clock_type::now();
        if (pending_.size() < max_in_flight && now >= next_send_) {
            send_next();
            next_send_ = now + send_spacing;
        }
        link_->poll_for(2ms);
        collect();
        if (!link_->is_open()) {
            throw std::runtime_error(name_ + ": connection closed: " + *link_->closed_reason());
        }
    }

    // After the kill: the answers the server sent before it died are acknowledgements too.
    void drain_after_kill() {
        (void)link_->poll_until([&] { return !link_->is_open(); }, 5s);
        collect();
        in_doubt_total_ += pending_.size();
        link_.reset();
    }

    // Synchronous commands after a reconnect: destroying a restored entity of its own must
    // succeed (it is this owner's again); destroying `foreign` must be refused with NotOwner.
    void prove_ownership(std::optional<Entity> foreign) {
        if (!baseline_.empty()) {
            const Entity mine = baseline_.begin()->first;
            const std::uint32_t id = link_->next_request_id();
            const auto r = link_->request(protocol::destroy{id, mine}, id, 10s);
            if (!r.ok) {
                throw std::runtime_error(name_ + " could not destroy its restored entity " +
                                         str(mine) + ": " + protocol::to_string(r.code) + " " +
                                         r.message);
            }
            log_.push_back({kind::destroy, mine, 0, clock_type::now()});
            alive_.erase(mine);
            ++acked_total_;
        }
        if (foreign) {
            const std::uint32_t id = link_->next_request_id();
            const auto r = link_->request(protocol::destroy{id, *foreign}, id, 10s);
            if (r.ok || r.code != ErrorCode::NotOwner) {
                throw std::runtime_error(name_ + " (owner " + std::to_string(owner_) +
                                         ") destroying another player's restored entity " +
                                         str(*foreign) + " was answered " +
                                         (r.ok ? std::string{"Ok"} : protocol::to_string(r.code)) +
                                         ", not NotOwner");
            }
        }
    }

    // Compares the restored world with this run's commands. A command acknowledged at or
    // before `cutoff` must have taken effect; one acknowledged later or never answered may or
    // may not have. Appends what is wrong to `failures`.
    void check(const world_view& world, clock_type::time_point cutoff,
               std::vector<std::string>& failures) const {
        const auto certain = [&](const command& c) { return c.acked && *c.acked <= cutoff; };
        const auto fail = [&](const std::string& what) { failures.push_back(name_ + ": " + what); };

        std::set<Entity> known;
        for (const auto& [e, h] : baseline_) {
            known.insert(e);
        }
        std::vector<std::int32_t> unknown_spawn_values;  // spawns never answered: ids unknown
        for (const command& c : log_) {
            if (c.what == kind::spawn) {
                if (c.acked) {
                    known.insert(c.target);
                } else {
                    unknown_spawn_values.push_back(c.health);
                }
            }
        }

        for (const Entity e : known) {
            bool certain_alive = baseline_.contains(e);
            bool destroy_sent = false;
            bool destroy_certain = false;
            std::optional<std::int32_t> certain_health;
            if (const auto it = baseline_.find(e); it != baseline_.end()) {
                certain_health = it->second;
            }
            std::set<std::int32_t> possible;
            for (const command& c : log_) {
                if (c.target != e) {
                    continue;
                }
                switch (c.what) {
                    case kind::spawn:
                    case kind::set_health:
                        if (certain(c)) {
                            certain_alive = certain_alive || c.what == kind::spawn;
                            certain_health = c.health;  // values only grow: the last one wins
                        } else {
                            possible.insert(c.health);
                        }
                        break;
                    case kind::destroy:
                        destroy_sent = true;
                        destroy_certain = destroy_certain || certain(c);
                        break;
                }
            }
            if (certain_health) {
                possible.insert(*certain_health);
            }
            const auto found = world.entities.find(e);
            if (found == world.entities.end()) {
                if (certain_alive && !destroy_sent) {
                    const auto other = world.at_index(e.index());
                    fail("acknowledged entity " + str(e) + " is missing" +
                         (other ? " (its index holds " + str(*other) + ")" : std::string{}));
                }
                if (destroy_certain) {
                    check_stale(world, e, failures);
                }
                continue;
            }
            const observed_entity& o = found->second;
            if (destroy_certain) {
                fail("entity " + str(e) + " is alive after an acknowledged destroy");
                continue;
            }
            if (o.owner != owner_) {
                fail("entity " + str(e) + " is owned by " + std::to_string(o.owner) + ", not " +
                     std::to_string(owner_));
            }
            if (!o.health) {
                fail("entity " + str(e) + " has no health: " + describe(o));
            } else if (!possible.contains(*o.health)) {
                std::string allowed;
                for (const std::int32_t v : possible) {
                    allowed += (allowed.empty() ? "" : ", ") + std::to_string(v);
                }
                fail("entity " + str(e) + " has health " + std::to_string(*o.health) +
                     "; the acknowledged value is " +
                     (certain_health ? std::to_string(*certain_health) : std::string{"none"}) +
                     ", the possible ones {" + allowed + "}");
            }
        }
        for (const Entity e : gone_) {
            check_stale(world, e, failures);
        }
        // Entities of ours the commands do not explain: only spawns never answered can.
        std::size_t unexplained = 0;
        for (const auto& [e, o] : world.entities) {
            if (o.owner != owner_ || known.contains(e)) {
                continue;
            }
            ++unexplained;
            const bool value_sent =
                o.health && std::find(unknown_spawn_values.begin(), unknown_spawn_values.end(),
                                      *o.health) != unknown_spawn_values.end();
            if (!value_sent) {
                fail("entity " + str(e) + " (" + describe(o) +
                     ") is ours but no unanswered spawn sent that health");
            }
        }
        if (unexplained > unknown_spawn_values.size()) {
            fail(std::to_string(unexplained) + " entities of ours that no acknowledged spawn made, " +
                 "but only " + std::to_string(unknown_spawn_values.size()) +
                 " spawns went unanswered");
        }
    }

    // After a check: what the restored world holds is the new baseline.
    void rebase(const world_view& world, clock_type::time_point cutoff) {
        for (const command& c : log_) {
            if (c.what != kind::destroy || world.contains(c.target)) {
                continue;
            }
            // Gone for good: its destroy is durable (acknowledged in time), or it was alive in
            // the world this run started from, so the restored world saw it destroyed (its
            // slot's version moved on). A spawn lost with its destroy may come back at the
            // same id, so it is not remembered.
            if (baseline_.contains(c.target) || (c.acked && *c.acked <= cutoff)) {
                gone_.insert(c.target);
            }
        }
        baseline_.clear();
        for (const auto& [e, o] : world.entities) {
            if (o.owner == owner_ && owner_ != 0) {
                baseline_[e] = o.health.value_or(0);
            }
        }
        alive_ = baseline_;
        log_.clear();
        pending_.clear();
        destroying_.clear();
    }

private:
    // A stale id stays stale: its index is free or holds a later version.
    static void check_stale(const world_view& world, Entity e, std::vector<std::string>& failures) {
        if (world.contains(e)) {
            failures.push_back("destroyed entity " + str(e) + " is alive again");
        } else if (const auto other = world.at_index(e.index());
                   other && other->version() <= e.version()) {
            failures.push_back("destroyed entity " + str(e) + "'s index holds the older version " +
                               str(*other));
        }
    }

    std::optional<Entity> pick_alive() {
        std::vector<Entity> candidates;
        for (const auto& [e, h] : alive_) {
            if (!destroying_.contains(e)) {
                candidates.push_back(e);
            }
        }
        if (candidates.empty()) {
            return std::nullopt;
        }
        return candidates[std::uniform_int_distribution<std::size_t>{0, candidates.size() - 1}(rng_)];
    }

    void send_next() {
        const std::size_t live = alive_.size() - std::min(alive_.size(), destroying_.size());
        std::discrete_distribution<int> weights{
            {live < target_live_per_player ? 45.0 : 15.0, 60.0, live < target_live_per_player ? 5.0 : 25.0}};
        command c;
        c.what = static_cast<kind>(weights(rng_));
        std::optional<Entity> target;
        if (c.what != kind::spawn) {
            target = pick_alive();
            if (!target) {
                c.what = kind::spawn;
            }
        }
        const std::uint32_t id = link_->next_request_id();
        switch (c.what) {
            case kind::spawn:
                c.health = next_health_++;
                link_->send(protocol::spawn{
                    id, protocol::component_set{}
                            .set(Position{static_cast<float>(c.health % 500), -1.0F})
                            .set(Health{c.health})});
                break;
            case kind::set_health:
                c.target = *target;
                c.health = next_health_++;
                link_->send(protocol::set_components{id, c.target,
                                                     protocol::component_set{}.set(Health{c.health})});
                break;
            case kind::destroy:
                c.target = *target;
                destroying_.insert(c.target);
                link_->send(protocol::destroy{id, c.target});
                break;
        }
        pending_.emplace(id, log_.size());
        log_.push_back(c);
    }

    void collect() {
        for (auto it = pending_.begin(); it != pending_.end();) {
            auto result = link_->take_result(it->first);
            if (!result) {
                ++it;
                continue;
            }
            command& c = log_[it->second];
            if (!result->ok) {
                throw std::runtime_error(name_ + ": command " + std::to_string(it->first) + " on " +
                                         str(c.target) + " refused: " +
                                         protocol::to_string(result->code) + " " + result->message);
            }
            c.acked = clock_type::now();
            ++acked_total_;
            switch (c.what) {
                case kind::spawn:
                    c.target = result->entity;
                    alive_[c.target] = c.health;
                    break;
                case kind::set_health:
                    alive_[c.target] = c.health;
                    break;
                case kind::destroy:
                    alive_.erase(c.target);
                    destroying_.erase(c.target);
                    break;
            }
            it = pending_.erase(it);
        }
    }

    std::string name_;
    std::mt19937_64 rng_;
    std::unique_ptr<connection> link_;
    std::uint32_t owner_ = 0;
    std::vector<std::uint8_t> key_;
    std::int32_t next_health_ = 1;
    clock_type::time_point next_send_{};

    std::map<Entity, std::int32_t> baseline_;  // ours in the world the last check found
    std::set<Entity> gone_;                    // destroyed for good: must never be alive again
    std::vector<command> log_;                 // this run's commands, in the order sent
    std::map<std::uint32_t, std::size_t> pending_;  // request id -> index in log_
    std::map<Entity, std::int32_t> alive_;     // acknowledged alive: what commands may name
    std::set<Entity> destroying_;              // a destroy is in flight: named no more
    std::size_t acked_total_ = 0;
    std::size_t in_doubt_total_ = 0;
};

// What the server and its systems made, beside the players' commands (issue 37): the demo
// entities setup() made in the first life, and entities the lifetime system ended.
struct server_made {
    std::set<Entity> startup;          // owner 0, from the first life: exactly these, always
    std::set<std::uint32_t> reapers;   // owners of the Lifetime entities below
    std::set<Entity> expired;          // ended by the lifetime system, and durable: never again
};

// Every entity of the world belongs to one of the players, or is one of the start-up
// entities, or a reaper's; the start-up ones are all there; no expired one came back.
void check_owners(const world_view& world, const std::vector<player>& players,
                  const server_made& made, std::vector<std::string>& failures) {
    std::set<std::uint32_t> owners{made.reapers.begin(), made.reapers.end()};
    for (const player& p : players) {
        owners.insert(p.owner());
    }
    std::set<Entity> startup;
    for (const auto& [e, o] : world.entities) {
        if (o.owner == 0) {
            startup.insert(e);
        } else if (!owners.contains(o.owner)) {
            failures.push_back("entity " + str(e) + " (" + describe(o) + ") belongs to no player");
        }
    }
    if (startup != made.startup) {
        failures.push_back(std::to_string(startup.size()) + " server-owned entities, not the " +
                           std::to_string(made.startup.size()) + " that setup() made");
    }
    for (const Entity e : made.expired) {
        if (world.contains(e)) {
            failures.push_back("entity " + str(e) + " ended by the lifetime system is alive again");
        }
    }
}

// A connection of its own spawns an entity with a Lifetime of 3 ticks and waits for the
// demo's lifetime system to end it; a refused command after it is answered only once the
// batches before it are durable, so the system's destroy is on disk when this returns.
void expire_one(std::uint16_t port, server_made& made) {
    auto reaper = join(port, "persistence-reaper");
    made.reapers.insert(reaper->welcome().client_id);
    const std::uint32_t id = reaper->next_request_id();
    const auto spawned = reaper->request(
        protocol::spawn{id, protocol::component_set{}
                                .set(Position{1.0F, 1.0F})
                                .set(ecsnet::demo::Lifetime{3})},
        id);
    if (!spawned.ok) {
        throw std::runtime_error("the reaper's spawn was refused: " + spawned.message);
    }
    const std::uint64_t after = reaper->mirror().tick() + 6;
    if (!reaper->poll_until([&] {
            return reaper->mirror().tick() >= after && !reaper->mirror().contains(spawned.entity);
        }, 5s)) {
        throw std::runtime_error("the lifetime system did not end " + str(spawned.entity));
    }
    const std::uint32_t fence = reaper->next_request_id();
    if (reaper->request(protocol::destroy{fence, spawned.entity}, fence).ok) {
        throw std::runtime_error("an ended entity was destroyed again");
    }
    made.expired.insert(spawned.entity);
}

struct kill_loop {
    std::vector<std::string> server_args;
    // Acknowledged more than this before the kill: must be in the restored world. nullopt:
    // every acknowledged command must be (the journal).
    std::optional<std::chrono::milliseconds> may_lose;
    std::chrono::milliseconds min_delay;
    std::chrono::milliseconds max_delay;
    std::size_t min_kills = 10;
    std::size_t max_kills = 12;
    std::chrono::seconds budget{60};  // past it, no kill beyond min_kills
    std::size_t demo_entities = 12;   // the server's own, from setup()
    bool expire = false;              // each life, an entity the lifetime system ends (journal)
};

// Runs the players against the server, kills it (SIGKILL) after a random delay, restarts it on
// the same state dir, checks the restored world against the acknowledged commands, and again.
void run_kill_loop(const std::string& test, const kill_loop& loop) {
    const std::uint64_t seed = test_seed();
    std::cout << test << ": seed " << seed << " (ECSNET_PERSISTENCE_SEED=" << seed
              << " replays the kill delays)" << std::endl;
    std::mt19937_64 rng{seed};
    temp_dir dir;
    std::vector<player> players;
    for (std::size_t i = 0; i < player_count; ++i) {
        players.emplace_back("persistence-player-" + std::to_string(i), seed + 1 + i);
    }
    const auto started = clock_type::now();
    std::size_t kills = 0;
    std::size_t max_entities = 0;
    std::optional<clock_type::time_point> cutoff;  // of the last kill
    std::vector<std::chrono::milliseconds> delays;
    server_made made;
    for (;;) {
        auto s = start(dir, loop.server_args, loop.demo_entities);
        if (!cutoff) {
            for (const auto& [e, o] : observe(s->port()).entities) {
                made.startup.insert(e);
            }
            ASSERT_EQ(made.startup.size(), loop.demo_entities) << last_lines(s->log());
        }
        if (cutoff) {
            const world_view world = observe(s->port());
            std::vector<std::string> failures;
            for (const player& p : players) {
                p.check(world, *cutoff, failures);
            }
            check_owners(world, players, made, failures);
            if (!failures.empty()) {
                std::string text;
                for (const std::string& f : failures) {
                    text += "  " + f + "\n";
                }
                FAIL() << "after kill " << kills << " (seed " << seed << ", delay "
                       << delays.back().count() << " ms) the restored world (tick " << world.tick
                       << ", " << world.entities.size() << " entities) differs:\n"
                       << text << "server log:\n"
                       << last_lines(s->log());
            }
            max_entities = std::max(max_entities, world.entities.size());
            for (player& p : players) {
                p.rebase(world, *cutoff);
            }
        }
        const bool more = kills < loop.min_kills ||
                          (kills < loop.max_kills && clock_type::now() - started < loop.budget);
        if (!more) {
            const std::string log = s->log();
            ASSERT_TRUE(s->stop()) << last_lines(log);
            EXPECT_EQ(ecsnet::test::sanitizer_report(s->log()), "");
            break;
        }
        const auto delay = std::chrono::milliseconds{std::uniform_int_distribution<std::int64_t>{
            loop.min_delay.count(), loop.max_delay.count()}(rng)};
        try {
            for (player& p : players) {
                p.connect(s->port());
            }
            for (std::size_t i = 0; i < players.size(); ++i) {
                const auto& next = players[(i + 1) % players.size()].baseline();
                // Its last one: the player itself destroys its first one in prove_ownership.
                players[i].prove_ownership(next.size() > 1 ? std::optional{next.rbegin()->first}
                                                           : std::nullopt);
            }
            if (loop.expire) {
                expire_one(s->port(), made);
            }
            delays.push_back(delay);
            const auto kill_at = clock_type::now() + delay;
            while (clock_type::now() < kill_at) {
                for (player& p : players) {
                    p.drive();
                }
            }
        } catch (const std::exception& e) {
            FAIL() << e.what() << "\n(after " << kills << " kills, the last after "
                   << (delays.empty() ? 0 : delays.back().count()) << " ms; seed " << seed
                   << ")\nserver log:\n"
                   << last_lines(s->log());
        }
        const std::string log = s->log();
        const auto killed = clock_type::now();
        ASSERT_EQ(::kill(s->pid(), SIGKILL), 0);
        ++kills;
        ASSERT_EQ(ecsnet::test::sanitizer_report(log), "");
        for (player& p : players) {
            p.drain_after_kill();
        }
        s.reset();  // reaps it
        cutoff = loop.may_lose ? killed - *loop.may_lose : clock_type::time_point::max();
    }
    std::size_t acked = 0;
    std::size_t in_doubt = 0;
    for (const player& p : players) {
        acked += p.acked();
        in_doubt += p.in_doubt();
    }
    std::string delay_list;
    for (const auto d : delays) {
        delay_list += (delay_list.empty() ? "" : " ") + std::to_string(d.count());
    }
    std::cout << test << ": " << kills << " kills after " << delay_list << " ms, " << acked
              << " commands acknowledged, " << in_doubt << " unanswered at a kill" << std::endl;
    EXPECT_GE(kills, loop.min_kills);
    EXPECT_GT(acked, kills * 10) << "too few commands to say anything";
    ecsnet::test::figures{test}
        .add("seed", std::to_string(seed))
        .add("kills", kills)
        .add("acknowledged", acked)
        .add("unanswered_at_kill", in_doubt)
        .add("largest_world", max_entities)
        .add("startup_entities", made.startup.size())
        .add("expired_by_a_system", made.expired.size())
        .print();
}

TEST(Persistence, JournalLosesNothingAcknowledged) {
    run_kill_loop("JournalLosesNothingAcknowledged",
                  {.server_args = {"--journal", "--checkpoint-seconds", "2"},
                   .may_lose = std::nullopt,
                   .min_delay = 200ms,
                   .max_delay = 2600ms,  // across the 2 s checkpoints
                   .min_kills = 10,
                   .max_kills = 12,
                   .budget = 60s,
                   .expire = true});
}

// Checkpoints every second and no journal: what was acknowledged more than 2 s before the kill
// is in the restored world. The newest checkpoint at the kill was captured at most 1 s (the
// interval) after such a command; 1 s more covers writing it (write, fsync, rename, fsync of
// the directory, milliseconds for these worlds), the checkpoint timer's tick granularity
// (33 ms) and a loaded two-core CI machine running the server under ASan.
TEST(Persistence, CheckpointOnlyLosesAtMostOneInterval) {
    run_kill_loop("CheckpointOnlyLosesAtMostOneInterval",
                  {.server_args = {"--checkpoint-seconds", "1"},
                   .may_lose = 2000ms,
                   .min_delay = 1500ms,
                   .max_delay = 3500ms,
                   .min_kills = 10,
                   .max_kills = 11,
                   .budget = 60s});
}

// ---- graceful stop and corrupt checkpoints ----------------------------------------------------

// Commands sent at once; waits (bounded) for every answer and requires Ok. Returns the results.
std::vector<protocol::command_result> run_commands(connection& c,
                                                   std::vector<protocol::client_message> commands) {
    const auto ids = ecsnet::test::send_numbered(c, commands);
    std::vector<std::optional<protocol::command_result>> results(ids.size());
    const bool answered = c.poll_until(
        [&] {
            bool all = true;
            for (std::size_t i = 0; i < ids.size(); ++i) {
                if (!results[i]) {
                    results[i] = c.take_result(ids[i]);
                }
                all = all && results[i].has_value();
            }
            return all;
        },
        20s);
    if (!answered) {
        throw std::runtime_error("not every command was answered within 20 s");
    }
    std::vector<protocol::command_result> out;
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (!results[i]->ok) {
            throw std::runtime_error(std::string{protocol::message_name(commands[i])} + " refused: " +
                                     protocol::to_string(results[i]->code) + " " +
                                     results[i]->message);
        }
        out.push_back(*results[i]);
    }
    return out;
}

std::vector<Entity> spawn_entities(connection& c, std::size_t n, std::int32_t first) {
    std::vector<protocol::client_message> commands;
    for (std::size_t i = 0; i < n; ++i) {
        const auto k = first + static_cast<std::int32_t>(i);
        auto components =
            protocol::component_set{}.set(Position{static_cast<float>(k), static_cast<float>(-k)}).set(Health{k});
        if (k % 3 == 0) {
            components.set(Name{"entity-" + std::to_string(k)});
        }
        commands.emplace_back(protocol::spawn{0, std::move(components)});
    }
    std::vector<Entity> out;
    for (const auto& r : run_commands(c, std::move(commands))) {
        out.push_back(r.entity);
    }
    return out;
}

std::optional<std::uint64_t> restored_tick(const std::string& log) {
    static const std::regex line{R"(restored checkpoint tick (\d+))"};
    std::smatch m;
    if (std::regex_search(log, m, line)) {
        return std::stoull(m[1].str());
    }
    return std::nullopt;
}

// checkpoint-<tick>.ckpt files, oldest first.
std::vector<fs::path> checkpoint_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        if (name.starts_with("checkpoint-") && name.ends_with(".ckpt")) {
            out.push_back(entry.path());
        }
    }
    std::sort(out.begin(), out.end());  // zero-padded ticks: by name is by tick
    return out;
}

std::uint64_t tick_of(const fs::path& checkpoint) {
    const std::string name = checkpoint.filename().string();
    return std::stoull(name.substr(std::string{"checkpoint-"}.size(), 20));
}

TEST(Persistence, GracefulStopLosesNothing) {
    temp_dir dir;
    const std::vector<std::string> args{"--checkpoint-seconds", "0"};  // only the one at SIGTERM
    auto s = start(dir, args);
    auto c = join(s->port(), "persistence-graceful");
    const std::uint32_t owner = c->welcome().client_id;
    const std::vector<std::uint8_t> key = c->welcome().resume_key;
    const std::vector<Entity> spawned = spawn_entities(*c, 30, 1);
    std::set<Entity> ever(spawned.begin(), spawned.end());
    // Some without health, some destroyed (the highest index among them: the pool's size and
    // versions must survive, not only the live entities).
    std::vector<protocol::client_message> edits;
    std::set<Entity> destroyed;
    for (std::size_t i = 0; i < spawned.size(); ++i) {
        if (i % 5 == 0) {
            edits.emplace_back(protocol::remove_components{0, spawned[i], {"health"}});
        } else if (i % 4 == 1 || i + 1 == spawned.size()) {
            edits.emplace_back(protocol::destroy{0, spawned[i]});
            destroyed.insert(spawned[i]);
        } else if (i % 2 == 0) {
            edits.emplace_back(protocol::set_components{
                0, spawned[i], protocol::component_set{}.set(Health{1000 + static_cast<std::int32_t>(i)})});
        }
    }
    run_commands(*c, std::move(edits));
    // Let some ticks pass with nothing happening: the tick must go on from where it stopped.
    c->poll_for(300ms);
    const world_view before = observe(s->port());
    ASSERT_EQ(before.entities.size(), spawned.size() - destroyed.size());
    c.reset();

    ASSERT_TRUE(s->stop()) << last_lines(s->log());
    const std::string stop_log = s->log();
    EXPECT_EQ(ecsnet::test::sanitizer_report(stop_log), "");
    EXPECT_NE(stop_log.find("checkpoint tick"), std::string::npos) << last_lines(stop_log);
    s.reset();
    const auto files = checkpoint_files(dir.path());
    ASSERT_FALSE(files.empty()) << "no checkpoint at the stop:\n" << last_lines(stop_log);
    EXPECT_GE(tick_of(files.back()), before.tick) << "the newest checkpoint predates the stop";

    // The checkpoint's JSON export holds the same entities and values.
    const auto exported = ecsnet::test::run(
        {ECSNET_SERVER_BIN, "inspect-state", dir.str(), "--json"}, {}, {}, 60s);
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    const auto json = nlohmann::json::parse(exported.out, nullptr, false);
    ASSERT_FALSE(json.is_discarded()) << exported.out.substr(0, 2000);
    EXPECT_EQ(json.at("tick").get<std::uint64_t>(), tick_of(files.back()));
    std::map<Entity, std::pair<std::optional<std::int32_t>, std::optional<std::string>>> in_json;
    for (const auto& e : json.at("entities")) {
        const Entity id{e.at("index").get<std::uint32_t>(), e.at("version").get<std::uint32_t>()};
        const auto& components = e.at("components");
        auto& slot = in_json[id];
        if (components.contains("health")) {
            slot.first = components.at("health").at("value").get<std::int32_t>();
        }
        if (components.contains("name")) {
            slot.second = components.at("name").get<std::string>();
        }
        const auto seen = before.entities.find(id);
        ASSERT_NE(seen, before.entities.end()) << "the export holds " << str(id) << ", the mirror not";
        ASSERT_TRUE(components.contains("position") && seen->second.position) << e.dump();
        EXPECT_EQ(components.at("position").at("x").get<float>(), seen->second.position->x);
        EXPECT_EQ(components.at("position").at("y").get<float>(), seen->second.position->y);
    }
    std::map<Entity, std::pair<std::optional<std::int32_t>, std::optional<std::string>>> in_mirror;
    for (const auto& [e, o] : before.entities) {
        in_mirror[e] = {o.health, o.name};
    }
    EXPECT_EQ(in_json, in_mirror);

    s = start(dir, args);
    const std::string start_log = s->log();
    const auto restored = restored_tick(start_log);
    ASSERT_TRUE(restored.has_value()) << last_lines(start_log);
    EXPECT_EQ(*restored, tick_of(files.back()));
    const world_view after = observe(s->port());
    EXPECT_GE(after.tick, *restored) << "the tick goes on from the checkpoint's";
    for (const auto& [e, o] : before.entities) {
        const auto it = after.entities.find(e);
        if (it == after.entities.end()) {
            ADD_FAILURE() << str(e) << " (" << describe(o) << ") was not restored";
        } else {
            EXPECT_EQ(it->second, o) << str(e) << ": " << describe(it->second) << " vs " << describe(o);
        }
    }
    EXPECT_EQ(after.entities.size(), before.entities.size());

    // The owner is back with its key, owns its entities, and new ids are new.
    c = join(s->port(), "persistence-graceful", key);
    EXPECT_EQ(c->welcome().client_id, owner);
    const Entity kept = before.entities.begin()->first;
    run_commands(*c, {protocol::destroy{0, kept}});
    const std::vector<Entity> fresh = spawn_entities(*c, 3, 100);
    for (const Entity e : fresh) {
        EXPECT_FALSE(ever.contains(e)) << str(e) << " was handed out before the stop";
        for (const Entity d : destroyed) {
            EXPECT_FALSE(e == d) << "destroyed id " << str(d) << " handed out again";
        }
    }
    c.reset();
    ASSERT_TRUE(s->stop()) << last_lines(s->log());
    EXPECT_EQ(ecsnet::test::sanitizer_report(s->log()), "");
}

// Two graceful stops write two checkpoints; the newest is then damaged (cut to half its length;
// separately, one byte of its payload flipped). The server starts from the previous one and
// says which file it skipped and why.
TEST(Persistence, CorruptNewestCheckpointFallsBack) {
    temp_dir dir;
    const std::vector<std::string> args{"--checkpoint-seconds", "0"};
    std::vector<Entity> first;
    std::vector<Entity> second;
    {
        auto s = start(dir, args);
        auto c = join(s->port(), "persistence-corrupt");
        first = spawn_entities(*c, 5, 1);
        c.reset();
        ASSERT_TRUE(s->stop()) << last_lines(s->log());
    }
    {
        auto s = start(dir, args);
        ASSERT_TRUE(restored_tick(s->log()).has_value()) << last_lines(s->log());
        auto c = join(s->port(), "persistence-corrupt-2");
        second = spawn_entities(*c, 5, 10);
        c.reset();
        ASSERT_TRUE(s->stop()) << last_lines(s->log());
    }
    const auto files = checkpoint_files(dir.path());
    ASSERT_GE(files.size(), 2U);
    const fs::path newest = files.back();
    const std::uint64_t previous_tick = tick_of(files[files.size() - 2]);

    struct damage {
        std::string what;
        std::string reason;  // in the log line that skips the file
    };
    for (const damage& d : {damage{"truncated to half", "truncated"},
                            damage{"one payload byte flipped", "checksum mismatch"}}) {
        SCOPED_TRACE(d.what);
        temp_dir copy;
        for (const auto& entry : fs::directory_iterator(dir.path())) {
            if (entry.path().filename() != "lock") {
                fs::copy(entry.path(), copy.path() / entry.path().filename());
            }
        }
        const fs::path damaged = copy.path() / newest.filename();
        const auto size = fs::file_size(damaged);
        if (d.reason == "truncated") {
            fs::resize_file(damaged, size / 2);
        } else {
            std::fstream f{damaged, std::ios::in | std::ios::out | std::ios::binary};
            const auto at = static_cast<std::streamoff>(32 + (size - 32) / 2);
            f.seekg(at);
            char byte = 0;
            f.read(&byte, 1);
            byte = static_cast<char>(byte ^ 0x5A);
            f.seekp(at);
            f.write(&byte, 1);
        }
        auto s = start(copy, args);
        const std::string log = s->log();
        const auto restored = restored_tick(log);
        ASSERT_TRUE(restored.has_value()) << last_lines(log);
        EXPECT_EQ(*restored, previous_tick) << last_lines(log);
        bool explained = false;
        for (const std::string& line : ecsnet::test::lines(log)) {
            explained = explained || (line.find(newest.filename().string()) != std::string::npos &&
                                      line.find(d.reason) != std::string::npos);
        }
        EXPECT_TRUE(explained) << "no line names " << newest.filename() << " and '" << d.reason
                               << "':\n"
                               << last_lines(log);
        const world_view world = observe(s->port());
        for (const Entity e : first) {
            EXPECT_TRUE(world.contains(e)) << str(e) << " of the previous checkpoint is missing";
        }
        for (const Entity e : second) {
            EXPECT_FALSE(world.contains(e)) << str(e) << " exists only in the damaged checkpoint";
        }
        ASSERT_TRUE(s->stop()) << last_lines(s->log());
        EXPECT_EQ(ecsnet::test::sanitizer_report(s->log()), "");
    }
}

}  // namespace
