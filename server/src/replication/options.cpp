// The replication part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

namespace ecsnet::server::detail {

void add_replication_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Replication", "Checksums, interest management, per-client budgets");
    env(g->add_option("--checksum-interval", c.checksum_interval, "Send a world checksum every this many ticks")
            ->check(CLI::Range(1, 1'000'000)),
        "ECSNET_CHECKSUM_INTERVAL");
    env(g->add_option("--checksum-slice", c.checksum_slice, "Entity indices one checksum covers at most; larger worlds are checked a slice per checksum")
            ->check(CLI::Range(1, 1 << 30)),
        "ECSNET_CHECKSUM_SLICE");
    env(g->add_option("--interest-radius", c.interest_radius,
                       "Interest management: each client receives the entities within this distance of its focus, its own and global ones (0: off, every client receives the whole world; games with a position component)")
            ->check(CLI::Range(0.0F, 1e9F)),
        "ECSNET_INTEREST_RADIUS");
    env(g->add_option("--interest-cell", c.interest_cell, "Cell size of the interest grid (0: half the radius)")
            ->check(CLI::Range(0.0F, 1e9F)),
        "ECSNET_INTEREST_CELL");
    env(g->add_option("--client-budget", c.client_budget,
                       "Interest management: bytes per second of tick frames per client; what does not fit is sent later, most urgent first (0: unlimited)")
            ->check(CLI::Range(0.0, 1e12)),
        "ECSNET_CLIENT_BUDGET");
}

}  // namespace ecsnet::server::detail
