#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <unordered_map>

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
};

// Applies clients' commands to the world, server-authoritatively: every entity a client names
// must exist at exactly the version it names and be owned by that client (unless every type
// the command writes is writer::any); types only the server writes (Owner among them) and
// values their type's valid() refuses are rejected, all or nothing; quotas hold; the server
// sets Owner. Each command yields the CommandResult to send back.
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

    // Destroys every entity the client owns (on disconnect). Returns how many.
    std::size_t despawn_all_of(std::uint32_t client);

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
        std::uint32_t request_id, const protocol::component_set& values) const;
    // Every value's type may be written by any client, on entities it does not own.
    [[nodiscard]] bool anyone_may_write(const protocol::component_set& values) const noexcept;

    ecs::World& world_;
    const protocol::component_registry& types_;
    command_limits limits_;
    std::unordered_map<std::uint32_t, std::size_t> owned_;
    ecs::World::sink_type::connection construct_connection_{};
    ecs::World::sink_type::connection destroy_connection_{};
    command_counters counters_;
};

}  // namespace ecsnet::server
