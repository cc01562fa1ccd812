#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/checksum.hpp"
#include "ecsnet/protocol/frame.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/protocol/replication.hpp"
#include "ecsnet/server/operations/tick_profile.hpp"
#include "ecsnet/server/replication/client_view.hpp"
#include "ecsnet/server/replication/interest.hpp"

// From a tick's changes to each client's frames (docs/ARCHITECTURE.md). Without interest
// management, one stream encoded once for every client. With it, each client's own frame of
// what it sees (client_view), except that clients that see and hold the whole world share the
// single stream. The server feeds it its joined clients; a benchmark can feed it without
// sockets. World thread only.
namespace ecsnet::server {

struct replicator_options {
    double tick_rate = 30.0;
    std::uint32_t checksum_interval = 30;   // a Checksum every this many ticks per client
    std::uint32_t checksum_slice = 65'536;  // entity indices one single-stream checksum covers
};

struct replicator_stats {
    std::uint64_t view_entered{0};   // entities that came into a view (spawns in view included)
    std::uint64_t view_left{0};      // ... went out of one
    std::uint64_t view_deferred{0};  // sends put off for a byte budget, per tick
};

class replicator {
public:
    // Where a client's frames for the tick go: its delta, its checksum every N ticks, and (the
    // single stream) the owner-only delta of its player. The frames may be shared by clients.
    using sink = std::function<void(std::uint64_t client, const protocol::frame& delta,
                                    const protocol::frame* checksum,
                                    const protocol::frame* owner_only)>;

    // `types` and `interest` outlive the replicator.
    replicator(const protocol::component_registry& types, interest_manager& interest,
               replicator_options options);

    // A client that joined, acting for `owner` (0: none, for an observer); and one that left.
    // `whole_world`: it gets the single stream even under interest management (an observer:
    // no view, no budget).
    void add_client(std::uint64_t id, std::uint32_t owner, bool whole_world = false);
    void remove_client(std::uint64_t id);

    // What a client's mirror starts from, at `tick` (between ticks: joining or resyncing):
    // the snapshot of the world and its player's owner-only values; under interest
    // management an empty snapshot, everything in view then enters.
    [[nodiscard]] std::vector<protocol::frame> start_frames(const ecs::World& world,
                                                            std::uint64_t client,
                                                            std::uint64_t tick);

    // The tick's frames for every client added, in id order.
    void tick(const ecs::World& world, const ecs::World::change_set_type& changes,
              std::uint64_t tick, const sink& send);

    [[nodiscard]] const client_view* view(std::uint64_t client) const noexcept;
    [[nodiscard]] std::size_t clients() const noexcept { return clients_.size(); }
    // Size of the last whole-world snapshot built (all chunks); 0 before the first.
    [[nodiscard]] std::size_t snapshot_bytes() const noexcept { return snapshot_bytes_; }
    [[nodiscard]] const replicator_stats& stats() const noexcept { return stats_; }
    // Where tick() spends its time (view_query, view_plan, encode, checksum, hand_off), or
    // null: not profiled.
    void set_profile(tick_profile* profile) noexcept { profile_ = profile; }

private:
    class single_stream;
    struct client {
        std::uint32_t owner{};
        std::optional<client_view> view;  // under interest management
    };

    [[nodiscard]] protocol::checksum::index_range next_checksum_range(const ecs::World& world);
    void serve_view(const ecs::World& world, std::uint64_t id, client& c,
                    const client_view::context& ctx, single_stream& stream, const sink& send);

    const protocol::component_registry& types_;
    interest_manager& interest_;
    replicator_options options_;
    protocol::replication_encoder encoder_;
    std::map<std::uint64_t, client> clients_;
    tick_changes tick_changes_;
    std::vector<ecs::Entity> desired_;
    client_view::scratch plan_scratch_;
    // What every client's frame takes with nothing in it, for the tick empty_frame_tick_: not
    // charged to budgets (the frame goes every tick whatever the budget), in either mode.
    [[nodiscard]] std::size_t empty_frame_bytes(const ecs::World& world, std::uint64_t tick);
    std::size_t empty_frame_bytes_{0};
    std::uint64_t empty_frame_tick_{~std::uint64_t{0}};
    const ecs::World::change_set_type* changes_{nullptr};  // the tick's, during tick()
    bool tick_changes_built_{false};
    std::uint32_t checksum_next_index_{0};
    std::uint64_t snapshot_tick_{~std::uint64_t{0}};
    std::size_t snapshot_bytes_{0};
    std::vector<protocol::frame> snapshot_cache_;
    replicator_stats stats_;
    tick_profile* profile_{nullptr};
};

}  // namespace ecsnet::server
