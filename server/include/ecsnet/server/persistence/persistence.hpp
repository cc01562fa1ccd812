#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ecsnet/server/config.hpp"
#include "ecsnet/server/persistence/journal.hpp"
#include "ecsnet/server/operations/metrics.hpp"
#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/persistence/state_dir.hpp"
#include "ecsnet/server/persistence/world_image.hpp"

// What a server keeps on disk (--state-dir, docs/PERSISTENCE.md): at start it restores the
// newest checkpoint that verifies and replays the journal after it; while it runs, it copies
// the world on the tick every --checkpoint-seconds and writes the copy on a thread of its own;
// with --journal it runs the journal; at shutdown it writes a last checkpoint.
namespace ecsnet::server {

struct restore_summary {
    std::uint64_t tick{0};       // the world's tick after the restore
    std::size_t entities{0};
    std::string checkpoint;      // the file restored; empty: none (a new world, or only a journal)
    replay_report journal;
    double milliseconds{0.0};
};

class persistence {
public:
    using clock = std::chrono::steady_clock;

    // Opens and locks the state dir. Throws std::runtime_error (state_dir's messages).
    // `tokens`: the admitted connect tokens, kept with the world and restored with it.
    persistence(const server_config& config, std::string game,
                const protocol::component_registry& types, server_metrics& metrics,
                replay_cache& tokens);
    persistence(const persistence&) = delete;
    persistence& operator=(const persistence&) = delete;
    // Waits for a checkpoint being written and the journal's last batches.
    ~persistence();

    // At start, into a world that never had an entity: the newest checkpoint that verifies
    // (each newer one that does not is logged with why), then every journal segment after it.
    // Empty when the dir holds nothing: a new world. Throws restore_error naming the type when
    // the game's types changed, std::runtime_error when checkpoints exist but none verifies.
    [[nodiscard]] std::optional<restore_summary> restore(ecs::World& world, owner_registry& owners);
    // Once the game is set up, before the first tick (and before the server listens): the
    // world is first written as a checkpoint of `tick`, so that a kill at any moment after
    // finds what setup() made on disk and each segment starts clean; then, with --journal,
    // the segment for the ticks after `tick` is opened. Throws std::runtime_error when that
    // checkpoint cannot be written.
    void start(const ecs::World& world, const owner_registry& owners, std::uint64_t tick);

    // The journal, with --journal (after start()).
    [[nodiscard]] journal_writer* journal() noexcept { return journal_.get(); }

    [[nodiscard]] bool checkpoint_due(clock::time_point now) const noexcept;
    // World thread, after a tick: copies the world (the only part on the tick) and hands the
    // copy to the writer thread; the journal's later batches go to a new segment. Skipped
    // (counted, false) while the previous checkpoint is still being written.
    bool checkpoint(const ecs::World& world, const owner_registry& owners, std::uint64_t tick);
    // Shutdown: the journal's batches, then a last checkpoint, written before it returns.
    // Logs (and counts) a failure rather than throwing, and returns false.
    [[nodiscard]] bool final_checkpoint(const ecs::World& world, const owner_registry& owners,
                                        std::uint64_t tick);

private:
    [[nodiscard]] world_image copy(const ecs::World& world, const owner_registry& owners,
                                   std::uint64_t tick);
    // Encodes, writes, prunes; logs. Returns false on failure (logged, counted).
    bool write(const world_image& image, double copy_ms);
    void run();

    server_config config_;
    std::string game_;
    const protocol::component_registry& types_;
    server_metrics& metrics_;
    replay_cache& tokens_;
    state_dir dir_;
    std::unique_ptr<journal_writer> journal_;
    clock::time_point next_checkpoint_;

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::optional<world_image> pending_;  // handed to the writer thread
    double pending_copy_ms_{0.0};
    bool writing_{false};
    bool stopping_{false};
    std::thread thread_;
};

}  // namespace ecsnet::server
