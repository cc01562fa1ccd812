#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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

    // The whole replicated world at `tick`, in frames of about max_chunk_bytes.
    [[nodiscard]] std::vector<frame> encode_snapshot(const ecs::World& world, std::uint64_t tick,
                                                     const snapshot_options& options = {});

private:
    struct group {
        std::uint64_t mask;
        std::vector<ecs::Entity> entities;
    };

    void group_by_mask(const ecs::World& world, std::span<const ecs::Entity> entities,
                       std::vector<group>& out);
    using columns_offset =
        flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::Column>>>;

    [[nodiscard]] std::uint64_t mask_of(const ecs::World& world, ecs::Entity e) const;
    [[nodiscard]] flatbuffers::Offset<wire::EntityGroup> encode_group(
        const ecs::World& world, std::uint64_t mask, std::span<const ecs::Entity> entities);
    [[nodiscard]] columns_offset encode_updates(const ecs::World& world,
                                                const ecs::World::change_set_type& changes);
    [[nodiscard]] columns_offset encode_removals(const ecs::World::change_set_type& changes);

    const component_registry* types_;

    flatbuffers::FlatBufferBuilder fbb_{64 * 1024};
    index_set_plan plan_;
    std::vector<std::uint32_t> indices_;
    std::vector<ecs::Entity> ordered_;
    std::vector<flatbuffers::Offset<wire::Column>> columns_;
    std::vector<group> groups_;
    std::vector<std::uint64_t> masks_;  // snapshot: per entity index
};

}  // namespace ecsnet::protocol
