#include "ecsnet/server/persistence/persistence.hpp"

#include "../thread_name.hpp"

#include <spdlog/spdlog.h>

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
    if (thread_.joinable()) {
        {
            const std::lock_guard lock{mutex_};
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
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
        world_image image = copy(world, owners, tick);
        if (!write(image, ms_since(started))) {
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
    thread_ = std::thread{[this] {
        detail::name_this_thread("checkpoint");
        run();
    }};
}

bool persistence::checkpoint_due(clock::time_point now) const noexcept {
    return config_.checkpoint_interval.count() > 0 && now >= next_checkpoint_;
}

world_image persistence::copy(const ecs::World& world, const owner_registry& owners,
                              std::uint64_t tick) {
    world_image image = capture(world, types_);
    image.tick = tick;
    image.game = game_;
    image.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count();
    image.owners = owners.save();
    image.next_owner = owners.next_id();
    image.tokens = tokens_.save();
    return image;
}

bool persistence::checkpoint(const ecs::World& world, const owner_registry& owners,
                             std::uint64_t tick) {
    const auto now = clock::now();
    next_checkpoint_ = now + config_.checkpoint_interval;
    {
        const std::lock_guard lock{mutex_};
        if (writing_ || pending_) {
            metrics_.checkpoint_skipped();
            spdlog::warn("checkpoint at tick {} skipped: the previous one is still being written "
                         "(--checkpoint-seconds {} is shorter than a write)",
                         tick, config_.checkpoint_interval.count());
            return false;
        }
    }
    world_image image = copy(world, owners, tick);
    const double copy_ms = ms_since(now);
    metrics_.checkpoint_copied(copy_ms / 1000.0);
    if (journal_) {
        journal_->rotate(dir_.journal_path(tick), tick);
    }
    {
        const std::lock_guard lock{mutex_};
        pending_ = std::move(image);
        pending_copy_ms_ = copy_ms;
    }
    wake_.notify_one();
    return true;
}

bool persistence::final_checkpoint(const ecs::World& world, const owner_registry& owners,
                                   std::uint64_t tick) {
    if (journal_) {
        journal_->flush();
    }
    {
        std::unique_lock lock{mutex_};
        idle_.wait(lock, [&] { return !writing_ && !pending_; });
    }
    const auto started = clock::now();
    const world_image image = copy(world, owners, tick);
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
        spdlog::info("checkpoint tick {}: copied {} entities in {:.2f} ms on the tick, written {} "
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

void persistence::run() {
    for (;;) {
        world_image image;
        double copy_ms = 0.0;
        {
            std::unique_lock lock{mutex_};
            wake_.wait(lock, [&] { return stopping_ || pending_; });
            if (!pending_) {
                return;
            }
            image = std::move(*pending_);
            pending_.reset();
            copy_ms = pending_copy_ms_;
            writing_ = true;
        }
        (void)write(image, copy_ms);
        {
            const std::lock_guard lock{mutex_};
            writing_ = false;
        }
        idle_.notify_all();
    }
}

}  // namespace ecsnet::server
