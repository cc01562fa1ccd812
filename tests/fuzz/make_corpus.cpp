// Writes the seed corpus of the fuzz targets from today's encoders:
//
//   build/fuzz/bin/fuzz_make_corpus tests/fuzz/corpus
//
// creates <dir>/client_frame, <dir>/commands, <dir>/mirror, <dir>/schema and <dir>/session with a
// handful of inputs each, in the input formats of fuzz_targets.hpp, for the demo game's types
// (and, in <dir>/schema, the shields game's and schemas that lie). Files are overwritten; review the result before
// committing. Regression inputs (regression-*) in the corpus directories are not touched.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/demo/game.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/protocol/schema.hpp"
#include "fuzz_input.hpp"
#include "fuzz_targets.hpp"
#include "shields_generated.h"  // flatc, from games/shields/shields.fbs

// The shields game's components (games/shields/main.cpp), for a second schema with quantized
// fields and a uint8.
struct Beacon {
    float x;
    float y;
    std::uint8_t team;
};
struct Shield {
    float strength;
    float capacity;
};
template <>
struct ecsnet::protocol::replicated<Beacon>
    : ecsnet::protocol::replicate<shields::wire::Beacon, "beacon",
                                  ecsnet::protocol::replicate_options{
                                      .quantized = {.min = -2048, .max = 2048, .step = 1.0 / 64}}> {};
template <>
struct ecsnet::protocol::replicated<Shield>
    : ecsnet::protocol::replicate<shields::wire::Shield, "shield",
                                  ecsnet::protocol::replicate_options{
                                      .written_by = ecsnet::protocol::writer::server}> {};

namespace {

namespace fs = std::filesystem;
namespace proto = ecsnet::protocol;
using ecsnet::ecs::Entity;
using ecsnet::ecs::World;
using ecsnet::fuzz::command_op;
using ecsnet::demo::Health;
using ecsnet::demo::Lifetime;
using ecsnet::demo::Name;
using ecsnet::demo::Position;
using ecsnet::demo::Velocity;
using proto::component_set;
using proto::Owner;

using bytes = std::vector<std::uint8_t>;

const proto::component_registry& demo_types() {
    static const proto::component_registry types = [] {
        proto::component_registry r;
        ecsnet::demo::register_components(r);
        return r;
    }();
    return types;
}

const proto::component_registry& shields_types() {
    static const proto::component_registry types = [] {
        proto::component_registry r;
        r.add<Beacon>();
        r.add<Shield>();
        return r;
    }();
    return types;
}

// The wire id of a demo type, as a bit of a removal mask.
template <typename T>
std::uint64_t bit_of() {
    return std::uint64_t{1} << *demo_types().id_of<T>();
}

void write(const fs::path& path, const bytes& content) {
    fs::create_directories(path.parent_path());
    std::ofstream out{path, std::ios::binary | std::ios::trunc};
    out.write(reinterpret_cast<const char*>(content.data()),
              static_cast<std::streamsize>(content.size()));
    std::printf("%s (%zu bytes)\n", path.string().c_str(), content.size());
}

component_set full_set() {
    return component_set{}
        .set(Position{1.5F, -2.0F})
        .set(Velocity{3.0F, 4.0F})
        .set(Health{100})
        .set(Lifetime{40})
        .set(Name{"seed"});
}

// ---- client_frame: raw frames, concatenated --------------------------------------------------

bytes frames(const std::vector<proto::client_message>& messages) {
    bytes out;
    for (const auto& m : messages) {
        const proto::frame f = proto::encode(m, demo_types().types());
        out.insert(out.end(), f->begin(), f->end());
    }
    return out;
}

// Frames that may carry player input: encoded against the session fuzzer's game (the demo's
// types and its input type, fuzz_input.hpp).
bytes input_frames(const std::vector<proto::client_message>& messages) {
    static const proto::component_registry types = ecsnet::fuzz::fuzz_types();
    bytes out;
    for (const auto& m : messages) {
        const proto::frame f = proto::encode(m, types.types());
        out.insert(out.end(), f->begin(), f->end());
    }
    return out;
}

// Interest management (protocol 3): Focus before Hello (not joined), after it (no reply), then a
// non-finite one (fatal) and a new connection. In both the client_frame and session corpora.
bytes focus_frames() {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    return frames({proto::focus{1.0F, 2.0F}, proto::hello{proto::protocol_version, "f", ""},
                   proto::focus{-5.5F, 1.0e6F}, proto::spawn{1, full_set()},
                   proto::focus{0.0F, 0.0F}, proto::ping{3}, proto::focus{nan, 0.0F},
                   proto::hello{proto::protocol_version, "g", ""}, proto::focus{0.0F, -inf}});
}

void client_frame_corpus(const fs::path& dir) {
    const Entity first{0, 1};
    write(dir / "hello", frames({proto::hello{proto::protocol_version, "alice", ""}}));
    write(dir / "ping", frames({proto::ping{42}}));
    write(
        dir / "session",
        frames({proto::hello{proto::protocol_version, "alice", "token"}, proto::spawn{1, full_set()},
                proto::set_components{2, first, component_set{}.set(Position{7.0F, 8.0F})},
                proto::remove_components{3, first, {"health"}}, proto::ping{9},
                proto::resync_request{"checksum mismatch"}, proto::destroy{4, first}}));
    // Index 0 comes back at version 2: the old handle is stale.
    write(dir / "stale",
          frames({proto::hello{proto::protocol_version, "", ""}, proto::spawn{1, {}}, proto::destroy{2, first},
                  proto::spawn{3, component_set{}.set(Health{1})},
                  proto::set_components{4, first, component_set{}.set(Health{2})},
                  proto::destroy{5, Entity{0, 2}}}));
    write(dir / "quota", frames({proto::hello{proto::protocol_version, "q", ""}, proto::spawn{1, {}}, proto::spawn{2, {}},
                                 proto::spawn{3, {}}, proto::spawn{4, {}}, proto::spawn{5, {}},
                                 proto::spawn{6, {}}}));
    // Commands before Hello, a second Hello (disconnect), then another owner.
    write(dir / "two_sessions",
          frames({proto::spawn{1, {}}, proto::ping{1}, proto::hello{proto::protocol_version, "a", ""},
                  proto::spawn{2, {}}, proto::hello{proto::protocol_version, "a", ""}, proto::hello{proto::protocol_version, "b", ""},
                  proto::destroy{3, first}, proto::spawn{4, {}}}));
    // Values the decoder refuses (non-fatal), then a wrong protocol version (fatal).
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    write(
        dir / "invalid_values",
        frames({proto::hello{proto::protocol_version, "v", ""}, proto::spawn{1, component_set{}.set(Position{nan, 0})},
                proto::spawn{2, component_set{}.set(Velocity{inf, 0})},
                proto::spawn{3, component_set{}.set(Name{std::string(80, 'n')})},
                proto::spawn{4, component_set{}.set(Owner{2})}, proto::set_components{5, first, {}},
                proto::remove_components{6, first, {"owner"}},
                proto::hello{7, "w", ""}}));
    write(dir / "resync_before_hello", frames({proto::resync_request{"early"}}));
    write(dir / "focus", focus_frames());
}

// ---- session: u8 flags, then bytes for the real server ---------------------------------------

bytes session_input(std::uint8_t flags, const bytes& payload) {
    bytes out{flags};
    out.insert(out.end(), payload.begin(), payload.end());
    return out;
}

void session_corpus(const fs::path& dir) {
    constexpr std::uint8_t hello_first = 1;
    constexpr std::uint8_t shutdown = 16;
    const auto chunks = [](unsigned selector) { return static_cast<std::uint8_t>(selector << 1U); };
    // The server's 16 demo entities hold indices 0-15: a client's first spawn gets 16.
    const Entity mine{16, 1};
    const bytes commands =
        frames({proto::spawn{1, full_set()},
                proto::set_components{2, mine, component_set{}.set(Position{7.0F, 8.0F})},
                proto::remove_components{3, mine, {"health"}}, proto::ping{9},
                proto::resync_request{"checksum mismatch"}, proto::spawn{4, {}},
                proto::destroy{5, mine}, proto::destroy{6, Entity{0, 1}}});
    write(dir / "hello_only", session_input(hello_first, {}));
    write(dir / "commands", session_input(hello_first, commands));
    write(dir / "commands_bytewise", session_input(hello_first | chunks(1), commands));
    write(dir / "commands_then_eof", session_input(hello_first | chunks(3) | shutdown, commands));
    const bytes own_hello =
        frames({proto::hello{proto::protocol_version, "alice", ""}, proto::spawn{1, {}},
                proto::ping{2}, proto::hello{proto::protocol_version, "again", ""}});
    write(dir / "own_hello", session_input(chunks(4), own_hello));
    write(dir / "commands_before_hello",
          session_input(chunks(2), frames({proto::spawn{1, {}}, proto::ping{1}})));
    write(dir / "wrong_version", session_input(0, frames({proto::hello{99, "old", ""}})));
    // A frame announced over the 64 KiB limit, and a frame cut by EOF.
    write(dir / "oversize", session_input(hello_first, {0x01, 0x00, 0x01, 0x00, 'E', 'C', 'S'}));
    bytes cut = frames({proto::ping{5}});
    cut.resize(cut.size() - 3);
    write(dir / "cut_by_eof", session_input(hello_first | shutdown, cut));
    write(dir / "garbage", session_input(hello_first | chunks(7),
                                         {0x08, 0x00, 0x00, 0x00, 0xDE, 0xAD, 0xBE, 0xEF, 0x00,
                                          0x11, 0x22, 0x33}));
    // The interest server (32): Focus messages, and commands under a view; the token server
    // (64): the harness's Hello carries a fresh token, or (128) one with an altered signature.
    constexpr std::uint8_t interest = 32;
    constexpr std::uint8_t tokens = 64;
    constexpr std::uint8_t corrupt_token = 128;
    write(dir / "interest_focus", session_input(interest | chunks(2), focus_frames()));
    write(dir / "interest_commands", session_input(interest | hello_first, commands));
    write(dir / "interest_commands_bytewise",
          session_input(interest | hello_first | chunks(1), commands));
    write(dir / "token_commands", session_input(tokens | hello_first, commands));
    write(dir / "token_corrupt", session_input(tokens | corrupt_token | hello_first, commands));
    write(dir / "token_own_hello", session_input(tokens | chunks(4), own_hello));
    // Player input (protocol 4; the harness rebases each Input's first_tick onto the server's
    // tick): several ticks for the client's own entity, one for the server's, a stale handle.
    const auto pad = [](float x, float y, bool fire) {
        return component_set{}.set(ecsnet::fuzz::Pad{x, y, fire});
    };
    const bytes inputs = input_frames(
        {proto::spawn{1, full_set()},
         proto::input{mine, 2, {pad(0.5F, -0.5F, false), pad(1.0F, 0.0F, true), pad(0, 0, false)}},
         proto::input{mine, 9, {pad(-1.0F, 1.0F, true)}}, proto::input{Entity{0, 1}, 4, {pad(0, 0, true)}},
         proto::input{Entity{16, 7}, 5, {pad(0.25F, 0.25F, false)}}, proto::ping{4},
         proto::input{mine, 12, std::vector<component_set>(16, pad(0.125F, -0.125F, true))}});
    write(dir / "inputs", session_input(hello_first, inputs));
    write(dir / "inputs_bytewise", session_input(hello_first | chunks(1), inputs));
    write(dir / "interest_inputs", session_input(interest | hello_first, inputs));
}

// ---- commands: the script format of fuzz_commands -----------------------------------------

class script {
public:
    // The quotas as fuzz_commands reads them: 1 + b % 8 and 1 + b % 32.
    script(unsigned per_client, unsigned world) {
        out_ = {static_cast<std::uint8_t>(per_client - 1), static_cast<std::uint8_t>(world - 1)};
    }

    script& spawn(unsigned client, const component_set& c) {
        op(command_op::spawn, client);
        components(c);
        return *this;
    }
    script& destroy(unsigned client, std::uint8_t entity) {
        op(command_op::destroy, client);
        out_.push_back(entity);
        return *this;
    }
    script& set(unsigned client, std::uint8_t entity, const component_set& c) {
        op(command_op::set, client);
        out_.push_back(entity);
        components(c);
        return *this;
    }
    script& remove(unsigned client, std::uint8_t entity, std::uint8_t mask) {
        op(command_op::remove, client);
        out_.push_back(mask);
        out_.push_back(entity);
        return *this;
    }
    script& remove_wide(unsigned client, std::uint8_t entity, std::uint64_t mask) {
        op(command_op::remove, client, 1);
        u64(mask);
        out_.push_back(entity);
        return *this;
    }
    script& tick() {
        op(command_op::tick, 0);
        return *this;
    }
    script& resync() {
        op(command_op::tick, 0, 1);
        return *this;
    }
    script& despawn(unsigned client) {
        op(command_op::despawn, client);
        return *this;
    }
    script& hello(unsigned client, const std::string& name) {
        op(command_op::not_a_command, client, 0);
        text(name);
        text("");
        return *this;
    }
    script& ping(unsigned client) {
        op(command_op::not_a_command, client, 1);
        u64(7);
        return *this;
    }
    script& server_destroy(std::uint8_t entity) {
        op(command_op::server_destroy, 0);
        out_.push_back(entity);
        return *this;
    }

    // Entity selectors (fuzz_targets.cpp, read_entity).
    static std::uint8_t known(unsigned i) { return static_cast<std::uint8_t>(i << 2U); }
    static std::uint8_t older(unsigned i) { return static_cast<std::uint8_t>((i << 2U) | 2U); }
    static std::uint8_t newer(unsigned i) {
        return static_cast<std::uint8_t>((i << 2U) | 2U | 0x80U);
    }

    [[nodiscard]] const bytes& data() const { return out_; }

private:
    void op(command_op kind, unsigned client, unsigned variant = 0) {
        out_.push_back(static_cast<std::uint8_t>(static_cast<unsigned>(kind) | (client << 3U) |
                                                 (variant << 6U)));
    }
    void u32(std::uint32_t v) {
        for (unsigned i = 0; i < 4; ++i) {
            out_.push_back(static_cast<std::uint8_t>(v >> (8U * i)));
        }
    }
    void u64(std::uint64_t v) {
        u32(static_cast<std::uint32_t>(v));
        u32(static_cast<std::uint32_t>(v >> 32U));
    }
    void f32(float v) { u32(std::bit_cast<std::uint32_t>(v)); }
    void text(const std::string& s) {
        out_.push_back(static_cast<std::uint8_t>(s.size()));
        out_.insert(out_.end(), s.begin(), s.end());
    }
    // Presence bits in wire-id order (Owner, Position, Velocity, Health, Lifetime, Name).
    void components(const component_set& c) {
        std::uint8_t present = 0;
        for (const proto::component_value& v : c.values()) {
            present = static_cast<std::uint8_t>(present | (1U << *demo_types().id_of(v.name)));
        }
        out_.push_back(present);
        if (const auto& o = c.get<Owner>()) {
            u32(o->client);
        }
        if (const auto& p = c.get<Position>()) {
            f32(p->x);
            f32(p->y);
        }
        if (const auto& v = c.get<Velocity>()) {
            f32(v->x);
            f32(v->y);
        }
        if (const auto& h = c.get<Health>()) {
            u32(static_cast<std::uint32_t>(h->value));
        }
        if (const auto& l = c.get<Lifetime>()) {
            u32(l->ticks);
        }
        if (const auto& n = c.get<Name>()) {
            text(n->value);
        }
    }

    bytes out_;
};

void commands_corpus(const fs::path& dir) {
    // Client slots: 0 -> client 1, 1 -> client 2, 2 -> client 3 (fuzz_targets.hpp).
    write(dir / "lifecycle",
          script{4, 16}
              .spawn(0, full_set())
              .set(0, script::known(0), component_set{}.set(Position{5.0F, 6.0F}))
              .remove(0, script::known(0), static_cast<std::uint8_t>(bit_of<Health>()))
              .tick()
              .destroy(0, script::known(0))
              .tick()
              .data());
    write(dir / "two_clients", script{4, 16}
                                   .spawn(0, component_set{}.set(Health{3}))
                                   .destroy(1, script::known(0))
                                   .set(1, script::known(0), component_set{}.set(Health{4}))
                                   .tick()
                                   .destroy(0, script::known(0))
                                   .spawn(1, component_set{}.set(Name{"bob"}))
                                   .set(0, script::older(1), component_set{}.set(Health{5}))
                                   .destroy(1, script::newer(1))
                                   .remove(0, script::known(1), static_cast<std::uint8_t>(bit_of<Name>()))
                                   .tick()
                                   .data());
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    write(dir / "invalid", script{4, 16}
                               .spawn(0, component_set{}.set(Position{nan, 1.0F}))
                               .spawn(0, component_set{}.set(Velocity{1.0F, -inf}))
                               .spawn(0, component_set{}.set(Name{std::string(100, 'x')}))
                               .spawn(0, component_set{}.set(Name{"\xC3\x28"}))
                               .spawn(0, component_set{}.set(Owner{2}))
                               .spawn(0, {})
                               .set(0, script::known(0), {})
                               .remove(0, script::known(0), 0)
                               .remove(0, script::known(0), static_cast<std::uint8_t>(bit_of<Owner>()))
                               .remove_wide(0, script::known(0), 0xFFFFFFFF00000001ULL)
                               .remove(0, script::known(0), 0x42)  // position and unknown id 6
                               .data());
    write(dir / "quota", script{2, 5}
                             .spawn(0, {})
                             .spawn(0, {})
                             .spawn(0, {})
                             .spawn(1, {})
                             .spawn(1, {})
                             .spawn(2, {})
                             .despawn(0)
                             .spawn(2, {})
                             .spawn(2, {})
                             .tick()
                             .data());
    write(dir / "game", script{8, 32}
                            .spawn(0, component_set{}
                                          .set(Position{999.0F, -999.0F})
                                          .set(Velocity{3.0e38F, -3.0e38F})
                                          .set(Lifetime{2}))
                            .spawn(1, component_set{}.set(Lifetime{0}).set(Name{"short"}))
                            .tick()
                            .tick()
                            .resync()
                            .tick()
                            .server_destroy(script::known(0))
                            .tick()
                            .data());
    write(dir / "not_commands", script{4, 16}
                                    .hello(0, "alice")
                                    .ping(1)
                                    .spawn(0, {})
                                    .server_destroy(script::known(0))
                                    .data());
}

// ---- mirror: config byte, then u16 body length + frame body ----------------------------------

bytes mirror_input(std::uint8_t config, const std::vector<proto::frame>& list) {
    bytes out{config};
    for (const auto& f : list) {
        const std::size_t body = f->size() - proto::frame_prefix_bytes;
        if (body > 0xFFFF) {
            std::fprintf(stderr, "frame too large for the mirror corpus\n");
            std::exit(1);
        }
        out.push_back(static_cast<std::uint8_t>(body));
        out.push_back(static_cast<std::uint8_t>(body >> 8U));
        out.insert(out.end(), f->begin() + proto::frame_prefix_bytes, f->end());
    }
    return out;
}

proto::frame checksum_of(const World& world, const proto::component_registry& types,
                         std::uint64_t tick) {
    return proto::encode(proto::server_control{
        proto::checksum_report{tick, proto::checksum::of_world(world, types),
                               static_cast<std::uint32_t>(world.alive())}});
}

namespace wire = ecsnet::wire;

proto::frame server_frame(flatbuffers::FlatBufferBuilder& fbb, wire::ServerBody type,
                          flatbuffers::Offset<void> body) {
    return proto::finish_frame(fbb, wire::CreateServerMessage(fbb, type, body));
}

proto::frame welcome_of(const proto::schema& types) {
    return proto::encode(
        proto::server_control{proto::welcome{7, proto::protocol_version, 20.0F, 9, 1, {}, {}, types}});
}

// A demo world replicated over a few ticks: chunked snapshot (then its checksum), deltas and
// checksums. `snapshot_frames` receives how many frames the snapshot and its checksum take.
std::vector<proto::frame> demo_stream(std::size_t& snapshot_frames) {
    const proto::component_registry& types = demo_types();
    auto world = World::make(ecsnet::ecs::world_options{.entities = {.min_free_indices = 0}});
    proto::replication_encoder encoder{types};
    std::vector<Entity> e;
    for (int i = 0; i < 6; ++i) {
        e.push_back(world->create());
        world->emplace<Position>(e.back(), static_cast<float>(i), 1.0F);
        if (i % 2 == 0) {
            world->emplace<Velocity>(e.back(), 1.0F, 0.0F);
        }
        if (i % 3 == 0) {
            world->emplace<Name>(e.back(), "e" + std::to_string(i));
            world->emplace<Owner>(e.back(), static_cast<std::uint32_t>(i));
        }
    }
    world->discard_changes();
    std::vector<proto::frame> stream = encoder.encode_snapshot(*world, 10, {.max_chunk_bytes = 160});
    stream.push_back(checksum_of(*world, types, 10));
    snapshot_frames = stream.size();

    world->patch<Position>(e[0], [](Position& p) { p.x += 1.0F; });
    world->destroy(e[1]);
    const Entity reused = world->create();  // index 1 at version 2
    world->emplace<Health>(reused, 9);
    world->erase<Velocity>(e[2]);
    world->emplace<Lifetime>(e[3], 5U);
    stream.push_back(encoder.encode_delta(*world, world->take_changes(), 11));
    stream.push_back(checksum_of(*world, types, 11));
    for (int i = 0; i < 4; ++i) {
        (void)world->create();
    }
    world->destroy(e[4]);
    world->replace<Name>(e[0], "renamed");
    stream.push_back(encoder.encode_delta(*world, world->take_changes(), 12));
    stream.push_back(checksum_of(*world, types, 12));
    return stream;
}

// A client's checksum under interest management: the held entities' terms (checksum::of_entity),
// those in `excluded` left out.
proto::frame view_checksum_of(const World& world, const proto::component_registry& types,
                              std::uint64_t tick, const std::vector<Entity>& held,
                              const std::vector<Entity>& excluded, std::uint32_t viewer) {
    proto::checksum_report report{tick, 0, 0};
    for (const Entity e : held) {
        if (std::find(excluded.begin(), excluded.end(), e) != excluded.end()) {
            report.excluded.push_back(e.index());
        } else {
            report.hash += proto::checksum::of_entity(world, types, e, viewer);
            ++report.entity_count;
        }
    }
    return proto::encode(proto::server_control{report});
}

// One client's stream under interest management (protocol 3): a Welcome with a radius and a
// budget, an empty snapshot, view deltas with entries, leaves, spawns, destroys and updates,
// and checksums with excluded indices (entities whose changes wait for bandwidth).
std::vector<proto::frame> view_stream() {
    const proto::component_registry& types = demo_types();
    auto world = World::make(ecsnet::ecs::world_options{.entities = {.min_free_indices = 0}});
    proto::replication_encoder encoder{types};
    using changes = proto::replication_encoder::view_changes;
    constexpr std::uint32_t viewer = 3;
    std::vector<Entity> e;
    for (int i = 0; i < 6; ++i) {
        e.push_back(world->create());
        world->emplace<Position>(e.back(), static_cast<float>(10 * i), 1.0F);
        if (i % 2 == 0) {
            world->emplace<Velocity>(e.back(), 1.0F, 0.0F);
        }
        if (i % 3 == 0) {
            world->emplace<Name>(e.back(), "v" + std::to_string(i));
            world->emplace<Owner>(e.back(), i == 0 ? viewer : 1U);
        }
    }
    world->discard_changes();
    proto::welcome welcome{7, proto::protocol_version, 20.0F, 9, 1, {}, {}, types.types()};
    welcome.interest_radius = 25.0F;
    welcome.client_budget = 4096;
    std::vector<proto::frame> stream{proto::encode(proto::server_control{welcome}),
                                     encoder.encode_empty_snapshot(10)};
    const std::vector<Entity> first{e[0], e[1], e[2]};
    changes enter;
    enter.entered = first;
    enter.viewer = viewer;
    stream.push_back(encoder.encode_view_delta(*world, enter, 11));
    stream.push_back(view_checksum_of(*world, types, 11, first, {}, viewer));

    // Tick 12: e[1] destroyed, e[2] out of view, e[3] and e[4] in, a spawn at e[1]'s index,
    // e[0] updated and its velocity removed; e[4]'s new position waits for bandwidth.
    world->destroy(e[1]);
    const Entity reused = world->create();
    world->emplace<Health>(reused, 9);
    world->patch<Position>(e[0], [](Position& p) { p.x += 1.0F; });
    world->erase<Velocity>(e[0]);
    world->discard_changes();
    const std::vector<Entity> destroyed{e[1]};
    const std::vector<Entity> left{e[2]};
    const std::vector<Entity> spawned{reused};
    const std::vector<Entity> entered{e[3], e[4]};
    const auto bit = [&](auto id) { return std::uint64_t{1} << id; };
    const std::vector<std::pair<Entity, std::uint64_t>> updated{
        {e[0], bit(*types.id_of<Position>()) | bit(*types.id_of<Velocity>())}};
    changes tick12;
    tick12.destroyed = destroyed;
    tick12.left = left;
    tick12.spawned = spawned;
    tick12.entered = entered;
    tick12.updated = updated;
    tick12.viewer = viewer;
    stream.push_back(encoder.encode_view_delta(*world, tick12, 12));
    world->patch<Position>(e[4], [](Position& p) { p.y = 5.0F; });
    world->discard_changes();
    const std::vector<Entity> held{e[0], reused, e[3], e[4]};
    stream.push_back(view_checksum_of(*world, types, 12, held, {e[4]}, viewer));
    // Tick 13: e[4]'s position goes out; e[2] comes back.
    const std::vector<Entity> back{e[2]};
    const std::vector<std::pair<Entity, std::uint64_t>> due{{e[4], bit(*types.id_of<Position>())}};
    changes tick13;
    tick13.entered = back;
    tick13.updated = due;
    tick13.viewer = viewer;
    stream.push_back(encoder.encode_view_delta(*world, tick13, 13));
    stream.push_back(view_checksum_of(*world, types, 13, {e[0], reused, e[2], e[3], e[4]}, {},
                                      viewer));
    return stream;
}

// A snapshot whose one group lists `list` at `versions`, with a column of `type` holding
// `value_bytes` bytes per entity (none when value_bytes is 0).
proto::frame snapshot_of(const std::vector<std::uint32_t>& list,
                         const std::vector<std::uint32_t>& versions, std::uint16_t type,
                         std::size_t value_bytes) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto at = wire::CreateIndexSet(fbb, 0, fbb.CreateVector(list));
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Column>>> columns;
    if (value_bytes > 0) {
        const std::vector<std::uint8_t> values(list.size() * value_bytes, 0x41);
        const auto column_at = wire::CreateIndexSet(fbb, 0, fbb.CreateVector(list));
        const auto column = wire::CreateColumn(fbb, type, column_at, fbb.CreateVector(values));
        columns = fbb.CreateVector(std::vector{column});
    }
    const auto group = wire::CreateEntityGroup(fbb, at, fbb.CreateVector(versions), columns);
    const auto groups = fbb.CreateVector(std::vector{group});
    const auto count = static_cast<std::uint32_t>(list.size());
    return server_frame(fbb, wire::ServerBody::Snapshot,
                        wire::CreateSnapshot(fbb, 1, 0, 1, count, groups).Union());
}

// A delta that sets `type` of the entity at `index` to the given canonical bytes.
proto::frame update_of(std::uint64_t tick, std::uint32_t index, std::uint16_t type,
                       const std::vector<std::uint8_t>& value) {
    flatbuffers::FlatBufferBuilder fbb;
    const auto at = wire::CreateIndexSet(fbb, 0, fbb.CreateVector(std::vector{index}));
    const auto column = wire::CreateColumn(fbb, type, at, fbb.CreateVector(value));
    const auto columns = fbb.CreateVector(std::vector{column});
    return server_frame(fbb, wire::ServerBody::Delta,
                        wire::CreateDelta(fbb, tick, 0, 0, columns).Union());
}

std::vector<std::uint8_t> position_bytes(float x, float y) {
    const auto packed = proto::pack(Position{x, y});
    std::vector<std::uint8_t> out(packed.size());
    std::memcpy(out.data(), packed.data(), packed.size());
    return out;
}

void mirror_corpus(const fs::path& dir) {
    write(dir / "control",
          mirror_input(
              0, {welcome_of(demo_types().types()),
                  proto::encode(proto::server_control{proto::command_result{
                      5, false, ecsnet::wire::ErrorCode::NotOwner, "not yours", Entity{3, 2}}}),
                  proto::encode(proto::server_control{proto::pong{1, 2}}),
                  proto::encode(proto::server_control{proto::disconnect{"bye"}})}));

    std::size_t snapshot_frames = 0;
    const std::vector<proto::frame> stream = demo_stream(snapshot_frames);
    const std::vector<proto::frame> snapshot_only(stream.begin(),
                                                  stream.begin() + static_cast<long>(snapshot_frames));
    write(dir / "snapshot", mirror_input(0, snapshot_only));
    write(dir / "stream", mirror_input(4, stream));
    // Out of order: a delta before any snapshot, a tick gap, then the snapshot; a wrong checksum.
    write(dir / "out_of_order", mirror_input(5, {stream[stream.size() - 2], snapshot_only.front(),
                                                 snapshot_only.back(), stream.back()}));
    // max_index 0: only index 0 fits.
    write(dir / "max_index_zero", mirror_input(3, stream));

    // Frames today's encoders never write, built with the generated FlatBuffers API.
    const auto position = *demo_types().id_of<Position>();
    // A group that lists index 3 twice.
    write(dir / "duplicate_index", mirror_input(4, {snapshot_of({3, 3}, {1, 1}, position, 0)}));
    // An update to a NaN position, one of the wrong size, one of an unknown type, then one
    // for an unknown index.
    write(dir / "invalid_update",
          mirror_input(5, {snapshot_of({0, 1}, {1, 7}, position, 8),
                           update_of(2, 0, position, position_bytes(5.0F, 0.0F)),
                           update_of(3, 1, position,
                                     position_bytes(std::numeric_limits<float>::quiet_NaN(), 0)),
                           snapshot_of({0}, {2}, position, 8),
                           update_of(2, 0, position, {1, 2, 3}), snapshot_of({0}, {3}, position, 8),
                           update_of(2, 0, 63, {1, 2, 3, 4}), snapshot_of({0}, {4}, position, 8),
                           update_of(2, 9, position, position_bytes(1.0F, 1.0F))}));
    // Control messages with values a client refuses.
    flatbuffers::FlatBufferBuilder w;
    const proto::frame welcome = server_frame(
        w, wire::ServerBody::Welcome,
        wire::CreateWelcome(w, 1, 1, std::numeric_limits<float>::infinity(), 0, 1).Union());
    flatbuffers::FlatBufferBuilder r;
    const auto text = r.CreateString("ok");
    const proto::frame result = server_frame(
        r, wire::ServerBody::CommandResult,
        wire::CreateCommandResult(r, 1, true, static_cast<wire::ErrorCode>(99), text).Union());
    flatbuffers::FlatBufferBuilder d;
    const auto reason = d.CreateString("\xFF\xFE");
    const proto::frame bye =
        server_frame(d, wire::ServerBody::Disconnect, wire::CreateDisconnect(d, reason).Union());
    // A negative interest radius.
    flatbuffers::FlatBufferBuilder n;
    const proto::frame negative_radius = server_frame(
        n, wire::ServerBody::Welcome,
        wire::CreateWelcome(n, 1, proto::protocol_version, 20.0F, 0, 1, 0, 0, 0, -1.0F, 100)
            .Union());
    write(dir / "invalid_control", mirror_input(0, {welcome, result, bye, negative_radius}));

    // Interest management: one client's view stream, and the same frames out of place (a leave
    // of what the mirror does not hold, an entry over a live index, a checksum excluding too
    // much).
    const std::vector<proto::frame> view = view_stream();
    write(dir / "view", mirror_input(4, view));
    write(dir / "view_out_of_place",
          mirror_input(5, {view[1], view[2], view[2], view[1], view[2], view[4], view[3], view[5],
                           view[1], view[2], view[3], view[7]}));
}

// ---- schema: a Welcome, then frames (the mirror format) ------------------------------------

// One ComponentType as a hostile server may write it.
struct raw_field {
    std::string name;
    std::uint8_t type;
    std::uint8_t bits;
    double min = 0;
    double step = 0;
};
struct raw_type {
    std::uint16_t id;
    std::string name;
    std::uint8_t writer = 1;
    std::uint32_t max_bytes = 0;
    std::vector<raw_field> fields;
};

proto::frame welcome_raw(const std::vector<raw_type>& types) {
    flatbuffers::FlatBufferBuilder fbb;
    std::vector<flatbuffers::Offset<wire::ComponentType>> offsets;
    for (const raw_type& t : types) {
        std::vector<flatbuffers::Offset<wire::Field>> fields;
        for (const raw_field& f : t.fields) {
            fields.push_back(wire::CreateField(fbb, fbb.CreateString(f.name),
                                               static_cast<wire::FieldType>(f.type), f.bits, f.min,
                                               f.step));
        }
        offsets.push_back(wire::CreateComponentType(
            fbb, t.id, fbb.CreateString(t.name), static_cast<wire::Writer>(t.writer), false,
            t.max_bytes, t.fields.empty() ? 0 : fbb.CreateVector(fields)));
    }
    const auto components = fbb.CreateVector(offsets);
    return server_frame(fbb, wire::ServerBody::Welcome,
                        wire::CreateWelcome(fbb, 7, proto::protocol_version, 20.0F, 9, 1, 0, 0,
                                            components)
                            .Union());
}

// The demo schema as raw types: Owner, then Position, Velocity, Health, Lifetime, Name.
std::vector<raw_type> demo_raw() {
    constexpr std::uint8_t f32 = 11;
    return {{0, "owner", 0, 0, {{"client", 8, 32}}},
            {1, "position", 1, 0, {{"x", f32, 32}, {"y", f32, 32}}},
            {2, "velocity", 1, 0, {{"x", f32, 32}, {"y", f32, 32}}},
            {3, "health", 1, 0, {{"value", 7, 32}}},
            {4, "lifetime", 1, 0, {{"ticks", 8, 32}}},
            {5, "name", 1, 64, {}}};
}

void schema_corpus(const fs::path& dir) {
    std::size_t snapshot_frames = 0;
    std::vector<proto::frame> demo = demo_stream(snapshot_frames);
    demo.insert(demo.begin(), welcome_of(demo_types().types()));
    write(dir / "demo", mirror_input(4, demo));

    // The shields game: quantized floats and a uint8, 48 bits a beacon.
    {
        const proto::component_registry& types = shields_types();
        auto world = World::make(ecsnet::ecs::world_options{.entities = {.min_free_indices = 0}});
        proto::replication_encoder encoder{types};
        for (int i = 0; i < 5; ++i) {
            const Entity e = world->create();
            world->emplace<Beacon>(e, -100.0F + 50.0F * static_cast<float>(i), 0.5F,
                                   static_cast<std::uint8_t>(i % 2));
            world->emplace<Shield>(e, 0.0F, 100.0F);
        }
        world->discard_changes();
        std::vector<proto::frame> stream{welcome_of(types.types())};
        for (auto& f : encoder.encode_snapshot(*world, 3)) {
            stream.push_back(std::move(f));
        }
        stream.push_back(checksum_of(*world, types, 3));
        world->view<Beacon>().each([](Beacon& b) {
            b.x += 1.0F / 64;
            return true;
        });
        world->view<Shield>().each([](Shield& s) {
            s.strength += 0.5F;
            return true;
        });
        stream.push_back(encoder.encode_delta(*world, world->take_changes(), 4));
        stream.push_back(checksum_of(*world, types, 4));
        write(dir / "shields", mirror_input(4, stream));
    }

    // The demo's frames against schemas that lie about them.
    const auto with_frames = [&](const proto::frame& welcome) {
        std::vector<proto::frame> out{welcome};
        out.insert(out.end(), demo.begin() + 1, demo.end());
        return out;
    };
    const auto lie = [&](const char* name, auto&& change) {
        std::vector<raw_type> types = demo_raw();
        change(types);
        write(dir / name, mirror_input(0, with_frames(welcome_raw(types))));
    };
    // Accepted but not what the frames hold: position as one float (4 bytes), as three.
    lie("fewer_fields", [](auto& t) { t[1].fields.pop_back(); });
    lie("more_fields", [](auto& t) { t[1].fields.push_back({"z", 11, 32}); });
    // A quantized position: 2 x 12 bits where the frames carry 2 x 32.
    lie("quantized_size", [](auto& t) {
        t[1].fields = {{"x", 11, 12, -2048, 1.0}, {"y", 11, 12, -2048, 1.0}};
    });
    // Refused: a field wider than its type, an unknown field type, ids out of place, a repeated
    // name, a string type with fields, a string of 0 or 5000 bytes, an unknown writer, an
    // unquantized field narrower than its type, a quantization of an integer, an empty type.
    lie("field_beyond_type", [](auto& t) { t[1].fields[1].bits = 64; });
    lie("unknown_field_type", [](auto& t) { t[3].fields[0].type = 99; });
    lie("id_out_of_place", [](auto& t) { t[2].id = 9; });
    lie("repeated_name", [](auto& t) { t[2].name = "position"; });
    lie("string_with_fields", [](auto& t) { t[5].fields = {{"value", 11, 32}}; });
    lie("string_too_long", [](auto& t) { t[5].max_bytes = 5000; });
    lie("unknown_writer", [](auto& t) { t[4].writer = 7; });
    lie("narrow_field", [](auto& t) { t[3].fields[0].bits = 16; });
    lie("quantized_int", [](auto& t) { t[4].fields[0] = {"ticks", 8, 8, 0, 1.0}; });
    lie("no_fields", [](auto& t) { t[3].fields.clear(); });
    lie("nan_step", [](auto& t) {
        t[1].fields[0] = {"x", 11, 16, 0, std::numeric_limits<double>::quiet_NaN()};
    });
    // 65 types: more than component masks hold.
    {
        std::vector<raw_type> many;
        for (std::uint16_t i = 0; i < 65; ++i) {
            many.push_back({i, "t" + std::to_string(i), 1, 0, {{"v", 4, 8}}});
        }
        write(dir / "too_many_types", mirror_input(0, {welcome_raw(many)}));
    }
    // No schema at all (a core-only server), then the demo's frames.
    write(dir / "empty_schema", mirror_input(0, with_frames(welcome_raw({}))));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <corpus-dir>\n", argv[0]);
        return 2;
    }
    const fs::path root{argv[1]};
    client_frame_corpus(root / "client_frame");
    commands_corpus(root / "commands");
    mirror_corpus(root / "mirror");
    schema_corpus(root / "schema");
    session_corpus(root / "session");
    return 0;
}
