#include "fuzz_targets.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ecsnet/demo/game.hpp"
#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/hash.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/protocol/schema.hpp"
#include "ecsnet/server/simulation/commands.hpp"

namespace ecsnet::fuzz {

namespace {

namespace proto = ecsnet::protocol;
using ecs::Entity;
using ecs::World;
using proto::client_message;
using proto::command_result;
using proto::component_set;
using proto::component_info;
using proto::component_value;
using proto::Owner;
using demo::Health;
using demo::Lifetime;
using demo::Name;
using demo::Position;
using demo::Velocity;
using wire::ErrorCode;

// The demo game's types, as its server registers them: Owner (0), Position, Velocity, Health,
// Lifetime, Name (1-5).
const proto::component_registry& demo_types() {
    static const proto::component_registry types = [] {
        proto::component_registry r;
        demo::register_components(r);
        return r;
    }();
    return types;
}

// ---- failures -------------------------------------------------------------------------------

[[noreturn]] void fail(const char* file, int line, const char* condition,
                       const std::string& detail) {
    std::string message = std::string{file} + ":" + std::to_string(line) + ": " + condition;
    if (!detail.empty()) {
        message += " -- " + detail;
    }
    report_failure(message);
}

// `detail` is evaluated only when the check fails.
#define ECSNET_FUZZ_CHECK(condition, detail)                                \
    do {                                                                    \
        if (!(condition)) {                                                 \
            ::ecsnet::fuzz::fail(__FILE__, __LINE__, #condition, (detail)); \
        }                                                                   \
    } while (false)

// ECSNET_FUZZ_TRACE=1 (tracing(), failure.cpp) prints every step to stderr, to understand a
// finding.
template <typename... Parts>
void trace(const Parts&... parts) {
    if (tracing()) {
        std::string line;
        ((line += parts), ...);
        std::fprintf(stderr, "trace: %s\n", line.c_str());
    }
}

// Runs one input; an exception escaping the code under test is a finding.
template <typename Fn>
void guarded(Fn&& fn) {
    try {
        fn();
    } catch (const check_failure&) {
        throw;
    } catch (const std::exception& e) {
        fail(__FILE__, __LINE__, "no exception escapes", e.what());
    }
}

// ---- input ----------------------------------------------------------------------------------

// Reads the fuzz input front to back; past its end every read yields zeros.
class byte_reader {
public:
    byte_reader(const std::uint8_t* data, std::size_t size) noexcept : data_{data}, size_{size} {}

    [[nodiscard]] bool empty() const noexcept { return pos_ >= size_; }

    std::uint8_t u8() noexcept { return pos_ < size_ ? data_[pos_++] : std::uint8_t{0}; }
    std::uint16_t u16() noexcept {
        const std::uint16_t lo = u8();
        return static_cast<std::uint16_t>(lo | (u8() << 8U));
    }
    std::uint32_t u32() noexcept {
        const std::uint32_t lo = u16();
        return lo | (std::uint32_t{u16()} << 16U);
    }
    std::uint64_t u64() noexcept {
        const std::uint64_t lo = u32();
        return lo | (std::uint64_t{u32()} << 32U);
    }
    float f32() noexcept { return std::bit_cast<float>(u32()); }

    // Up to n bytes.
    std::span<const std::uint8_t> take(std::size_t n) noexcept {
        n = std::min(n, size_ - std::min(pos_, size_));
        const std::span<const std::uint8_t> out{data_ + pos_, n};
        pos_ += n;
        return out;
    }

    // A string: u8 n; below 192, n raw bytes (any encoding); otherwise (n - 191) * 256 bytes
    // of a repeated character, to reach far past every length limit cheaply.
    std::string text() {
        const std::uint8_t n = u8();
        if (n < 192) {
            const auto bytes = take(n);
            return std::string{bytes.begin(), bytes.end()};
        }
        return std::string(static_cast<std::size_t>(n - 191) * 256,
                           static_cast<char>('a' + n % 26));
    }

private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_{0};
};

// ---- descriptions for failure messages -------------------------------------------------------

// A value by its fields, as a generic client shows it.
std::string describe(const proto::schema& types, const component_value& v) {
    const component_info* info = types.find(v.name);
    if (info == nullptr) {
        return v.name + "=?";
    }
    if (info->is_string) {
        return v.name + "=" + std::to_string(v.text.size()) + " bytes";
    }
    if (v.bytes.size() != info->value_bytes()) {
        return v.name + "=" + std::to_string(v.bytes.size()) + " bytes?";
    }
    std::string out = v.name + "=";
    for (std::size_t i = 0; i < info->fields.size(); ++i) {
        out += (i == 0 ? "" : ",") + proto::to_string(proto::read_field(*info, v.bytes, i));
    }
    return out;
}

std::string describe(const command_result& r) {
    return "request " + std::to_string(r.request_id) + (r.ok ? " ok " : " rejected ") +
           proto::to_string(r.code) + " entity " + ecs::to_string(r.entity) + ": " + r.message;
}

// ---- a model of the world ------------------------------------------------------------------

// An entity's values by wire name: the model does not depend on the order values were set in.
using value_map = std::map<std::string, component_value>;

std::string describe(const value_map& values) {
    std::string out = "{";
    for (const auto& [name, v] : values) {
        // Appended in two steps: `" " + std::string&&` trips GCC 12's -Wrestrict at -O3.
        out += ' ';
        out += describe(demo_types().types(), v);
    }
    return out + " }";
}

struct entity_state {
    Entity entity;
    value_map components;
    friend bool operator==(const entity_state&, const entity_state&) = default;
};
using world_state = std::map<std::uint32_t, entity_state>;

// e's value of registered type `id` as the wire carries it (canonical bytes or text).
component_value value_in(const World& world, const proto::component_registry& types,
                         std::uint32_t id, Entity e) {
    return types.value(world, id, e);
}

world_state capture(const World& world) {
    const proto::component_registry& types = demo_types();
    world_state out;
    world.each([&](Entity e) {
        value_map values;
        for (std::uint32_t id = 0; id < types.size(); ++id) {
            if (types.ops(id).contains(world, e)) {
                component_value v = value_in(world, types, id, e);
                const std::string name = v.name;
                values.emplace(name, std::move(v));
            }
        }
        out.emplace(e.index(), entity_state{e, std::move(values)});
    });
    return out;
}

// The Owner value of an entity of the model, if any.
std::optional<std::uint32_t> owner_in(const value_map& values) {
    const auto it = values.find(std::string{proto::replicated<Owner>::name});
    if (it == values.end() || it->second.bytes.size() != proto::value_bytes_v<Owner>) {
        return std::nullopt;
    }
    return proto::unpack<Owner>(it->second.bytes.data()).client;
}

// The first difference, for failure messages.
std::string difference(const world_state& expected, const world_state& actual) {
    for (const auto& [index, want] : expected) {
        const auto it = actual.find(index);
        if (it == actual.end()) {
            return "expected " + ecs::to_string(want.entity) + " " + describe(want.components) +
                   ", world has nothing at index " + std::to_string(index);
        }
        if (!(it->second == want)) {
            return "expected " + ecs::to_string(want.entity) + " " + describe(want.components) +
                   ", world has " + ecs::to_string(it->second.entity) + " " +
                   describe(it->second.components);
        }
    }
    for (const auto& [index, got] : actual) {
        if (!expected.contains(index)) {
            return "world has unexpected " + ecs::to_string(got.entity) + " " +
                   describe(got.components);
        }
    }
    return "no difference";
}

std::size_t owned_in(const world_state& state, std::uint32_t client) {
    return static_cast<std::size_t>(std::count_if(state.begin(), state.end(), [&](const auto& kv) {
        return owner_in(kv.second.components) == client;
    }));
}

// Why a command naming `target` must be rejected, or nothing when it must apply.
std::optional<ErrorCode> target_rejection(const world_state& state, std::uint32_t client,
                                          Entity target) {
    const auto it = state.find(target.index());
    if (it == state.end()) {
        return ErrorCode::UnknownEntity;
    }
    if (it->second.entity.version() != target.version()) {
        return ErrorCode::StaleVersion;
    }
    if (owner_in(it->second.components) != client) {
        return ErrorCode::NotOwner;
    }
    return std::nullopt;
}

// ---- the server side: world, commands, game systems, replication to a mirror ----------------

constexpr float tick_rate = 20.0F;
constexpr float half_extent = 1000.0F;

class server_sim {
public:
    explicit server_sim(server::command_limits limits)
        : world_{World::make(ecs::world_options{.entities = {.min_free_indices = 0}})},
          limits_{limits},
          commands_{*world_, demo_types(), limits} {
        demo::add_systems(scheduler_, half_extent);
        join_mirror();
    }

    [[nodiscard]] std::uint64_t tick_count() const noexcept { return tick_; }
    // The entities the last spawns returned, oldest first (some destroyed since).
    [[nodiscard]] const std::vector<Entity>& known() const noexcept { return known_; }
    static constexpr std::size_t max_known = 32;

    // A command (or any message) as the tick applies it, checked against the model.
    command_result apply(std::uint32_t client, const client_message& message) {
        clients_.insert(client);
        const world_state before = capture(*world_);
        const command_result result = commands_.apply(client, message);
        const world_state after = capture(*world_);
        trace("client ", std::to_string(client), " ", message_name(message), " -> ",
              describe(result));
        check_command(client, message, result, before, after);
        dirty_ = dirty_ || result.ok;
        if (result.ok && std::holds_alternative<proto::spawn>(message)) {
            if (known_.size() == max_known) {
                known_.erase(known_.begin());  // the script's selectors reach the last 32
            }
            known_.push_back(result.entity);
        }
        send(proto::server_control{result});
        check_invariants();
        return result;
    }

    // The owner left: its entities go.
    void despawn(std::uint32_t client) {
        trace("despawn client ", std::to_string(client));
        clients_.insert(client);
        const world_state before = capture(*world_);
        world_state expected = before;
        std::erase_if(expected,
                      [&](const auto& kv) { return owner_in(kv.second.components) == client; });
        const std::size_t n = commands_.despawn_all_of(client);
        ECSNET_FUZZ_CHECK(n == before.size() - expected.size(),
                          "despawned " + std::to_string(n) + " of " +
                              std::to_string(before.size() - expected.size()));
        const world_state after = capture(*world_);
        ECSNET_FUZZ_CHECK(after == expected, difference(expected, after));
        dirty_ = dirty_ || n != 0;
        check_invariants();
    }

    // A server system destroys an entity (like the lifetime system).
    void server_destroy(Entity e) {
        if (world_->valid(e)) {
            world_->destroy(e);
            dirty_ = true;
        }
        check_invariants();
    }

    // One tick: game systems, then the delta and a checksum to the mirror.
    void tick() {
        ++tick_;
        trace("tick ", std::to_string(tick_), ", ", std::to_string(world_->alive()), " alive");
        (void)scheduler_.run(*world_);
        const auto changes = world_->take_changes();
        deliver(encoder_.encode_delta(*world_, changes, tick_));
        deliver(proto::encode(proto::server_control{
            proto::checksum_report{tick_, proto::checksum::of_world(*world_, demo_types()),
                                   static_cast<std::uint32_t>(world_->alive())}}));
        ECSNET_FUZZ_CHECK(mirror_.statistics().checksums_mismatched == 0, mirror_.error());
        dirty_ = false;
        check_mirror();
        check_invariants();
    }

    // A ResyncRequest or a join: the snapshot at the end of the current tick.
    void resync() {
        trace("resync at tick ", std::to_string(tick_));
        if (dirty_) {
            tick();  // the server writes the world only in ticks; snapshots come between them
        }
        for (const auto& frame :
             encoder_.encode_snapshot(*world_, tick_, {.max_chunk_bytes = 256})) {
            deliver(frame);
        }
        ECSNET_FUZZ_CHECK(mirror_.ready(), mirror_.error());
        check_mirror();
    }

    // A control frame the server sends: the client must accept it as it was meant.
    void send(const proto::server_control& message) {
        const proto::frame frame = proto::encode(message);
        std::string why;
        const wire::ServerMessage* root = proto::verify_server_frame(*frame, &why);
        ECSNET_FUZZ_CHECK(root != nullptr, why);
        const auto decoded = proto::decode_server_control(*root, &why);
        ECSNET_FUZZ_CHECK(decoded.has_value(), why);
        ECSNET_FUZZ_CHECK(*decoded == message, "control message changed on the wire");
        ECSNET_FUZZ_CHECK(mirror_.apply(*root), mirror_.error());
    }

private:
    void join_mirror() {
        for (const auto& frame : encoder_.encode_snapshot(*world_, tick_)) {
            deliver(frame);
        }
        ECSNET_FUZZ_CHECK(mirror_.ready(), mirror_.error());
    }

    void deliver(const proto::frame& frame) {
        std::string why;
        ECSNET_FUZZ_CHECK(
            frame->size() <= proto::frame_prefix_bytes + proto::default_max_server_frame,
            std::to_string(frame->size()));
        const wire::ServerMessage* root = proto::verify_server_frame(*frame, &why);
        ECSNET_FUZZ_CHECK(root != nullptr, why);
        ECSNET_FUZZ_CHECK(mirror_.apply(*root), mirror_.error());
    }

    void check_command(std::uint32_t client, const client_message& message,
                       const command_result& result, const world_state& before,
                       const world_state& after) {
        world_state expected = before;
        std::optional<ErrorCode> rejection;
        std::optional<std::uint32_t> request_id;
        if (const auto* s = std::get_if<proto::spawn>(&message)) {
            request_id = s->request_id;
            if (before.size() >= limits_.max_entities) {
                rejection = ErrorCode::WorldFull;
            } else if (owned_in(before, client) >= limits_.max_entities_per_client) {
                rejection = ErrorCode::EntityQuota;
            } else if (result.ok) {
                ECSNET_FUZZ_CHECK(
                    !before.contains(result.entity.index()),
                    "spawned " + ecs::to_string(result.entity) + " over a live index");
                value_map components;
                for (const component_value& v : s->components.values()) {
                    components[v.name] = v;
                }
                const auto owner = proto::pack(Owner{client});
                components[std::string{proto::replicated<Owner>::name}] = component_value{
                    std::string{proto::replicated<Owner>::name}, {owner.begin(), owner.end()}, {}};
                expected[result.entity.index()] = entity_state{result.entity, components};
            }
        } else if (const auto* d = std::get_if<proto::destroy>(&message)) {
            request_id = d->request_id;
            rejection = target_rejection(before, client, d->entity);
            if (!rejection) {
                expected.erase(d->entity.index());
            }
        } else if (const auto* c = std::get_if<proto::set_components>(&message)) {
            request_id = c->request_id;
            rejection = target_rejection(before, client, c->entity);
            if (!rejection) {
                auto& target = expected[c->entity.index()].components;
                for (const component_value& v : c->components.values()) {
                    target[v.name] = v;
                }
            }
        } else if (const auto* r = std::get_if<proto::remove_components>(&message)) {
            request_id = r->request_id;
            rejection = target_rejection(before, client, r->entity);
            if (!rejection) {
                auto& target = expected[r->entity.index()].components;
                for (const std::string& name : r->types) {
                    if (target.erase(name) == 0) {
                        rejection = ErrorCode::ComponentMissing;  // all or nothing
                    }
                }
            }
        } else {
            rejection = ErrorCode::Malformed;  // not a command
        }
        const std::string what = "client " + std::to_string(client) + ": " + describe(result);
        if (request_id) {
            ECSNET_FUZZ_CHECK(result.request_id == *request_id, what);
        }
        if (rejection) {
            ECSNET_FUZZ_CHECK(!result.ok && result.code == *rejection,
                              what + "; expected " + proto::to_string(*rejection));
            ECSNET_FUZZ_CHECK(after == before,
                              what + "; rejected but " + difference(before, after));
        } else {
            ECSNET_FUZZ_CHECK(result.ok && result.code == ErrorCode::None, what);
            ECSNET_FUZZ_CHECK(after == expected, what + "; " + difference(expected, after));
        }
    }

    // Ownership counts follow the Owner components; quotas hold.
    void check_invariants() {
        std::map<std::uint32_t, std::size_t> owned;
        world_->each([&](Entity e) {
            if (const Owner* o = world_->try_get<Owner>(e)) {
                ++owned[o->client];
                clients_.insert(o->client);
            }
        });
        for (const std::uint32_t client : clients_) {
            const auto it = owned.find(client);
            const std::size_t n = it == owned.end() ? 0 : it->second;
            ECSNET_FUZZ_CHECK(commands_.owned_by(client) == n,
                              "client " + std::to_string(client) + " owns " + std::to_string(n) +
                                  ", owned_by says " + std::to_string(commands_.owned_by(client)));
            ECSNET_FUZZ_CHECK(n <= limits_.max_entities_per_client,
                              "client " + std::to_string(client) + " owns " + std::to_string(n));
        }
        ECSNET_FUZZ_CHECK(world_->alive() <= limits_.max_entities,
                          std::to_string(world_->alive()) + " entities alive");
    }

    // The mirror equals the world after every tick.
    void check_mirror() {
        const proto::component_registry& types = demo_types();
        ECSNET_FUZZ_CHECK(mirror_.checksum() == proto::checksum::of_world(*world_, types),
                          "checksum");
        ECSNET_FUZZ_CHECK(mirror_.size() == world_->alive(),
                          std::to_string(mirror_.size()) + " mirrored, " +
                              std::to_string(world_->alive()) + " alive");
        world_->each([&](Entity e) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "mirror lacks " + ecs::to_string(e));
            for (std::uint32_t id = 0; id < types.size(); ++id) {
                const component_info& info = types.info(id);
                const bool held = types.ops(id).contains(*world_, e);
                ECSNET_FUZZ_CHECK(held == mirror_.has(e, id),
                                  info.name + " of " + ecs::to_string(e) +
                                      (held ? " missing" : " extra") + " in the mirror");
                if (!held) {
                    continue;
                }
                const component_value want = value_in(*world_, types, id, e);
                const bool same =
                    info.is_string
                        ? mirror_.text(e, id) != nullptr && *mirror_.text(e, id) == want.text
                        : std::ranges::equal(mirror_.value(e, id), want.bytes);
                ECSNET_FUZZ_CHECK(same, info.name + " of " + ecs::to_string(e) +
                                            " differs in the mirror");
            }
        });
    }

    std::shared_ptr<World> world_;  // outlives commands_, which listens to its signals
    server::command_limits limits_;
    server::command_processor commands_;
    ecs::Scheduler scheduler_{1.0 / tick_rate};
    proto::replication_encoder encoder_{demo_types()};
    proto::mirror mirror_{demo_types().types()};
    std::uint64_t tick_{0};
    bool dirty_{false};  // commands applied since the last tick
    std::vector<Entity> known_;
    std::set<std::uint32_t> clients_;
};

std::optional<std::uint32_t> request_id_of(const client_message& message) {
    return std::visit(
        [](const auto& m) -> std::optional<std::uint32_t> {
            if constexpr (requires { m.request_id; }) {
                return m.request_id;
            } else {
                return std::nullopt;
            }
        },
        message);
}

// decode(encode(m)) == m for every message the decoder produced.
void check_round_trip(const client_message& message) {
    const proto::frame frame = proto::encode(message, demo_types().types());
    const proto::decoded_client again = proto::decode_client_frame(*frame, demo_types().types());
    ECSNET_FUZZ_CHECK(again.message.has_value(), again.error.message);
    ECSNET_FUZZ_CHECK(*again.message == message, "message changed through encode and decode");
}

// ---- fuzz_client_frame ----------------------------------------------------------------------

// One connection after another on the same byte stream: a session that the server closes is
// followed by a fresh one, as if the rest of the bytes came from a new connection.
class session_sim {
public:
    explicit session_sim(server_sim& sim) : sim_{sim} {}

    void on_frame(std::span<const std::uint8_t> bytes) {
        proto::decoded_client decoded = proto::decode_client_frame(bytes, demo_types().types());
        trace("frame of ", std::to_string(bytes.size()), " bytes: ",
              decoded.message ? message_name(*decoded.message) : decoded.error.message.c_str());
        if (!decoded.message) {
            const proto::decode_error& error = decoded.error;
            if (error.fatal) {
                disconnect(error.message);
                return;
            }
            if (error.input_tick) {
                // A refused Input: answered by InputRejected, never by a CommandResult.
                ECSNET_FUZZ_CHECK(!error.request_id.has_value(), error.message);
                sim_.send(proto::input_rejected{*error.input_tick, error.code, error.message, 1});
                return;
            }
            ECSNET_FUZZ_CHECK(error.request_id.has_value(), error.message);
            sim_.send(command_result{*error.request_id, false, error.code, error.message, {}});
            return;
        }
        check_round_trip(*decoded.message);
        handle(*decoded.message);
    }

    // The connection ends: the owner's entities go at the next tick.
    void close() {
        if (joined_) {
            sim_.despawn(owner_);
            sim_.tick();
        }
        joined_ = false;
        owner_ = 0;
    }

private:
    void handle(const client_message& message) {
        if (const auto* h = std::get_if<proto::hello>(&message)) {
            if (joined_) {
                disconnect("Hello sent twice");
                return;
            }
            if (h->version < proto::oldest_protocol_version || h->version > proto::protocol_version) {
                disconnect("protocol version " + std::to_string(h->version) + " not supported");
                return;
            }
            if (h->client_name.empty()) {
                owner_ = next_owner_++;
            } else {
                const auto [it, inserted] = owner_ids_.try_emplace(h->client_name, next_owner_);
                next_owner_ += inserted ? 1 : 0;
                owner_ = it->second;
            }
            joined_ = true;
            sim_.send(proto::welcome{owner_, h->version, tick_rate, sim_.tick_count(), 1,
                                     {}, {}, demo_types().types()});
            sim_.resync();
            return;
        }
        if (const auto* p = std::get_if<proto::ping>(&message)) {
            sim_.send(proto::pong{p->nonce, sim_.tick_count()});
            return;
        }
        const bool resync = std::holds_alternative<proto::resync_request>(message);
        if (!joined_) {
            if (resync) {
                disconnect("ResyncRequest before Hello");
                return;
            }
            sim_.send(command_result{request_id_of(message).value_or(0),
                                     false,
                                     ErrorCode::NotJoined,
                                     "send Hello before commands",
                                     {}});
            return;
        }
        if (resync) {
            sim_.resync();
            return;
        }
        if (std::holds_alternative<proto::focus>(message)) {
            return;  // as session.cpp: no reply, and this simulation has no interest management
        }
        (void)sim_.apply(owner_, message);
        sim_.tick();
    }

    void disconnect(const std::string& reason) {
        sim_.send(proto::disconnect{reason});
        close();
    }

    server_sim& sim_;
    bool joined_{false};
    std::uint32_t owner_{0};
    std::map<std::string, std::uint32_t> owner_ids_;
    std::uint32_t next_owner_{1};
};

// ---- fuzz_commands --------------------------------------------------------------------------

struct expected_error {
    ErrorCode code;
    bool fatal;
};

// Values a client may send: finite numbers, names of at most 64 bytes of UTF-8, no Owner.
bool client_may_send(const component_set& set) {
    bool ok = true;
    const auto finite = [](float a, float b) { return std::isfinite(a) && std::isfinite(b); };
    if (const auto& p = set.get<Position>(); p && !finite(p->x, p->y)) {
        ok = false;
    }
    if (const auto& v = set.get<Velocity>(); v && !finite(v->x, v->y)) {
        ok = false;
    }
    if (set.get<Owner>()) {
        ok = false;
    }
    if (const auto& n = set.get<Name>();
        n && (n->value.size() > demo::max_name_bytes || !proto::valid_utf8(n->value))) {
        ok = false;
    }
    return ok;
}

// What decode_client_frame must make of encode(message), worked out independently.
std::variant<client_message, expected_error> expected_decoding(const client_message& message) {
    // A RemoveComponent is sent by wire ids (removal_frame): expected_removal.
    constexpr expected_error malformed{ErrorCode::Malformed, false};
    constexpr expected_error invalid{ErrorCode::InvalidValue, false};
    constexpr expected_error fatal{ErrorCode::Malformed, true};
    if (const auto* h = std::get_if<proto::hello>(&message)) {
        if (h->client_name.size() > proto::max_client_name_bytes ||
            !proto::valid_utf8(h->client_name) || h->auth_token.size() > proto::max_token_bytes) {
            return fatal;
        }
    } else if (const auto* s = std::get_if<proto::spawn>(&message)) {
        if (!client_may_send(s->components)) {
            return invalid;
        }
    } else if (const auto* d = std::get_if<proto::destroy>(&message)) {
        if (d->entity.is_null()) {
            return malformed;
        }
    } else if (const auto* c = std::get_if<proto::set_components>(&message)) {
        if (c->entity.is_null()) {
            return malformed;
        }
        if (!client_may_send(c->components)) {
            return invalid;
        }
        if (c->components.empty()) {
            return malformed;
        }
    } else if (const auto* q = std::get_if<proto::resync_request>(&message)) {
        if (q->reason.size() > proto::max_reason_bytes || !proto::valid_utf8(q->reason)) {
            return fatal;
        }
    }
    return message;
}

// The RemoveComponent frame a client sends for the wire ids set in `mask`, ascending, whether
// the server has them or not (a client's schema could be another server's).
proto::frame removal_frame(std::uint32_t request_id, Entity e, std::uint64_t mask) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<std::uint16_t> ids;
    for (std::uint16_t id = 0; id < 64; ++id) {
        if (((mask >> id) & 1U) != 0) {
            ids.push_back(id);
        }
    }
    const wire::EntityRef ref{e.index(), e.version()};
    const auto body = wire::CreateRemoveComponent(fbb, request_id, &ref, fbb.CreateVector(ids));
    return proto::finish_frame(
        fbb, wire::CreateClientMessage(fbb, wire::ClientBody::RemoveComponent, body.Union()));
}

// What decode_client_frame must make of removal_frame(...), worked out independently: ids in
// order, the first unknown one (Malformed) or server-only one (Owner: InvalidValue) refuses the
// command, as does a null entity or no id at all (Malformed).
std::variant<client_message, expected_error> expected_removal(std::uint32_t request_id, Entity e,
                                                              std::uint64_t mask) {
    constexpr expected_error malformed{ErrorCode::Malformed, false};
    constexpr expected_error invalid{ErrorCode::InvalidValue, false};
    if (e.is_null()) {
        return malformed;
    }
    const proto::schema& types = demo_types().types();
    std::vector<std::string> names;
    for (std::uint32_t id = 0; id < 64; ++id) {
        if (((mask >> id) & 1U) == 0) {
            continue;
        }
        const component_info* info = types.find(id);
        if (info == nullptr) {
            return malformed;
        }
        if (info->written_by == proto::writer::server) {
            return invalid;
        }
        names.push_back(info->name);
    }
    if (names.empty()) {
        return malformed;
    }
    return client_message{proto::remove_components{request_id, e, std::move(names)}};
}

class command_script {
public:
    command_script(server_sim& sim, byte_reader& in) : sim_{sim}, in_{in} {}

    void run() {
        while (!in_.empty()) {
            const std::uint8_t op = in_.u8();
            const auto kind = static_cast<command_op>(op & 7U);
            const std::uint32_t client = command_clients[(op >> 3U) & 7U];
            const unsigned variant = op >> 6U;
            switch (kind) {
                case command_op::spawn:
                    send(client, proto::spawn{++request_id_, read_components()});
                    break;
                case command_op::destroy:
                    send(client, proto::destroy{++request_id_, read_entity()});
                    break;
                case command_op::set: {
                    const Entity e = read_entity();
                    send(client, proto::set_components{++request_id_, e, read_components()});
                    break;
                }
                case command_op::remove: {
                    const std::uint64_t mask = (variant & 1U) != 0 ? in_.u64() : in_.u8();
                    const Entity e = read_entity();
                    ++request_id_;
                    send(client, *removal_frame(request_id_, e, mask),
                         expected_removal(request_id_, e, mask), request_id_);
                    break;
                }
                case command_op::tick:
                    if ((variant & 1U) != 0) {
                        sim_.resync();
                    } else {
                        sim_.tick();
                    }
                    break;
                case command_op::despawn:
                    sim_.despawn(client);
                    break;
                case command_op::not_a_command:
                    if (variant == 1) {
                        send(client, proto::ping{in_.u64()});
                    } else if (variant == 2) {
                        send(client, proto::resync_request{in_.text()});
                    } else {
                        const std::uint32_t version =
                            variant == 3 ? in_.u32() : proto::protocol_version;
                        send(client, proto::hello{version, in_.text(), in_.text()});
                    }
                    break;
                case command_op::server_destroy:
                    sim_.server_destroy(read_entity());
                    break;
            }
        }
    }

private:
    // u8 presence bits in wire-id order (Owner, Position, Velocity, Health, Lifetime, Name),
    // then each present value: floats as raw bits, integers raw, the name as byte_reader::text.
    component_set read_components() {
        component_set out;
        const std::uint8_t present = in_.u8();
        if ((present & 1U) != 0) {
            out.set(Owner{in_.u32()});
        }
        if ((present & 2U) != 0) {
            const float x = in_.f32();
            out.set(Position{x, in_.f32()});
        }
        if ((present & 4U) != 0) {
            const float x = in_.f32();
            out.set(Velocity{x, in_.f32()});
        }
        if ((present & 8U) != 0) {
            out.set(Health{static_cast<std::int32_t>(in_.u32())});
        }
        if ((present & 16U) != 0) {
            out.set(Lifetime{in_.u32()});
        }
        if ((present & 32U) != 0) {
            out.set(Name{in_.text()});
        }
        return out;
    }

    // u8 selector: low 2 bits 0/1 = an entity one of the last 32 spawns returned (bits 2-6 pick
    // it, oldest first; it may be destroyed by now), 2 = that entity one version off (bit 7:
    // newer, else older), 3 (or no entity spawned yet) = raw u32 index and u32 version.
    Entity read_entity() {
        const std::uint8_t sel = in_.u8();
        const auto& known = sim_.known();
        if ((sel & 3U) == 3U || known.empty()) {
            const std::uint32_t index = in_.u32();
            return Entity{index, in_.u32()};
        }
        const Entity k = known[((sel >> 2U) & 31U) % known.size()];
        if ((sel & 3U) == 2U) {
            return Entity{k.index(), (sel & 0x80U) != 0 ? k.version() + 1 : k.version() - 1};
        }
        return k;
    }

    // Through the wire codec, as the server gets it; what decodes goes to the processor.
    void send(std::uint32_t client, const client_message& message) {
        const proto::frame frame = proto::encode(message, demo_types().types());
        send(client, *frame, expected_decoding(message), request_id_of(message));
    }

    void send(std::uint32_t client, std::span<const std::uint8_t> frame,
              const std::variant<client_message, expected_error>& expected,
              std::optional<std::uint32_t> request_id) {
        const proto::decoded_client decoded = proto::decode_client_frame(frame, demo_types().types());
        if (const auto* want = std::get_if<client_message>(&expected)) {
            ECSNET_FUZZ_CHECK(decoded.message.has_value(),
                              "decoder refused a valid message: " + decoded.error.message);
            ECSNET_FUZZ_CHECK(*decoded.message == *want, "decoder changed the message");
        } else {
            const auto& error = std::get<expected_error>(expected);
            ECSNET_FUZZ_CHECK(!decoded.message.has_value(), "decoder accepted an invalid message");
            ECSNET_FUZZ_CHECK(
                decoded.error.code == error.code && decoded.error.fatal == error.fatal,
                "decoder error " + std::string{proto::to_string(decoded.error.code)} + ": " +
                    decoded.error.message);
            if (!error.fatal) {
                ECSNET_FUZZ_CHECK(decoded.error.request_id == request_id, decoded.error.message);
            }
            return;
        }
        (void)sim_.apply(client, *decoded.message);
    }

    server_sim& sim_;
    byte_reader& in_;
    std::uint32_t request_id_{0};
};

// ---- fuzz_mirror ----------------------------------------------------------------------------

class mirror_driver {
public:
    mirror_driver(proto::schema types, proto::mirror::options options, bool callbacks)
        : max_index_{options.max_index}, mirror_{std::move(types), options} {
        if (callbacks) {
            install_callbacks();
        }
    }

    // What a client connection does with one frame.
    void on_frame(std::span<const std::uint8_t> bytes) {
        std::string why;
        const wire::ServerMessage* message = proto::verify_server_frame(bytes, &why);
        if (message == nullptr) {
            ECSNET_FUZZ_CHECK(!why.empty(), "a refused frame needs a reason");
            return;
        }
        trace("frame of ", std::to_string(bytes.size()),
              " bytes: ", wire::EnumNameServerBody(message->body_type()));
        const proto::mirror::stats before = mirror_.statistics();
        const std::uint64_t sum_before = mirror_.checksum();
        switch (message->body_type()) {
            case wire::ServerBody::Snapshot:
            case wire::ServerBody::Delta:
            case wire::ServerBody::Checksum:
                if (!mirror_.apply(*message)) {
                    ECSNET_FUZZ_CHECK(!mirror_.error().empty(), "refused without a reason");
                }
                break;
            default: {
                const auto control = proto::decode_server_control(*message, &why);
                if (control) {
                    check_control_round_trip(*control);
                    ECSNET_FUZZ_CHECK(mirror_.apply(*message),
                                      "control message: " + mirror_.error());
                    ECSNET_FUZZ_CHECK(mirror_.checksum() == sum_before,
                                      "a control message changed the mirror");
                } else {
                    ECSNET_FUZZ_CHECK(!why.empty(), "a refused control message needs a reason");
                    (void)mirror_.apply(*message);  // the API accepts any verified message
                }
            }
        }
        const proto::mirror::stats& after = mirror_.statistics();
        ECSNET_FUZZ_CHECK(after.snapshots >= before.snapshots && after.deltas >= before.deltas &&
                              after.inconsistencies >= before.inconsistencies &&
                              after.entered >= before.entered && after.left >= before.left,
                          "statistics went backwards");
        check_state();
        trace("  mirror: ", mirror_.ready() ? "ready" : "not ready", ", tick ",
              std::to_string(mirror_.tick()), ", ", std::to_string(mirror_.size()),
              " entities, error: ", mirror_.error());
        if (auto reason = mirror_.take_resync_reason()) {
            ECSNET_FUZZ_CHECK(!mirror_.take_resync_reason().has_value(), "reason given twice");
            ECSNET_FUZZ_CHECK(!mirror_.ready(), "ready while awaiting a resync");
            // The client sends it as a ResyncRequest (truncated as connection.cpp does): the
            // server must not take it for a malformed frame.
            const proto::frame request =
                proto::encode(proto::resync_request{reason->substr(0, proto::max_reason_bytes)},
                              mirror_.types());
            const proto::decoded_client decoded = proto::decode_client_frame(*request, mirror_.types());
            ECSNET_FUZZ_CHECK(decoded.message.has_value(),
                              "server refuses the resync reason: " + decoded.error.message);
        }
    }

private:
    void install_callbacks() {
        auto& events = mirror_.events();
        events.on_spawn = [this](Entity e) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "on_spawn of absent " + ecs::to_string(e));
        };
        events.on_update = [this](Entity e, std::uint32_t wire_id) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "on_update of absent " + ecs::to_string(e));
            ECSNET_FUZZ_CHECK(mirror_.has(e, wire_id), "on_update of a component " +
                                                            ecs::to_string(e) + " lacks: " +
                                                            std::to_string(wire_id));
        };
        events.on_remove = [this](Entity e, std::uint32_t wire_id) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "on_remove of absent " + ecs::to_string(e));
            ECSNET_FUZZ_CHECK(wire_id < mirror_.types().size(), std::to_string(wire_id));
            ECSNET_FUZZ_CHECK(!mirror_.has(e, wire_id),
                              "on_remove of a component still held by " + ecs::to_string(e));
        };
        events.on_destroy = [this](Entity e) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "on_destroy of absent " + ecs::to_string(e));
        };
        events.on_enter = [this](Entity e) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "on_enter of absent " + ecs::to_string(e));
        };
        events.on_leave = [this](Entity e) {
            ECSNET_FUZZ_CHECK(mirror_.contains(e), "on_leave of absent " + ecs::to_string(e));
        };
        events.on_snapshot = [this](std::uint64_t tick, std::size_t entities) {
            ECSNET_FUZZ_CHECK(tick == mirror_.tick() && entities == mirror_.size(),
                              "on_snapshot arguments");
        };
        events.on_checksum = [this](std::uint64_t tick, bool) {
            ECSNET_FUZZ_CHECK(tick == mirror_.tick(), "on_checksum tick");
        };
    }

    void check_control_round_trip(const proto::server_control& control) {
        proto::server_control expected = control;
        if (auto* r = std::get_if<proto::command_result>(&expected); r && r->entity.is_null()) {
            r->entity = Entity{};  // a null entity travels as an absent reference
        }
        const proto::frame frame = proto::encode(control);
        std::string why;
        const wire::ServerMessage* root = proto::verify_server_frame(*frame, &why);
        ECSNET_FUZZ_CHECK(root != nullptr, why);
        const auto again = proto::decode_server_control(*root, &why);
        ECSNET_FUZZ_CHECK(again.has_value(), why);
        ECSNET_FUZZ_CHECK(*again == expected, "control message changed through encode and decode");
    }

    // each() walks live entities in index order; the checksum counts exactly those and their
    // components (no component outlives its entity); every value held is valid and has its
    // type's size (a string: at most max_bytes of UTF-8).
    void check_state() {
        const proto::schema& types = mirror_.types();
        std::size_t count = 0;
        std::optional<std::uint32_t> last;
        std::uint64_t sum = 0;
        mirror_.each([&](Entity e) {
            ECSNET_FUZZ_CHECK(!e.is_null() && e.index() <= max_index_, ecs::to_string(e));
            ECSNET_FUZZ_CHECK(!last || e.index() > *last, "each() out of index order");
            ECSNET_FUZZ_CHECK(mirror_.find(e.index()) == e && mirror_.contains(e),
                              ecs::to_string(e));
            last = e.index();
            ++count;
            sum += proto::checksum::entity_term(e.index(), e.version());
            for (const component_info& info : types.types()) {
                if (!mirror_.has(e, info.id)) {
                    continue;
                }
                const std::string what = info.name + " of " + ecs::to_string(e);
                if (info.is_string) {
                    const std::string* text = mirror_.text(e, info.id);
                    ECSNET_FUZZ_CHECK(text != nullptr, what + ": a string type without text");
                    ECSNET_FUZZ_CHECK(text->size() <= info.max_bytes && proto::valid_utf8(*text),
                                      what + ": invalid text of " + std::to_string(text->size()) +
                                          " bytes held");
                    ECSNET_FUZZ_CHECK(mirror_.value(e, info.id).empty(), what + ": bytes held");
                    sum += proto::checksum::component_term(info.id, e.index(), e.version(),
                                                           std::as_bytes(std::span{*text}));
                    continue;
                }
                const auto value = mirror_.value(e, info.id);
                ECSNET_FUZZ_CHECK(value.size() == info.value_bytes(),
                                  what + ": " + std::to_string(value.size()) +
                                      " bytes held, the type has " +
                                      std::to_string(info.value_bytes()));
                std::string why;
                ECSNET_FUZZ_CHECK(proto::valid_value(info, value, &why),
                                  what + ": invalid value held: " + why);
                sum += proto::checksum::component_term(info.id, e.index(), e.version(), value);
            }
        });
        ECSNET_FUZZ_CHECK(count == mirror_.size(), std::to_string(count) + " entities, size() " +
                                                       std::to_string(mirror_.size()));
        ECSNET_FUZZ_CHECK(sum == mirror_.checksum(), "storages hold components of no live entity");
    }

    std::uint32_t max_index_;
    proto::mirror mirror_;
};

// ---- fuzz_schema ----------------------------------------------------------------------------

// The next frame of a mirror-format input (u16 body length, body) with its 4-byte prefix.
void next_frame(byte_reader& in, std::vector<std::uint8_t>& frame) {
    const std::uint16_t length = in.u16();
    const auto body = in.take(length);
    const auto n = static_cast<std::uint32_t>(body.size());
    frame.assign({static_cast<std::uint8_t>(n), static_cast<std::uint8_t>(n >> 8U),
                  static_cast<std::uint8_t>(n >> 16U), static_cast<std::uint8_t>(n >> 24U)});
    frame.insert(frame.end(), body.begin(), body.end());
}

// What any accepted schema must be, checked here independently of schema::make: ids are
// positions, names unique, a type is either a string of 1..4096 bytes or 1..64 fields, each
// field in its natural width unless it is a quantized float; and it survives the wire
// (encode_schema, decode_schema) and schema::make unchanged.
void check_accepted_schema(const proto::schema& types) {
    ECSNET_FUZZ_CHECK(types.size() <= proto::max_component_types, std::to_string(types.size()));
    std::set<std::string> names;
    for (std::size_t i = 0; i < types.size(); ++i) {
        const component_info& t = types.types()[i];
        const std::string what = "accepted type " + std::to_string(i) + " '" + t.name + "'";
        ECSNET_FUZZ_CHECK(t.id == i, what + " has wire id " + std::to_string(t.id));
        ECSNET_FUZZ_CHECK(!t.name.empty() && t.name.size() <= proto::max_schema_name_bytes,
                          what + ": name of " + std::to_string(t.name.size()) + " bytes");
        ECSNET_FUZZ_CHECK(names.insert(t.name).second, what + ": a repeated name");
        ECSNET_FUZZ_CHECK(types.find(t.name) == &t, what + ": find(name) finds another type");
        if (t.is_string) {
            ECSNET_FUZZ_CHECK(t.fields.empty() && t.max_bytes >= 1 &&
                                  t.max_bytes <= proto::max_string_bytes,
                              what + ": a string type with fields or max_bytes " +
                                  std::to_string(t.max_bytes));
            ECSNET_FUZZ_CHECK(t.value_bytes() == 0, what + ": a string type with value bytes");
            continue;
        }
        ECSNET_FUZZ_CHECK(!t.fields.empty() && t.fields.size() <= proto::max_fields,
                          what + ": " + std::to_string(t.fields.size()) + " fields");
        std::size_t bits = 0;
        std::set<std::string> field_names;
        for (const proto::field_info& f : t.fields) {
            const std::string field = what + " field '" + f.name + "'";
            ECSNET_FUZZ_CHECK(field_names.insert(f.name).second, field + " repeated");
            ECSNET_FUZZ_CHECK(proto::to_field_type(static_cast<std::uint8_t>(f.type)).has_value(),
                              field + ": unknown type id " +
                                  std::to_string(static_cast<unsigned>(f.type)));
            if (f.quantized.step != 0) {
                ECSNET_FUZZ_CHECK(proto::is_float(f.type) && f.quantized.step > 0 &&
                                      std::isfinite(f.quantized.step) &&
                                      std::isfinite(f.quantized.min) && f.bits >= 1 &&
                                      f.bits <= 32,
                                  field + ": an invalid quantization in " +
                                      std::to_string(f.bits) + " bits");
            } else {
                ECSNET_FUZZ_CHECK(f.bits == proto::natural_bits(f.type),
                                  field + ": " + std::to_string(f.bits) + " bits");
            }
            bits += f.bits;
        }
        ECSNET_FUZZ_CHECK(t.value_bits() == bits && t.value_bytes() == (bits + 7) / 8,
                          what + ": value_bits " + std::to_string(t.value_bits()) + ", fields " +
                              std::to_string(bits));
    }

    std::string why;
    const auto again = proto::schema::make({types.types().begin(), types.types().end()}, &why);
    ECSNET_FUZZ_CHECK(again.has_value(), "schema::make refuses an accepted schema: " + why);
    ECSNET_FUZZ_CHECK(*again == types, "schema::make changed an accepted schema");

    flatbuffers::FlatBufferBuilder fbb;
    const auto components = proto::encode_schema(fbb, types);
    const auto welcome = wire::CreateWelcome(fbb, 1, proto::protocol_version, 20.0F, 0, 1, 0, 0,
                                             components);
    const proto::frame frame = proto::finish_frame(
        fbb, wire::CreateServerMessage(fbb, wire::ServerBody::Welcome, welcome.Union()));
    const wire::ServerMessage* root = proto::verify_server_frame(*frame, &why);
    ECSNET_FUZZ_CHECK(root != nullptr, "a re-encoded schema does not verify: " + why);
    const auto decoded = proto::decode_schema(root->body_as_Welcome()->components(), &why);
    ECSNET_FUZZ_CHECK(decoded.has_value(), "a re-encoded schema is refused: " + why);
    ECSNET_FUZZ_CHECK(*decoded == types, "a schema changed through encode and decode");
}

}  // namespace

void fuzz_client_frame_one(const std::uint8_t* data, std::size_t size) {
    guarded([&] {
        const std::span<const std::uint8_t> input{data, size};
        // The decoder alone, the whole input taken as one frame.
        if (const auto decoded = proto::decode_client_frame(input, demo_types().types());
            decoded.message) {
            check_round_trip(*decoded.message);
        }

        server_sim sim{server::command_limits{.max_entities_per_client = 4, .max_entities = 12}};
        session_sim session{sim};
        proto::frame_reader reader{proto::default_max_client_frame};
        // Uneven chunks, as a socket delivers them: frames straddle feeds.
        constexpr std::array<std::size_t, 8> chunks{1, 3, 64, 2, 700, 5, 4096, 65536};
        std::size_t offset = 0;
        for (std::size_t step = 0; offset < size; ++step) {
            const std::size_t n = std::min(chunks[step % chunks.size()], size - offset);
            reader.feed(input.subspan(offset, n));
            offset += n;
            std::span<const std::uint8_t> frame;
            for (;;) {
                const auto status = reader.next(frame);
                if (status == proto::frame_reader::status::need_more) {
                    break;
                }
                if (status == proto::frame_reader::status::oversize) {
                    session.close();  // the server drops the connection
                    return;
                }
                ECSNET_FUZZ_CHECK(
                    frame.size() >= proto::frame_prefix_bytes &&
                        frame.size() <= proto::frame_prefix_bytes + proto::default_max_client_frame,
                    std::to_string(frame.size()));
                ECSNET_FUZZ_CHECK(proto::read_prefix(frame.first<proto::frame_prefix_bytes>()) ==
                                      frame.size() - proto::frame_prefix_bytes,
                                  "frame_reader cut a frame that disagrees with its prefix");
                session.on_frame(frame);
            }
            ECSNET_FUZZ_CHECK(reader.buffered() <= offset, "frame_reader buffered more than fed");
        }
        session.close();
    });
}

void fuzz_commands_one(const std::uint8_t* data, std::size_t size) {
    guarded([&] {
        byte_reader in{data, size};
        server::command_limits limits;
        limits.max_entities_per_client = 1 + in.u8() % 8U;
        limits.max_entities = 1 + in.u8() % 32U;
        server_sim sim{limits};
        command_script{sim, in}.run();
        sim.tick();
    });
}

void fuzz_mirror_one(const std::uint8_t* data, std::size_t size) {
    guarded([&] {
        byte_reader in{data, size};
        const std::uint8_t config = in.u8();
        proto::mirror::options options;
        options.max_index = mirror_max_indices[config & 3U];
        mirror_driver driver{demo_types().types(), options, (config & 4U) != 0};
        std::vector<std::uint8_t> frame;
        while (!in.empty()) {
            next_frame(in, frame);
            driver.on_frame(frame);
        }
    });
}

void fuzz_schema_one(const std::uint8_t* data, std::size_t size) {
    guarded([&] {
        byte_reader in{data, size};
        const std::uint8_t config = in.u8();
        proto::mirror::options options;
        options.max_index = mirror_max_indices[config & 3U];
        std::vector<std::uint8_t> frame;
        next_frame(in, frame);
        std::string why;
        const wire::ServerMessage* message = proto::verify_server_frame(frame, &why);
        if (message == nullptr) {
            ECSNET_FUZZ_CHECK(!why.empty(), "a refused frame needs a reason");
            return;
        }
        if (message->body_type() != wire::ServerBody::Welcome) {
            return;  // a client waits for Welcome first; fuzz_mirror covers the rest
        }
        std::string schema_why;
        const auto types = proto::decode_schema(message->body_as_Welcome()->components(),
                                                &schema_why);
        const auto control = proto::decode_server_control(*message, &why);
        trace("Welcome: schema ", types ? std::to_string(types->size()) + " types" : schema_why,
              control ? "" : ", refused: " + why);
        if (!types) {
            // The client refuses the stream with a clear reason, and so does the decoder of
            // the whole Welcome.
            ECSNET_FUZZ_CHECK(!schema_why.empty(), "a refused schema needs a reason");
            ECSNET_FUZZ_CHECK(!control.has_value(), "a Welcome with a refused schema accepted");
            ECSNET_FUZZ_CHECK(!why.empty(), "a refused Welcome needs a reason");
            return;
        }
        check_accepted_schema(*types);
        if (!control) {
            ECSNET_FUZZ_CHECK(!why.empty(), "a refused Welcome needs a reason");
            return;  // another field of the Welcome was refused
        }
        const auto* w = std::get_if<proto::welcome>(&*control);
        ECSNET_FUZZ_CHECK(w != nullptr, "a Welcome decoded as another message");
        ECSNET_FUZZ_CHECK(w->components == *types, "Welcome's schema differs from decode_schema's");

        // The client's mirror takes the schema, then what the server sends.
        mirror_driver driver{w->components, options, (config & 4U) != 0};
        while (!in.empty()) {
            next_frame(in, frame);
            driver.on_frame(frame);
        }
    });
}

}  // namespace ecsnet::fuzz
