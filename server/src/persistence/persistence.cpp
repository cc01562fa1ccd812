#include "ecsnet/server/persistence/persistence.hpp"

#include "../thread_name.hpp"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

namespace ecsnet::server {

namespace {

double ms_since(persistence::clock::time_point start) {
    return std::chrono::duration<double, std::milli>(persistence::clock::now() - start).count();
}

}  // namespace

persistence::persistence(const server_config& config, std::string game,
                         const protocol::component_registry& types, server_metrics& metrics,
                         replay_cache& tokens)
    : config_{config},
      game_{std::move(game)},
      types_{types},
      metrics_{metrics},
      tokens_{tokens},
      dir_{config.state_dir} {
    if (config_.keep_checkpoints == 0) {
        throw std::invalid_argument("--keep-checkpoints must be at least 1");
    }
}

persistence::~persistence() {
    // The copier first: what it copied is handed to the writer, which then writes it.
    if (copier_.joinable()) {
        {
            const std::lock_guard lock{mutex_};
            stop_copier_ = true;
        }
        wake_copier_.notify_all();
        copier_.join();
    }
    if (writer_.joinable()) {
        {
            const std::lock_guard lock{mutex_};
            stop_writer_ = true;
        }
        wake_writer_.notify_all();
        writer_.join();
    }
    journal_.reset();  // writes what was handed over
}

std::optional<restore_summary> persistence::restore(ecs::World& world, owner_registry& owners) {
    const auto started = clock::now();
    const auto checkpoints = dir_.checkpoints();
    auto loaded = dir_.load_newest();
    if (loaded) {
        for (const auto& [file, why] : loaded->skipped) {
            spdlog::warn("{}: {}; trying the previous one", file.path.filename().string(), why);
        }
    } else if (!checkpoints.empty()) {
        std::string newest;
        try {
            (void)dir_.load(checkpoints.front().tick);
        } catch (const std::exception& e) {
            newest = e.what();
        }
        throw std::runtime_error(
            "none of the " + std::to_string(checkpoints.size()) + " checkpoints in " +
            dir_.path().string() + " can be read (the newest: " + newest +
            "); refusing to start a new world over them: restore a backup, or move them away "
            "to start anew");
    }
    restore_summary summary;
    std::uint64_t base = 0;
    std::size_t values = 0;
    double checkpoint_ms = 0.0;
    if (loaded) {
        const world_image& image = loaded->image;
        const restore_report report = server::restore(image, world, types_);
        for (const stored_owner& owner : image.owners) {
            owners.restore(owner);
        }
        owners.set_next_id(image.next_owner);
        const auto now = std::chrono::system_clock::now();
        for (const replay_cache::entry& token : image.tokens) {
            tokens_.restore(token, now);
        }
        base = image.tick;
        values = report.values;
        summary.checkpoint = loaded->from.path.filename().string();
        for (const std::string& type : report.migrated) {
            spdlog::info("component type '{}' was migrated from the checkpoint's layout", type);
        }
        for (const std::string& type : report.dropped) {
            spdlog::warn("component type '{}' in the checkpoint was dropped (the game said so)", type);
        }
        checkpoint_ms = ms_since(started);
    }
    const auto journal_started = clock::now();
    std::size_t segments = 0;
    for (const state_dir::file& segment : dir_.journals()) {
        if (segment.tick < base) {
            continue;  // the checkpoint holds it
        }
        replay_journal(segment.path, base, world, types_, owners, summary.journal, &tokens_);
        ++segments;
    }
    for (const std::string& torn : summary.journal.torn) {
        spdlog::info("{}", torn);
    }
    if (summary.journal.skipped > 0) {
        spdlog::warn("{} journal rows named an entity older than its slot and were skipped",
                     summary.journal.skipped);
    }
    if (!loaded && summary.journal.batches == 0) {
        // Nothing was ever acknowledged: segments holding only their header (a server killed
        // before its first batch) are not a world. A new one starts; its start-up checkpoint
        // comes first, and its segment replaces the old one.
        return std::nullopt;
    }
    if (!loaded) {
        spdlog::warn("the journal in {} has {} batches but no checkpoint precedes it (an "
                     "ecsnet older than the start-up checkpoint wrote it): replayed onto an "
                     "empty world, without the entities the game made at its start",
                     dir_.path().string(), summary.journal.batches);
    }
    summary.tick = std::max(base, summary.journal.last_tick);
    summary.entities = world.alive();
    summary.milliseconds = ms_since(started);
    spdlog::info(
        "restored checkpoint tick {} ({} entities, {} values) in {:.1f} ms; replayed {} journal "
        "batches ({} records) in {:.1f} ms; the world continues at tick {} with {} entities",
        base, loaded ? loaded->image.alive() : 0, values, checkpoint_ms, summary.journal.batches,
        summary.journal.records, ms_since(journal_started), summary.tick, summary.entities);
    return summary;
}

void persistence::start(const ecs::World& world, const owner_registry& owners, std::uint64_t tick) {
    {
        // What setup() made or ended (a new world's entities, a restored one's top-ups) exists
        // nowhere else, and after a replay the next segment starts at `tick`: the world as it
        // starts is a checkpoint before anything else can happen to the process.
        const auto started = clock::now();
        copy(world, owners, tick, spare_);
        if (!write(spare_, ms_since(started))) {
            throw std::runtime_error("cannot write the start-up checkpoint (see the error above)");
        }
    }
    if (config_.journal) {
        journal_ = std::make_unique<journal_writer>(dir_.journal_path(tick), tick, game_, types_);
        journal_->on_commit = [this](double seconds, std::size_t bytes) {
            metrics_.journal_committed(seconds, bytes);
        };
    }
    next_checkpoint_ = clock::now() + config_.checkpoint_interval;
    copier_ = std::thread{[this] {
        detail::name_this_thread("checkpoint-copy");
        run_copies();
    }};
    writer_ = std::thread{[this] {
        detail::name_this_thread("checkpoint");
        // Raising a thread's nice value needs no privilege. Failing, it writes at the server's.
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
        run_writes();
    }};
}

bool persistence::checkpoint_due(clock::time_point now) const noexcept {
    return config_.checkpoint_interval.count() > 0 && now >= next_checkpoint_;
}

void persistence::copy(const ecs::World& world, const owner_registry& owners, std::uint64_t tick,
                       world_image& image) {
    capture(world, types_, image);
    copy_owners_and_tokens(owners, tick, image);
}

void persistence::copy_owners_and_tokens(const owner_registry& owners, std::uint64_t tick,
                                world_image& image) {
    image.tick = tick;
    image.game = game_;
    image.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    image.owners = owners.save();
    image.next_owner = owners.next_id();
    image.tokens = tokens_.save();
}

bool persistence::checkpoint(const ecs::World& world, const owner_registry& owners,
                             std::uint64_t tick) {
    const auto now = clock::now();
    next_checkpoint_ = now + config_.checkpoint_interval;
    world_image image;
    {
        const std::lock_guard lock{mutex_};
        if (writing_ || copying_) {
            metrics_.checkpoint_skipped();
            spdlog::warn("checkpoint at tick {} skipped: the previous one is still being copied or "
                         "written (--checkpoint-seconds {} is shorter than a write)",
                         tick, config_.checkpoint_interval.count());
            return false;
        }
        image = std::move(spare_);
    }
    copy_owners_and_tokens(owners, tick, image);
    // The entity pool settles its free list lazily, even in a const call: settled here, the
    // checkpoint thread's copy only reads.
    (void)world.entities().free_count();
    if (journal_) {
        journal_->rotate(dir_.journal_path(tick), tick);
    }
    {
        const std::lock_guard lock{mutex_};
        to_copy_ = std::move(image);
        copy_world_ = &world;
        copying_ = true;
    }
    wake_copier_.notify_one();
    return true;
}

void persistence::wait_for_copy() {
    std::unique_lock lock{mutex_};
    copied_.wait(lock, [&] { return !copying_; });
}

bool persistence::final_checkpoint(const ecs::World& world, const owner_registry& owners,
                                   std::uint64_t tick) {
    if (journal_) {
        journal_->flush();
    }
    world_image image;
    {
        std::unique_lock lock{mutex_};
        idle_.wait(lock, [&] { return !writing_ && !copying_; });
        image = std::move(spare_);
    }
    const auto started = clock::now();
    copy(world, owners, tick, image);
    const double copy_ms = ms_since(started);
    metrics_.checkpoint_copied(copy_ms / 1000.0);
    // The journal's segment stays: after a restart, the restore starts from this checkpoint
    // and replays no segment older than it.
    return write(image, copy_ms);
}

bool persistence::write(const world_image& image, double copy_ms) {
    try {
        const auto started = clock::now();
        const std::vector<std::uint8_t> bytes = encode_checkpoint(image);
        const double encode_ms = ms_since(started);
        const auto written = clock::now();
        dir_.write_checkpoint(image.tick, bytes);
        const double write_ms = ms_since(written);
        const auto removed = dir_.prune(config_.keep_checkpoints);
        metrics_.checkpoint_written((encode_ms + write_ms) / 1000.0, bytes.size(), image.tick);
        spdlog::info("checkpoint tick {}: copied {} entities in {:.2f} ms, written {} "
                     "bytes in {:.2f} ms (encode {:.2f} ms, write+fsync {:.2f} ms); {} old files pruned",
                     image.tick, image.alive(), copy_ms, bytes.size(), encode_ms + write_ms,
                     encode_ms, write_ms, removed.size());
        return true;
    } catch (const std::exception& e) {
        metrics_.checkpoint_failed();
        spdlog::error("checkpoint tick {} failed: {} (the previous checkpoints and the journal "
                      "are kept)",
                      image.tick, e.what());
        return false;
    }
}

void persistence::run_copies() {
    for (;;) {
        world_image image;
        const ecs::World* world = nullptr;
        {
            std::unique_lock lock{mutex_};
            wake_copier_.wait(lock, [&] { return stop_copier_ || to_copy_; });
            if (!to_copy_) {
                return;
            }
            image = std::move(*to_copy_);
            to_copy_.reset();
            world = copy_world_;
        }
        // The world thread waits (wait_for_copy) before its next tick changes the world.
        const auto started = clock::now();
        bool copied = false;
        try {
            const std::uint64_t tick = image.tick;
            capture(*world, types_, image);
            image.tick = tick;
            copied = true;
        } catch (const std::exception& e) {
            metrics_.checkpoint_failed();
            spdlog::error("checkpoint tick {} failed: cannot copy the world: {} (the previous "
                          "checkpoints and the journal are kept)",
                          image.tick, e.what());
        }
        const double copy_ms = ms_since(started);
        {
            const std::lock_guard lock{mutex_};
            copying_ = false;
            if (copied) {
                to_write_ = std::move(image);
                copy_ms_ = copy_ms;
                writing_ = true;
            } else {
                spare_ = std::move(image);
            }
        }
        copied_.notify_all();
        if (copied) {
            metrics_.checkpoint_copied(copy_ms / 1000.0);
            wake_writer_.notify_one();
        } else {
            idle_.notify_all();
        }
    }
}

void persistence::run_writes() {
    for (;;) {
        world_image image;
        double copy_ms = 0.0;
        {
            std::unique_lock lock{mutex_};
            wake_writer_.wait(lock, [&] { return stop_writer_ || to_write_; });
            if (!to_write_) {
                return;
            }
            image = std::move(*to_write_);
            to_write_.reset();
            copy_ms = copy_ms_;
        }
        (void)write(image, copy_ms);
        {
            const std::lock_guard lock{mutex_};
            writing_ = false;
            spare_ = std::move(image);
        }
        idle_.notify_all();
    }
}

}  // namespace ecsnet::server
