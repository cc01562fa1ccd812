#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <span>
#include <vector>

#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/protocol/schema.hpp"
#include "ecsnet/wire/server_generated.h"

// The client side of replication: reproduces the server's entities by index and version from
// Snapshot and Delta messages, in order, and checks itself against the server's Checksum.
//
// Anything inconsistent (a spawn over a live index, a destroy with the wrong version, an
// update for an unknown entity, a tick gap, a malformed column) is counted and reported, and
// the mirror then waits for a fresh snapshot: the caller sends ResyncRequest when
// take_resync_reason() returns a reason. It never crashes on what a server sends.
namespace ecsnet::protocol {

class mirror {
public:
    using entity_type = ecs::Entity;

    struct options {
        // Largest entity index accepted from the server, bounding memory.
        std::uint32_t max_index = (1U << 24U) - 1;
    };

    struct stats {
        std::uint64_t snapshots{0};
        std::uint64_t deltas{0};
        std::uint64_t inconsistencies{0};
        std::uint64_t checksums_matched{0};
        std::uint64_t checksums_mismatched{0};
        std::uint64_t entered{0};  // entities that came into view (interest management)
        std::uint64_t left{0};     // ... and went out of it
    };

    // Callbacks for client programs. A Delta reports, in the order it is applied: on_destroy
    // for each destroyed entity (just before it goes, so that its components can still be
    // read), on_spawn for each spawned one (after it was added with its components),
    // on_update for each component set (added or changed) and on_remove for each component
    // removed (after the change). A Snapshot that completes reports its differences against
    // the state it replaces in the same order: on_destroy for every entity that vanished or
    // whose index now holds another version (while the old state is still readable), then,
    // on the new state, on_spawn for every new entity, on_update for every component added
    // or changed on an entity kept (same index and version), on_remove for every component
    // such an entity lost, and last on_snapshot. Within a snapshot each kind goes in index
    // order, updates and removals component by component in wire id order; entities spawned
    // or destroyed get no update or removal events. The first snapshot reports every entity
    // as spawned.
    //
    // Re-entrancy: callbacks may read the mirror (find, get, each, tick, event_tick, ...) and
    // replace the callbacks (the new ones serve from the next message on). apply() from a
    // callback is refused (returns false, error() says why, nothing changes): messages are
    // applied one at a time, and a client that reads more from a callback queues what
    // arrives (client::connection does).
    struct callbacks {
        std::function<void(entity_type)> on_spawn;
        std::function<void(entity_type, std::uint32_t wire_id)> on_update;
        std::function<void(entity_type, std::uint32_t wire_id)> on_remove;
        std::function<void(entity_type)> on_destroy;
        // Interest management: an entity went out of this client's view (after on_destroy's,
        // just before the mirror forgets it) or came into it (with all its components, after
        // on_spawn's). Neither is a destroy or a spawn: the entity lives on the server.
        std::function<void(entity_type)> on_enter;
        std::function<void(entity_type)> on_leave;
        std::function<void(std::uint64_t tick, std::size_t entities)> on_snapshot;
        std::function<void(std::uint64_t tick, bool matched)> on_checksum;
    };

    mirror() : mirror(options{}) {}
    explicit mirror(options opts) : options_{opts} {}
    explicit mirror(schema types) : mirror(std::move(types), options{}) {}
    mirror(schema types, options opts) : options_{opts} { set_schema(std::move(types)); }

    // The server's component types (Welcome.components). A different schema empties the
    // mirror: it then waits for a snapshot.
    void set_schema(schema types);
    [[nodiscard]] const schema& types() const noexcept { return types_; }

    // Applies one verified server message. Snapshot, Delta and Checksum change the mirror;
    // other messages are none of its business and return true. False means the message was
    // inconsistent (or the mirror is waiting for a snapshot); error() says why.
    bool apply(const wire::ServerMessage& message);

    [[nodiscard]] bool ready() const noexcept { return ready_ && !awaiting_resync_; }
    [[nodiscard]] std::uint64_t tick() const noexcept { return tick_; }
    // The tick of the message whose changes the callbacks report right now (a Delta's, or a
    // Snapshot's, also while its destroys are reported and tick() is still the old one);
    // tick() outside callbacks.
    [[nodiscard]] std::uint64_t event_tick() const noexcept {
        return applying_ ? event_tick_ : tick_;
    }
    [[nodiscard]] std::size_t size() const noexcept { return live_.count; }
    [[nodiscard]] const stats& statistics() const noexcept { return stats_; }
    [[nodiscard]] const std::string& error() const noexcept { return error_; }

    // The reason to send a ResyncRequest, once per inconsistency.
    [[nodiscard]] std::optional<std::string> take_resync_reason();

    // The entity the mirror holds at this index, or null.
    [[nodiscard]] entity_type find(std::uint32_t index) const noexcept;
    [[nodiscard]] bool contains(entity_type e) const noexcept { return !e.is_null() && find(e.index()) == e; }

    // Whether e has the component of wire id `type`.
    [[nodiscard]] bool has(entity_type e, std::uint32_t type) const noexcept;
    // The canonical bytes of e's value of a fixed-size type (schema.hpp), or empty.
    [[nodiscard]] std::span<const std::byte> value(entity_type e, std::uint32_t type) const noexcept;
    // The text of e's value of a string type, or null.
    [[nodiscard]] const std::string* text(entity_type e, std::uint32_t type) const noexcept;
    // The same by the type's name ("position"): a name the server does not have throws
    // unknown_component (listing the server's types) rather than answering false or empty.
    [[nodiscard]] bool has(entity_type e, std::string_view type) const {
        return has(e, types_.id_of(type));
    }
    [[nodiscard]] std::span<const std::byte> value(entity_type e, std::string_view type) const {
        return value(e, types_.id_of(type));
    }
    [[nodiscard]] const std::string* text(entity_type e, std::string_view type) const {
        return text(e, types_.id_of(type));
    }

    // e's value of a type this program was compiled with, looked up by its wire name; nullopt
    // when e does not have it or the server has no such type. The first call for T (per
    // schema) compares T's compiled layout with the server's entry: a type the server changed
    // (a field reordered, retyped, requantized) throws schema_mismatch naming the type and the
    // first difference, every time, instead of a misread value. Later calls cost one compare.
    template <replicated_component T>
    [[nodiscard]] std::optional<T> get(entity_type e) const {
        const component_info* info = types_.checked(compiled_layout<T>());
        if (info == nullptr || contains(e) == false) {
            return std::nullopt;
        }
        if constexpr (detail::is_string_v<T>) {
            const std::string* t = text(e, info->id);
            if (t == nullptr || !info->is_string) {
                return std::nullopt;
            }
            T out{};
            boost::pfr::get<0>(out) = *t;
            return out;
        } else {
            const auto bytes = value(e, info->id);
            if (bytes.size() < value_bytes_v<T>) {
                return std::nullopt;
            }
            return unpack<T>(bytes.data());
        }
    }

    // fn(entity) for every mirrored entity, in index order.
    template <typename Fn>
    void each(Fn&& fn) const {
        for (std::size_t i = 0; i < live_.versions.size(); ++i) {
            if (live_.versions[i] != 0) {
                fn(entity_type{static_cast<std::uint32_t>(i), live_.versions[i]});
            }
        }
    }

    // Computed like checksum::of_world on the server.
    [[nodiscard]] std::uint64_t checksum() const;

    callbacks& events() noexcept { return callbacks_; }

private:
    // The values of one component type: by entity index, canonical bytes or text.
    struct value_store {
        std::size_t stride{0};  // bytes per value; 0 for a string type
        std::size_t bits{0};    // bits per value on the wire
        bool is_string{false};
        value_checker valid;
        std::vector<std::uint32_t> slot;   // per entity index: position + 1, 0 = none
        std::vector<std::uint32_t> dense;  // entity indices
        std::vector<std::byte> bytes;      // dense.size() * stride
        std::vector<std::string> texts;    // a string type's values

        [[nodiscard]] bool contains(std::uint32_t index) const noexcept {
            return index < slot.size() && slot[index] != 0;
        }
        [[nodiscard]] std::span<const std::byte> value(std::uint32_t index) const noexcept {
            const std::uint32_t at = slot[index] - 1;
            return {bytes.data() + std::size_t{at} * stride, stride};
        }
        [[nodiscard]] bool same(std::uint32_t index, const value_store& other) const noexcept;
        // Adds or replaces; returns the bytes to fill (stride of them) for a fixed-size type.
        std::byte* set(std::uint32_t index) {
            if (index < slot.size() && slot[index] != 0) [[likely]] {
                return bytes.data() + std::size_t{slot[index] - 1} * stride;
            }
            return add(index);
        }
        std::byte* add(std::uint32_t index);
        void set_text(std::uint32_t index, std::string text);
        void erase(std::uint32_t index);
        void clear();
    };

    struct state {
        std::vector<std::uint32_t> versions;  // per index; 0 = no entity
        std::size_t count{0};
        std::vector<value_store> stores;      // by wire id

        [[nodiscard]] entity_type find(std::uint32_t index) const noexcept {
            return index < versions.size() && versions[index] != 0
                       ? entity_type{index, versions[index]}
                       : entity_type{};
        }
        void clear();
        void reset(const schema& types);
    };

    using columns_type = flatbuffers::Vector<flatbuffers::Offset<wire::Column>>;

    bool apply_message(const wire::ServerMessage& message);
    bool apply_snapshot(const wire::Snapshot& snapshot);
    void report_snapshot_differences(const state& before);
    bool apply_delta(const wire::Delta& delta);
    bool apply_owner_only(const wire::Delta& delta);
    bool apply_checksum(const wire::Checksum& checksum);
    // `notify`: called for each entity added (on_spawn, on_enter), or null.
    bool apply_group(state& target, const wire::EntityGroup& group,
                     const std::function<void(entity_type)>* notify);
    // Drops e and its values from the live state (destroyed, or out of view).
    void forget(entity_type e);
    // The checksum terms of the entity at `index` and all its components; 0 when none.
    [[nodiscard]] std::uint64_t entity_terms(std::uint32_t index) const noexcept;
    // Checks a column's shape for `count` entities; the type, or null after inconsistent().
    const component_info* check_column(const wire::Column& column, std::size_t count,
                                       const char* where);
    bool apply_updates(const columns_type& columns);
    // One update column's values, any type (the fast whole-byte path is in apply_updates).
    bool apply_general(const component_info& info, const wire::Column& column,
                       std::span<const std::byte> bytes);
    bool unknown_update(const component_info& info, std::uint32_t index);
    bool apply_removals(const columns_type& columns);
    bool inconsistent(std::string why);
    // The checksum term of component `id` at `index`, 0 when the entity has none.
    [[nodiscard]] std::uint64_t component_term(std::uint32_t id, std::uint32_t index) const noexcept;

    options options_;
    schema types_;
    state live_;
    state staging_;  // snapshot chunks land here until the last one
    bool staging_active_{false};
    std::uint64_t staging_tick_{0};
    std::uint32_t staging_next_chunk_{0};
    std::uint32_t staging_chunk_count_{0};
    std::uint32_t staging_entity_count_{0};

    bool ready_{false};
    bool awaiting_resync_{false};
    bool resync_reported_{false};
    std::uint64_t tick_{0};
    stats stats_;
    std::string error_;
    std::string resync_reason_;  // the inconsistency; error_ also tells why a delta was refused
    callbacks callbacks_;
    callbacks active_;  // a copy for the message being applied: callbacks may replace callbacks_
    bool applying_{false};
    std::uint64_t event_tick_{0};
    std::vector<std::uint32_t> scratch_;  // safe to share: apply() never nests
    std::vector<std::byte> value_scratch_;
};

}  // namespace ecsnet::protocol
