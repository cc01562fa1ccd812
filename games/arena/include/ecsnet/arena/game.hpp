#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <unordered_map>
#include <vector>

#include "ecsnet/arena/components.hpp"
#include "ecsnet/arena/flight.hpp"
#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/game.hpp"
#include "ecsnet/server/simulation/lag_history.hpp"

// The arena game (docs/ARENA.md), a module on the engine's public API: ships steered by their
// players' input, bullets, drifting asteroids, score and respawn, on a big map whose view
// follows each player's ship. arena-server runs it.
namespace ecsnet::arena {

// How far a player sees (half the side of its square of cells) unless --interest-radius says.
inline constexpr float default_view_radius = 700.0F;

// What --arena-size, --asteroids, --arena-seed, --no-lag-compensation and --lag-window-ms set.
struct settings {
    float size = default_arena_size;  // the arena is the square [-size / 2, size / 2]^2
    std::size_t asteroids = 120;
    std::uint64_t seed = 1;
    // The laser hits what its shooter saw (the render tick its Input carried), within the
    // window; off: it hits where ships are at the server's present.
    bool lag_compensation = true;
    std::int64_t lag_window_ms = server::lag_history::default_window.count();
};

}  // namespace ecsnet::arena

// Kept in checkpoints (--state-dir) though never replicated: a restored ship keeps its clocks.
template <>
struct ecsnet::protocol::persistent<ecsnet::arena::ShipTimers>
    : ecsnet::protocol::persist<"ship_timers"> {};

namespace ecsnet::arena {

// Server-side only, never replicated or kept: until the laser may fire again, in seconds (a
// restored ship gets one at its first tick).
struct LaserCharge {
    float cooldown{};
    friend bool operator==(const LaserCharge&, const LaserCharge&) = default;
};

// What the systems share: the settings, the random generator (the same seed and the same
// inputs play the same game), each player's ship, and where the solid things were.
struct state {
    explicit state(settings s) : config{s}, rng{s.seed} {}

    struct body {
        ecs::Entity entity;
        float x;
        float y;
        float radius;
    };
    // A uniform grid over the arena, rebuilt by the collision system each tick: bodies by
    // cell (asteroids, and ships that can be hit).
    struct grid {
        float cell{128.0F};
        float origin{};  // the arena's lower corner, on both axes
        std::size_t side{0};
        std::vector<std::vector<body>> cells;
    };

    settings config;
    std::mt19937_64 rng;
    std::unordered_map<std::uint32_t, ecs::Entity> players;  // connected players' ships
    grid asteroids;
    grid ships;  // those not wrecked
    // Told of every ship spawn_ship() makes (the server's game follows it with the view).
    std::function<void(std::uint32_t owner, ecs::Entity ship)> on_new_ship;
    // Lag compensation (the laser system): where the ships that can be hit were at each of
    // the last ticks (made at the first tick, at the scheduler's rate), the server's tick, and
    // the render tick each player's client was showing (server::input_view). Without the two
    // functions (a world without a server) the laser hits at the present, by the scheduler's
    // tick.
    std::optional<server::lag_history> history;
    std::function<std::uint64_t()> server_tick;
    std::function<std::optional<double>(std::uint32_t owner)> view_of;
};

// Position, Velocity, Heading, Pilot, Ship, Asteroid, Bullet, Stats, Laser, in this order
// (their wire ids follow Owner's).
void register_components(protocol::component_registry& types);

// The systems, in tick order: steer (the Pilot input turns and thrusts), gun (the Pilot fires),
// move (and bounce off the walls), collide (bullets, ships, asteroids: score and deaths),
// lifecycle (bullets expire, wrecks respawn, shields drop, ammo reloads, a player whose ship
// was destroyed gets a new one, asteroids are topped up, and entities a client spawned are
// removed), settle (ships end the tick on the wire's grid), laser (the ships that can be hit
// are recorded for lag compensation, then each laser fired hits the first ship its beam
// enters as the shooter saw them: a wreck and ship_points, Laser says what happened). steer,
// move and settle are the predicted ones (flight.hpp), which clients run too. Entities that
// do not change are not written.
void add_systems(ecs::Scheduler& scheduler, std::shared_ptr<state> game);

// A new ship for `owner` at a free spot, shielded, with full ammo and its Pilot at rest; it
// becomes the player's ship (state::ships, state::on_new_ship).
ecs::Entity spawn_ship(ecs::World& world, state& game, std::uint32_t owner);
// The live ship `owner` owns, or null.
[[nodiscard]] ecs::Entity find_ship(ecs::World& world, std::uint32_t owner);
// Large asteroids at free spots, drifting, until there are settings::asteroids.
void top_up_asteroids(ecs::World& world, state& game, std::size_t at_most);
// Rebuilds the grids of where asteroids and ships are, from the world.
void locate_bodies(ecs::World& world, state& game);

// All of it for a server: the options (--arena-size, --asteroids, --arena-seed), the
// components, the systems, the asteroids, interest management that follows each player's
// ship (clients cannot move their focus), and a ship for each player that joins.
[[nodiscard]] server::game game(settings defaults = {});

}  // namespace ecsnet::arena
