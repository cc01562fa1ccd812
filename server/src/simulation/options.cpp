// The simulation part's command-line options (docs/SERVER.md lists them all).
#include "../command_line.hpp"

namespace ecsnet::server::detail {

void add_simulation_options(command_line& cl) {
    server_config& c = cl.config;
    CLI::Option_group* g = cl.group("Simulation", "The tick, the world's bounds, player input");
    env(g->add_option("--tick-rate", c.tick_rate, "Ticks per second")
            ->check(CLI::Range(1.0, 1000.0)),
        "ECSNET_TICK_RATE");
    env(g->add_option("--demo-entities", c.demo_entities, "Moving demo entities spawned at start"),
        "ECSNET_DEMO_ENTITIES");
    env(g->add_option("--max-entities-per-client", c.max_entities_per_client, "Live entities one client may own"),
        "ECSNET_MAX_ENTITIES_PER_CLIENT");
    env(g->add_option("--max-entities", c.max_entities, "Live entities in the world at most"),
        "ECSNET_MAX_ENTITIES");
    env(g->add_option("--input-buffer-ticks", c.input_buffer_ticks,
                       "How many ticks ahead of the server a player input may be stamped; "
                       "further ahead is refused (InputTooEarly)")
            ->check(CLI::Range(1, 1024)),
        "ECSNET_INPUT_BUFFER_TICKS");
    env(g->add_option("--input-rate", c.input_rate,
                       "Input frames per second per client (token bucket of one second's worth; "
                       "a client sends one per tick, or fewer batched)")
            ->check(CLI::Range(1.0, 100'000.0)),
        "ECSNET_INPUT_RATE");
    env(g->add_option("--world-half-extent", c.world_half_extent, "Entities bounce inside [-E, E] on both axes")
            ->check(CLI::PositiveNumber),
        "ECSNET_WORLD_HALF_EXTENT");
    env(g->add_flag("--strict-access", c.strict_access,
                     "A system's read or write of a component it did not declare stops the "
                     "server (exit 1), instead of failing that system alone each tick: for "
                     "tests and CI"),
        "ECSNET_STRICT_ACCESS");
}

}  // namespace ecsnet::server::detail
