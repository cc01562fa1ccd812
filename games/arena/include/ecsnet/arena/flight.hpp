#pragma once

#include "ecsnet/arena/components.hpp"
#include "ecsnet/ecs/scheduler.hpp"

// The arena's predicted part (docs/PREDICTION.md): the systems that fly a ship and fire its
// gun. The server registers them among the others (add_systems); a client that predicts
// registers the same ones on its prediction (predicted.hpp): one code, compiled into both.
namespace ecsnet::arena {

// Never replicated: a ship's clocks, in seconds. The server keeps them in checkpoints; a
// client's prediction keeps its own (prediction::keep).
struct ShipTimers {
    float cooldown{};  // until the gun may fire again
    float reload{};    // until the next round comes back
    float status{};    // until a wreck respawns, or a shield drops
    friend bool operator==(const ShipTimers&, const ShipTimers&) = default;
};

// Never replicated: a bullet's remaining flight and the ship that fired it (on a client, its
// prediction's ship).
struct BulletLife {
    float left{};
    ecs::Entity ship;
};

// In this order:
// steer: a ship's Pilot turns and thrusts it (not a wreck);
// gun: cooldown and reload, a bullet from the muzzle when fire is held (its Bullet names the
// ship's Owner, the tick and sequence 0: the spawn key), the shield dropped by firing;
// bullets leave the muzzle where the ship was, and fly in their first tick;
// move: everything with a Velocity moves and bounces off the walls of an arena `size` wide.
// Entities that do not change are not written.
// The side of the arena unless the server's --arena-size says otherwise.
inline constexpr float default_arena_size = 4000.0F;

void add_steer(ecs::Scheduler& scheduler);
void add_gun(ecs::Scheduler& scheduler);
void add_move(ecs::Scheduler& scheduler, float size);

// settle, the tick's last system: each ship's and bullet's Position and Velocity, and each
// ship's Heading, end the tick on the wire's grid (protocol::quantized). A client that
// restarts its prediction from the server's state then restarts from exactly what the server
// goes on from: no drift, no false misprediction after a correction.
void add_settle(ecs::Scheduler& scheduler);

}  // namespace ecsnet::arena
