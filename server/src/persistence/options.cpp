// The persistence part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

#include <chrono>

namespace ecsnet::server::detail {

void add_persistence_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Persistence", "The state dir: checkpoints and the journal");
    std::int64_t& checkpoint_s = cl.number(c.checkpoint_interval.count());
    env(g->add_option("--state-dir", c.state_dir,
                       "Keep the world in this directory (created if missing): checkpoints, "
                       "the journal; restored from it at start (docs/PERSISTENCE.md; empty: "
                       "the world lives in memory only)")
            ->type_name("DIR"),
        "ECSNET_STATE_DIR");
    env(g->add_option("--checkpoint-seconds", checkpoint_s,
                       "With --state-dir, a checkpoint every N seconds (and one at shutdown); "
                       "0: only at shutdown")
            ->type_name("N")
            ->check(CLI::Range(0, 86'400)),
        "ECSNET_CHECKPOINT_SECONDS");
    env(g->add_option("--keep-checkpoints", c.keep_checkpoints,
                       "With --state-dir, checkpoints kept; older ones (and their journal "
                       "segments) are removed")
            ->type_name("N")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_KEEP_CHECKPOINTS");
    env(g->add_flag("--journal", c.journal,
                     "Journal every acknowledged command in --state-dir, made durable before "
                     "its result is sent: kill -9 loses nothing acknowledged (one fsync per tick)"),
        "ECSNET_JOURNAL");
    cl.after_parse([&c, &checkpoint_s] {
        if (c.journal && c.state_dir.empty()) {
            throw CLI::ValidationError("--journal", "needs --state-dir (the journal is kept "
                                                    "there, beside the checkpoints)");
        }
        c.checkpoint_interval = std::chrono::seconds{checkpoint_s};
    });
}

}  // namespace ecsnet::server::detail
