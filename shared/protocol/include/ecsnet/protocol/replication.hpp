#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "ecsnet/ecs/index_order.hpp"
#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/columns.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/registry.hpp"

// The server side of replication: a tick's change set becomes one Delta frame, and the whole
// world becomes a chunked Snapshot for a client that joins or resyncs.
namespace ecsnet::protocol {

struct snapshot_options {
    // Soft upper bound on one chunk's frame; a chunk always holds at least one entity.
    std::size_t max_chunk_bytes = 60 * 1024;
};

class replication_encoder {
public:
    // The registry outlives the encoder.
    explicit replication_encoder(const component_registry& types) : types_{&types} {}

    // Encodes the changes of one tick, reading current values from the world, in
    // O(changed). The frame is shared: queue the same bytes to every client.
    [[nodiscard]] frame encode_delta(const ecs::World& world, const ecs::World::change_set_type& changes,
                                     std::uint64_t tick);

    // The tick's changes to types replicated to their owner only: one frame per owner with
    // any (docs/PROTOCOL.md), queued to that owner's clients right after encode_delta()'s.
    // Empty when the registry has no such type.
    struct owner_frame {
        std::uint32_t owner;
        frame bytes;
    };
    [[nodiscard]] std::vector<owner_frame> encode_owner_only(
        const ecs::World& world, const ecs::World::change_set_type& changes, std::uint64_t tick);

    // Every owner-only value of `owner`'s entities, sent after a snapshot's last chunk; nullopt
    // when there is none.
    [[nodiscard]] std::optional<frame> encode_owner_only_snapshot(const ecs::World& world,
                                                                  std::uint32_t owner,
                                                                  std::uint64_t tick);

    // One client's Delta under interest management (server/interest.hpp): the entities named,
    // read from the world now. Types replicated to their owner only are included for
    // `viewer`'s own entities only.
    struct view_changes {
        std::span<const ecs::Entity> destroyed;
        std::span<const ecs::Entity> left;     // out of view: the client forgets them
        std::span<const ecs::Entity> spawned;  // created this tick, whole
        std::span<const ecs::Entity> entered;  // into view, whole
        // Entities and the wire ids (bit i = id i) whose latest state is due: a type the
        // entity has is set, one it lacks is removed.
        std::span<const std::pair<ecs::Entity, std::uint64_t>> updated;
        std::uint32_t viewer = 0;
        // Optional, parallel to `updated`: of each one's wire ids, those the entity has now,
        // when the caller knows already (client_view does); empty: the world is asked.
        std::span<const std::uint64_t> present;
    };
    [[nodiscard]] frame encode_view_delta(const ecs::World& world, const view_changes& changes,
                                          std::uint64_t tick);
    // A Snapshot of nothing at `tick`: under interest management a client starts empty and
    // receives what it sees as entries.
    [[nodiscard]] frame encode_empty_snapshot(std::uint64_t tick);

    // The whole replicated world at `tick`, in frames of about max_chunk_bytes.
    [[nodiscard]] std::vector<frame> encode_snapshot(const ecs::World& world, std::uint64_t tick,
                                                     const snapshot_options& options = {});

private:
    struct group {
        std::uint64_t mask;
        std::vector<ecs::Entity> entities;
    };

    // Entities grouped by mask, groups in the order their first entity came. Cleared groups
    // keep their memory for the next frame.
    class mask_groups {
    public:
        void clear() noexcept {
            used_ = 0;
            last_ = 0;
        }
        void add(std::uint64_t mask, ecs::Entity e);
        [[nodiscard]] std::size_t size() const noexcept { return used_; }
        [[nodiscard]] const group& operator[](std::size_t i) const noexcept { return groups_[i]; }

    private:
        std::vector<group> groups_;  // the first used_ are in use, the rest are spares
        std::size_t used_ = 0;
        std::size_t last_ = 0;  // the previous entity's group, the usual answer
    };
    using columns_offset =
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Column>>>;

    [[nodiscard]] std::uint64_t mask_of(const ecs::World& world, ecs::Entity e,
                                        std::uint32_t viewer = 0) const;
    [[nodiscard]] flatbuffers::Offset<flatbuffers::Vector<const wire::EntityRef*>> encode_refs(
        std::span<const ecs::Entity> entities);
    [[nodiscard]] flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::EntityGroup>>>
    encode_groups(const ecs::World& world, std::span<const ecs::Entity> entities,
                  std::uint32_t viewer);
    [[nodiscard]] flatbuffers::Offset<wire::EntityGroup> encode_group(
        const ecs::World& world, std::uint64_t mask, std::span<const ecs::Entity> entities);
    [[nodiscard]] columns_offset encode_updates(const ecs::World& world,
                                                const ecs::World::change_set_type& changes);
    [[nodiscard]] columns_offset encode_removals(const ecs::World::change_set_type& changes);
    [[nodiscard]] flatbuffers::Offset<wire::Column> encode_set_column(
        const ecs::World& world, std::uint32_t id, std::span<const ecs::Entity> entities);
    [[nodiscard]] flatbuffers::Offset<wire::Column> encode_removal_column(
        std::uint32_t id, std::span<const ecs::Entity> entities);

    struct owner_changes {
        std::map<std::uint32_t, std::vector<ecs::Entity>> set;  // by wire id
        std::map<std::uint32_t, std::vector<ecs::Entity>> removed;
    };
    [[nodiscard]] bool has_owner_only() const noexcept;
    [[nodiscard]] frame finish_owner_only(const owner_changes& changes, std::uint64_t tick);

    const component_registry* types_;

    flatbuffers::FlatBufferBuilder fbb_{64 * 1024};
    index_set_plan plan_;
    std::vector<std::uint32_t> indices_;
    std::vector<ecs::Entity> ordered_;
    std::vector<ecs::Entity> set_scratch_;
    // A churned world's storage order is not the index order; in index order the indices
    // form runs again (8 bytes for all of them instead of 4 each).
    ecs::index_order index_order_;
    const ecs::World* world_{nullptr};  // for finish_owner_only
    mask_groups groups_;
    std::vector<std::uint64_t> masks_;  // snapshot: per entity index
    std::vector<std::vector<ecs::Entity>> view_set_;      // encode_view_delta, by wire id
    std::vector<std::vector<ecs::Entity>> view_removed_;  // encode_view_delta, by wire id
    // The offsets a frame's vectors of tables are made from, kept for their memory: each
    // client's frame would otherwise allocate them every tick.
    std::vector<flatbuffers::Offset<wire::EntityGroup>> group_offsets_;  // encode_groups
    std::vector<flatbuffers::Offset<wire::Column>> group_columns_;       // encode_group
    std::vector<flatbuffers::Offset<wire::Column>> set_columns_;         // encode_view_delta
    std::vector<flatbuffers::Offset<wire::Column>> removed_columns_;     // encode_view_delta
};

}  // namespace ecsnet::protocol
