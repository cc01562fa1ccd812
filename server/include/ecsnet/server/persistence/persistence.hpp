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
// newest checkpoint that verifies and replays the journal after it; while it runs, every
// --checkpoint-seconds a thread of its own copies the world between two ticks and writes it;
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
    // World thread, at the end of a tick: takes the owners and tokens, and asks the checkpoint
    // thread to copy the world between this tick and the next (then to write the copy); the
    // journal's later batches go to a new segment. Skipped (counted, false) while the previous
    // checkpoint is still being written. Until wait_for_copy() returns, `world` must not change.
    bool checkpoint(const ecs::World& world, const owner_registry& owners, std::uint64_t tick);
    // World thread, before anything changes the world: waits until the checkpoint thread has
    // copied it (at once when no copy is asked or under way). The copy uses the time between
    // ticks; a tick waits only for a copy longer than that.
    void wait_for_copy();
    // Shutdown: the journal's batches, then a last checkpoint, written before it returns.
    // Logs (and counts) a failure rather than throwing, and returns false.
    [[nodiscard]] bool final_checkpoint(const ecs::World& world, const owner_registry& owners,
                                        std::uint64_t tick);

private:
    // Copies into `image`, reusing its memory (a previous checkpoint's).
    void copy(const ecs::World& world, const owner_registry& owners, std::uint64_t tick,
              world_image& image);
    // What the image holds besides the world: owners, tokens, and the tick, game and wall clock.
    void copy_owners_and_tokens(const owner_registry& owners, std::uint64_t tick,
                                world_image& image);
    // Encodes, writes, prunes; logs. Returns false on failure (logged, counted).
    bool write(const world_image& image, double copy_ms);
    void run_copies();
    void run_writes();

    server_config config_;
    std::string game_;
    const protocol::component_registry& types_;
    server_metrics& metrics_;
    replay_cache& tokens_;
    state_dir dir_;
    std::unique_ptr<journal_writer> journal_;
    clock::time_point next_checkpoint_;

    // Two threads: one copies the world between two ticks (at the server's priority: a tick may
    // be waiting for it), the other encodes and writes the copy at the lowest priority, so that
    // on a server with one core it takes only what the ticks leave.
    std::mutex mutex_;
    std::condition_variable wake_copier_;
    std::condition_variable wake_writer_;
    std::condition_variable copied_;
    std::condition_variable idle_;
    // Asked of the copier: copy `copy_world_` into the image (owners, tokens and tick already in
    // it). copying_ from the ask until the world is copied.
    std::optional<world_image> to_copy_;
    const ecs::World* copy_world_{nullptr};
    bool copying_{false};
    // Handed to the writer; writing_ until it is written.
    std::optional<world_image> to_write_;
    double copy_ms_{0.0};
    bool writing_{false};
    // The last image written, kept for the next copy to write into: at 1M entities, copying
    // into fresh memory took 5-7x as long (the kernel faulting in and zeroing ~65 MB).
    world_image spare_;
    bool stop_copier_{false};
    bool stop_writer_{false};
    std::thread copier_;
    std::thread writer_;
};

}  // namespace ecsnet::server
