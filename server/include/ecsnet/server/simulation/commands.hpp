#pragma once

#include <boost/unordered/unordered_flat_set.hpp>

#include <any>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"

namespace ecsnet::server {

struct command_limits {
    std::size_t max_entities_per_client = 10'000;
    std::size_t max_entities = 2'000'000;
};

struct command_counters {
    std::uint64_t applied{0};
    std::uint64_t rejected{0};
    std::uint64_t game_failures{0};  // refused because the game's code threw (GameFailed)
    std::uint64_t undo_failures{0};  // ... and undoing it threw too (see apply())
};

// A command the game's code failed: what threw, and on which component type (empty when the
// core cannot tell, e.g. an on_destroy listener of a Destroy).
struct game_failure {
    std::string component;
    std::string what;
    bool undone{true};  // false when the undo itself threw: see command_processor::apply
};

// Applies clients' commands to the world, server-authoritatively: every entity a client names
// must exist at exactly the version it names and be owned by that client (unless every type
// the command writes is writer::any); types only the server writes (Owner among them) and
// values their type's valid() refuses are rejected, all or nothing; quotas hold; the server
// sets Owner. Each command yields the CommandResult to send back.
//
// The game's code that a command runs (valid(), on_construct/on_update/on_destroy listeners)
// may throw: the command is then refused with GameFailed and the exception's message, and
// what the command itself changed is undone: a Spawn's entity is destroyed, a SetComponent's
// or RemoveComponent's values are put back as they were (exact copies, not wire values), a
// Destroy leaves the entity whole (the world's own guarantee). What the game's listeners did
// before one of them threw is the game's, and stays; so does what an undo's listeners do. If
// the undo itself throws, the rest of it is still tried and failure().undone is false: a
// Spawn's entity may then remain, owned by the sender (it goes with the sender's entities).
class command_processor {
public:
    // `types` outlives the processor.
    command_processor(ecs::World& world, const protocol::component_registry& types,
                      command_limits limits);
    command_processor(const command_processor&) = delete;
    command_processor& operator=(const command_processor&) = delete;
    ~command_processor();

    // Spawn, Destroy, SetComponent or RemoveComponent (other messages are not commands).
    [[nodiscard]] protocol::command_result apply(std::uint32_t client,
                                                 const protocol::client_message& message);

    // The last apply() that returned GameFailed: what threw. For the server's log.
    [[nodiscard]] const game_failure& failure() const noexcept { return failure_; }

    // Destroys every entity the client owns (on disconnect), in the time of that many: an
    // index by owner follows the Owner component. Returns how many were destroyed; an entity
    // whose on_destroy listener throws stays (counted in `failed`, its message in `what`).
    std::size_t despawn_all_of(std::uint32_t client, std::size_t* failed = nullptr,
                               std::string* what = nullptr);

    // Owns again the entities whose destroy failed after the index had let them go (a game's
    // on_destroy listener threw after the core's): apply() and despawn_all_of() call it; the
    // server calls it after the systems ran, which may destroy entities too.
    void settle();

    [[nodiscard]] std::size_t owned_by(std::uint32_t client) const noexcept;
    [[nodiscard]] const command_counters& counters() const noexcept { return counters_; }
    // Called when a client's last entity is gone, however it ended (so per-owner state can
    // be dropped). It must not change the world.
    std::function<void(std::uint32_t client)> on_last_entity_gone;

private:
    protocol::command_result spawn(std::uint32_t client, const protocol::spawn& command);
    protocol::command_result destroy(std::uint32_t client, const protocol::destroy& command);
    protocol::command_result set(std::uint32_t client, const protocol::set_components& command);
    protocol::command_result remove(std::uint32_t client,
                                    const protocol::remove_components& command);
    // Null on success, else the rejection for `request_id`. The entity must be live at the
    // version named and, when owner_required, owned by the client.
    std::optional<protocol::command_result> check_target(std::uint32_t client,
                                                         std::uint32_t request_id,
                                                         ecs::Entity target,
                                                         bool owner_required) const;
    // Every value's type is known and not server-written, and its own check (valid())
    // passes, before anything changes.
    std::optional<protocol::command_result> check_values(
        std::uint32_t request_id, const protocol::component_set& values);
    // Every value's type may be written by any client, on entities it does not own.
    [[nodiscard]] bool anyone_may_write(const protocol::component_set& values) const noexcept;

    // The command's own changes to the world, undone in reverse when the game's code throws.
    [[nodiscard]] protocol::command_result dispatch(std::uint32_t client,
                                                    const protocol::client_message& message);
    [[nodiscard]] protocol::command_result game_failed(const protocol::client_message& message,
                                                       std::string what);
    void undo() noexcept;
    void own(ecs::Entity e, std::uint32_t client);
    void disown(ecs::Entity e);

    struct saved_value {
        std::uint16_t type;
        std::any value;  // empty: the entity had none
    };

    ecs::World& world_;
    const protocol::component_registry& types_;
    command_limits limits_;
    // Owner -> the entity indices it owns; entity index -> its owner plus one (0: none, since
    // owner 0, the server, is an owner like any other).
    std::unordered_map<std::uint32_t, boost::unordered_flat_set<std::uint32_t>> owned_;
    std::vector<std::uint64_t> owner_of_;
    std::vector<ecs::Entity> survivors_;  // let go by on_destroy<Owner>, maybe still alive
    ecs::World::sink_type::connection construct_connection_{};
    ecs::World::sink_type::connection update_connection_{};
    ecs::World::sink_type::connection destroy_connection_{};
    command_counters counters_;
    game_failure failure_;
    // The command in progress: what it created, what it saved, the type being applied.
    ecs::Entity created_;
    ecs::Entity target_;
    std::vector<saved_value> saved_;
    std::string current_type_;
};

}  // namespace ecsnet::server
