#pragma once

#include "ecsnet/arena/components.hpp"
#include "ecsnet/ecs/scheduler.hpp"

// The arena's predicted part (docs/PREDICTION.md): the systems that fly a ship. The server
// registers them among the others (add_systems); a client that predicts registers the same
// ones on its prediction (predicted.hpp): one code, compiled into both.
namespace ecsnet::arena {

// In this order (the server runs its gun between the two: bullets leave the muzzle where the
// ship was, and fly in their first tick):
// steer: a ship's Pilot turns and thrusts it (not a wreck);
// move: everything with a Velocity moves and bounces off the walls of an arena `size` wide.
// Entities that do not change are not written.
void add_steer(ecs::Scheduler& scheduler);
void add_move(ecs::Scheduler& scheduler, float size);

// settle, the tick's last system: each ship's Position, Velocity and Heading end the tick on
// the wire's grid (protocol::quantized). A client that restarts its prediction from the
// server's state then restarts from exactly what the server goes on from: no drift, no false
// misprediction after a correction.
void add_settle(ecs::Scheduler& scheduler);

}  // namespace ecsnet::arena
