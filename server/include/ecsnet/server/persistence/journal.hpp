#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ecsnet/ecs/world.hpp"
#include "ecsnet/protocol/messages.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/admission/owners.hpp"
#include "ecsnet/server/admission/replay_cache.hpp"

namespace flatbuffers {
class FlatBufferBuilder;
}

// The journal (--journal, docs/PERSISTENCE.md): what each tick's acknowledged commands left in
// the world, appended to the current segment (journal-<base tick>.log, after the checkpoint of
// that tick) and made durable with one fdatasync per tick, on a thread of its own, before that
// tick's CommandResults go out. It records results, not commands: a spawned or changed entity
// as it is after the command (a Row), a destroyed one, a new owner. Replaying it needs no
// system to run and gives the same ids and values whatever the game's systems do.
//
// A segment is an 8-byte magic ECSNJRNL, then frames: u32 payload size, u64 XXH3-64 of the
// payload, a FlatBuffer (schemas/state.fbs): a JournalHeader, then one JournalBatch per tick.
namespace ecsnet::server {

// The segment framing above, for the writer and for inspect-state.
inline constexpr std::string_view journal_magic = "ECSNJRNL";
inline constexpr std::size_t journal_frame_head_bytes = 12;  // u32 size, u64 XXH3-64

inline constexpr std::uint32_t journal_format = 1;

class journal_writer {
public:
    // `durable(error)`: on the writer thread, once the batch is on disk (error empty) or could
    // not be written (then every later batch fails too).
    using durable_fn = std::function<void(const std::string& error)>;

    // Starts the segment `path` (truncated) for the ticks after `base_tick`. Throws
    // std::runtime_error naming the file when it cannot be created.
    journal_writer(std::filesystem::path path, std::uint64_t base_tick, std::string game,
                   const protocol::component_registry& types);
    journal_writer(const journal_writer&) = delete;
    journal_writer& operator=(const journal_writer&) = delete;
    // Writes what was handed over, then stops the thread.
    ~journal_writer();

    // World thread: this tick's records. `e` is alive (row) / was just destroyed.
    void row(const ecs::World& world, ecs::Entity e);
    void destroyed(ecs::Entity e);
    void owner(const stored_owner& owner);
    void token(const replay_cache::entry& token);
    // What an applied client command left: the entity as it is now (a row), or its end.
    void command(const ecs::World& world, const protocol::client_message& message,
                 const protocol::command_result& result);
    // What the tick's systems, hooks and despawns created or destroyed beside its commands'
    // records, so that a replay gives back every entity and id (docs/PERSISTENCE.md). After
    // the tick's commands, before commit().
    void structure(const ecs::World& world, const ecs::World::change_set_type& changes);
    [[nodiscard]] std::size_t pending_records() const noexcept { return records_.size(); }
    // The entities this tick's records name so far, in order; `second`: the record is a row.
    [[nodiscard]] const std::vector<std::pair<ecs::Entity, bool>>& recorded() const noexcept {
        return recorded_;
    }

    // World thread: the records so far become the batch of `tick`. With none, nothing is
    // written, but `durable` still runs after every earlier batch.
    void commit(std::uint64_t tick, durable_fn durable);
    // World thread: a checkpoint of `base_tick` was captured after the last commit: later
    // batches go to a new segment at `path`.
    void rotate(std::filesystem::path path, std::uint64_t base_tick);
    // Blocks until every batch handed over is durable (or failed).
    void flush();

    // Called on the writer thread after each written batch: write + fdatasync seconds, bytes.
    std::function<void(double seconds, std::size_t bytes)> on_commit;

private:
    struct job {
        std::vector<std::uint8_t> frame;    // empty: nothing to write
        durable_fn durable;
        std::filesystem::path new_segment;  // set: rotate before writing `frame` (the header)
    };
    void run();
    void start_batch();
    [[nodiscard]] std::vector<std::uint8_t> header_frame(std::uint64_t base_tick) const;

    const protocol::component_registry& types_;
    std::string game_;
    std::unique_ptr<flatbuffers::FlatBufferBuilder> builder_;
    std::vector<std::uint32_t> records_;  // offsets in builder_
    std::vector<std::pair<ecs::Entity, bool>> recorded_;

    std::mutex mutex_;
    std::condition_variable wake_;
    std::condition_variable idle_;
    std::deque<job> jobs_;
    bool busy_{false};
    bool stopping_{false};
    int fd_{-1};
    std::filesystem::path path_;
    std::string failed_;  // the first write error: every later batch fails with it
    std::thread thread_;
};

// What replaying segments did.
struct replay_report {
    std::size_t segments{0};
    std::size_t batches{0};
    std::size_t records{0};
    std::size_t skipped{0};         // rows older than the slot they name (see PERSISTENCE.md)
    std::uint64_t last_tick{0};     // of the last batch applied; 0: none
    std::vector<std::string> torn;  // "journal-...log: torn tail at byte N (...)", per segment
};

// Applies the batches of `segment` with a tick above `after_tick` to the world, the owners
// and (when given) the admitted connect tokens, in order; a torn or corrupt tail (a crash mid-write: never acknowledged) ends the segment
// and is reported. Throws restore_error (world_image.hpp) when a stored type is incompatible
// with the game's, std::runtime_error when the file cannot be read or is not a journal.
void replay_journal(const std::filesystem::path& segment, std::uint64_t after_tick,
                    ecs::World& world, const protocol::component_registry& types,
                    owner_registry& owners, replay_report& report,
                    replay_cache* tokens = nullptr);

}  // namespace ecsnet::server
