#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/mirror.hpp"
#include "ecsnet/protocol/schema.hpp"

// Everything ecsnet-client prints, as text or, with --json, as one JSON object per line.
// Components are printed from the schema the server sent (Welcome), by wire name and field,
// whatever the game: the client was not compiled with its types.
//
// Text: results on stdout; refused commands ("error: MESSAGE") and failures on stderr.
// JSON: every result and every error on stdout, each object with an "event" field; nothing on
// stderr (usage errors and --help aside, which CLI11 prints as text). An entity's object has
// every type of the schema as a key of its own, null when the entity lacks it: a one-field
// type as its value ("health": 100), others as an object by field name ("position": {"x":
// 1.5, "y": 2}), a string type as a string. A type whose name is one of the object's own keys
// (event, entity, index, version, tick, component, value) is "component:NAME".
namespace ecsnet::client_cli {

// The wire name of a component type ("position", ...) in the server's schema; "unknown" for
// an id it does not have.
[[nodiscard]] std::string_view component_name(const protocol::schema& types, std::uint32_t wire_id);

enum class checksum_state { pending, ok, desync };

// One `watch` interval (about a second), or the whole watch.
struct watch_summary {
    double elapsed_s = 0.0;   // since the watch started
    double interval_s = 0.0;  // covered by the counts below
    std::size_t entities = 0;
    std::uint64_t tick = 0;
    std::uint64_t bytes = 0;
    std::uint64_t spawned = 0;
    std::uint64_t destroyed = 0;
    std::uint64_t snapshots = 0;
    std::array<std::uint64_t, protocol::max_component_types> updates{};  // by wire id
    std::uint64_t removed = 0;                                           // components removed
    std::uint64_t checksums_matched = 0;
    std::uint64_t checksums_mismatched = 0;
    checksum_state checksum = checksum_state::pending;  // the latest comparison
    std::uint64_t checksum_tick = 0;
    std::string problem;  // the mirror's inconsistency, if one happened in the interval
    // Interest management (Welcome.interest_radius > 0): `entities` are those in view, and
    // these come into and went out of it; the byte budget is Welcome.client_budget (0:
    // unlimited). Without it none of this is printed.
    bool interest = false;
    std::uint64_t entered = 0;
    std::uint64_t left = 0;
    std::uint32_t client_budget = 0;
};

class printer {
public:
    explicit printer(bool json) : json_{json} {}

    [[nodiscard]] bool is_json() const noexcept { return json_; }

    // ---- command results ----
    void spawned(ecs::Entity e);
    void destroyed(ecs::Entity e);
    // "set 20:1 position health" / "removed 20:1 velocity"; JSON {"event": "set" or
    // "removed", "entity", "index", "version", "components": [names]}.
    void set_done(ecs::Entity e, const std::vector<std::string>& types);
    void removed(ecs::Entity e, const std::vector<std::string>& types);
    // The mirrored entities as a table sorted by index, then a count line.
    void entity_list(const protocol::mirror& mirror, std::uint32_t client_id);
    // A command the server refused: "error: MESSAGE".
    void refused(std::string_view command, const protocol::command_result& result);
    // Commands never sent, after a refusal or an interrupt.
    void not_attempted(std::string_view command, std::size_t count, std::string_view why);

    // ---- failures and notes ----
    // The command (or program) failed: the message as is ("cannot connect to ...").
    void failure(std::string_view message);
    // A usage error inside the shell (CLI11's text, "error: ...").
    void usage_error(std::string_view text);
    // Informational text for people; text mode only, on stderr.
    void note(std::string_view message);

    // ---- watch ----
    // With interest management, also the radius, the budget and the focus given (--focus,
    // --move).
    void watch_started(std::string_view endpoint, std::uint32_t client_id,
                       const protocol::mirror& mirror, const protocol::welcome& welcome,
                       const watch_args& args);
    // A request that cannot do what was asked, the watch goes on: text mode on stderr
    // ("warning: ..."), JSON {"event": "warning", "message": ...}.
    void warning(std::string_view message);
    void watch_spawned(const protocol::mirror& mirror, ecs::Entity e);
    void watch_destroyed(const protocol::mirror& mirror, ecs::Entity e);
    // Component `wire_id` of `e` was set (added or changed).
    void watch_update(const protocol::mirror& mirror, ecs::Entity e, std::uint32_t wire_id);
    // Component `wire_id` of `e` was removed.
    void watch_removed(const protocol::mirror& mirror, ecs::Entity e, std::uint32_t wire_id);
    void watch_snapshot(std::uint64_t tick, std::size_t entities);
    void watch_desync(std::string_view what);
    // Updates per type by name, from the server's schema.
    void watch_summary_line(const protocol::schema& types, const watch_summary& s, bool total);

private:
    bool json_;
};

}  // namespace ecsnet::client_cli
