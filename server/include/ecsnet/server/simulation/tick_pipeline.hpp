#pragma once

// The simulation steps of a tick, on the world thread: the clients' commands and inputs
// applied, the game's hooks told of players coming and going, the departed players' entities
// despawned, the systems run, the change set taken. It owns the scheduler, the command
// processor and the input buffer; the server calls the steps in order (server::run_tick) and
// does the rest (the journal, replication). A failure of the game's code (a system, a hook, a
// listener, a value check) is counted, logged at a bounded rate, and the tick goes on.

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/operations/logging.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/simulation/commands.hpp"
#include "ecsnet/server/simulation/input_buffer.hpp"

namespace ecsnet::server {

class tick_pipeline {
public:
    struct settings {
        double tick_rate{30.0};
        command_limits limits;
        std::uint32_t input_buffer_ticks{0};
        bool strict_access{false};  // server_config::strict_access
    };
    tick_pipeline(ecs::World& world, const protocol::component_registry& types,
                  server_metrics& metrics, const settings& s);

    // The game's hooks (server::on_player_joined, on_player_left); called by tell_players().
    struct player_hooks {
        const std::function<void(std::uint32_t, bool)>& joined;
        const std::function<void(std::uint32_t)>& left;
    };

    [[nodiscard]] ecs::Scheduler& scheduler() noexcept { return scheduler_; }
    [[nodiscard]] command_processor& commands() noexcept { return commands_; }
    [[nodiscard]] const command_processor& commands() const noexcept { return commands_; }
    [[nodiscard]] input_buffer& inputs() noexcept { return inputs_; }
    [[nodiscard]] const input_buffer& inputs() const noexcept { return inputs_; }

    // A player's first connection joined (`resumed`: it still owns entities), or its last one
    // left: the hooks hear of it at the next tell_players().
    void player_joined(std::uint32_t owner, bool resumed);
    void player_left(std::uint32_t owner);

    // An Input from `owner` checked against the world (the entity is its own and current) and
    // the game's value checks, then kept for its ticks; why it is refused otherwise (all of
    // it, or the ticks too far ahead: InputRejected).
    [[nodiscard]] std::optional<protocol::input_rejected> offer_input(std::uint32_t owner,
                                                                      const protocol::input& input,
                                                                      std::uint64_t tick);

    // The steps, in the order run_tick calls them.
    // Exports ecsnet_system_failures_total at 0 for each system and hook before it first runs.
    void export_system_failures(const player_hooks& hooks);
    // One client command; a failure of the game's code is reported (and refused with GameFailed).
    [[nodiscard]] protocol::command_result apply(std::uint32_t client,
                                                 const protocol::client_message& message,
                                                 std::uint64_t tick);
    void tell_players(const player_hooks& hooks, std::uint64_t tick);
    // Despawns every entity of owners whose reconnect grace ended.
    void despawn(std::span<const std::uint32_t> owners, std::uint64_t tick);
    // This tick's player inputs (input_buffer), then counted.
    void apply_inputs(std::uint64_t tick);
    // The game's systems. With settings::strict_access, an undeclared access ends the tick's
    // systems and is returned (the server then fails); otherwise empty.
    [[nodiscard]] std::string run_systems(std::uint64_t tick);
    // The tick's change set; valid until the next call (its lists keep their capacity).
    [[nodiscard]] const ecs::World::change_set_type& take_changes();

    // Logs a failure of the game's code at a bounded rate; `so_far`: the count of its kind
    // (server_metrics::game_failed, system_failed).
    template <typename... Args>
    void report_failure(std::uint64_t so_far, fmt::format_string<Args...> text, Args&&... args) {
        log_failure(so_far, fmt::format(text, std::forward<Args>(args)...));
    }

private:
    void log_failure(std::uint64_t so_far, const std::string& text);

    ecs::World& world_;
    const protocol::component_registry& types_;
    server_metrics& metrics_;
    ecs::Scheduler scheduler_;
    command_processor commands_;
    input_buffer inputs_;
    ecs::World::change_set_type changes_;
    struct player_event {
        std::uint32_t owner;
        bool joined;  // else left
        bool resumed;
    };
    std::vector<player_event> player_events_;
    std::size_t systems_exported_{0};
    std::array<bool, 2> hooks_exported_{};  // joined, left
    input_counters inputs_counted_{};       // inputs_.counters() as the metrics last counted them
    log_limiter failures_{10, std::chrono::seconds{10}};
};

}  // namespace ecsnet::server
