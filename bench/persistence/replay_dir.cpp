// Makes a state dir for measuring a journal replay (issue 37, item 7): a demo world whose
// checkpoint holds --free free slots, then a journal segment with --spawns Rows, each an entity
// spawned into one of those slots after the checkpoint (what a burst of acknowledged spawns
// leaves). `ecsnet-server --state-dir DIR --journal` then restores it and logs the time
// (bench/persistence/measure.sh --replay). The dir's lock is released when this exits.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/demo/game.hpp"
#include "ecsnet/server/persistence/journal.hpp"
#include "ecsnet/server/persistence/state_dir.hpp"
#include "ecsnet/server/persistence/world_image.hpp"

int main(int argc, char** argv) {
    CLI::App app{"persistence-replay-dir: a state dir whose restore replays many spawns into "
                 "many free slots"};
    std::string dir;
    std::size_t free_slots = 1'000'000;
    std::size_t spawns = 100'000;
    std::size_t kept = 1'000;
    app.add_option("dir", dir, "the state dir to make (must not hold a world)")->required();
    app.add_option("--free", free_slots, "free slots in the checkpoint")->capture_default_str();
    app.add_option("--spawns", spawns, "journaled spawns after it (at most --free)")
        ->capture_default_str();
    app.add_option("--alive", kept, "live entities in the checkpoint")->capture_default_str();
    CLI11_PARSE(app, argc, argv);
    if (spawns > free_slots) {
        std::fprintf(stderr, "persistence-replay-dir: --spawns %zu is more than --free %zu\n",
                     spawns, free_slots);
        return 2;
    }
    namespace demo = ecsnet::demo;
    ecsnet::protocol::component_registry types;
    demo::register_components(types);
    auto world = ecsnet::ecs::World::make();
    std::vector<ecsnet::ecs::Entity> made;
    made.reserve(kept + free_slots);
    for (std::size_t i = 0; i < kept + free_slots; ++i) {
        made.push_back(world->create());
        world->emplace<demo::Position>(made.back(), 1.0F, 2.0F);
    }
    // All made first: destroyed one by one, the indices would be reused at once.
    for (std::size_t i = kept; i < made.size(); ++i) {
        world->destroy(made[i]);
    }
    try {
        ecsnet::server::state_dir state{dir};
        if (!state.checkpoints().empty() || !state.journals().empty()) {
            std::fprintf(stderr, "persistence-replay-dir: %s already holds a world\n", dir.c_str());
            return 2;
        }
        constexpr std::uint64_t tick = 100;
        ecsnet::server::world_image image = ecsnet::server::capture(*world, types);
        image.tick = tick;
        image.game = "demo";
        state.write_checkpoint(tick, ecsnet::server::encode_checkpoint(image));
        ecsnet::server::journal_writer journal{state.journal_path(tick), tick, "demo", types};
        // Spawned as the server hands ids out: from the front of the free list, in batches of
        // 1,000 a tick.
        for (std::size_t i = 0; i < spawns; ++i) {
            const auto e = world->create();
            world->emplace<demo::Position>(e, 3.0F, 4.0F);
            world->emplace<demo::Health>(e, 100);
            journal.row(*world, e);
            if ((i + 1) % 1000 == 0 || i + 1 == spawns) {
                journal.commit(tick + 1 + i / 1000, {});
            }
        }
        journal.flush();
        std::printf("%s: a checkpoint of %zu live entities and %zu free slots, then %zu "
                    "journaled spawns\n",
                    dir.c_str(), kept, free_slots, spawns);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "persistence-replay-dir: %s\n", e.what());
        return 1;
    }
    return 0;
}
