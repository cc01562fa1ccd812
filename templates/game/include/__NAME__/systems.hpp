#pragma once

#include <algorithm>

#include "__NAME__/components.hpp"
#include "ecsnet/ecs/scheduler.hpp"

// __NAME__'s systems. They read and write the world only, never the server, so that the same
// code can run anywhere a world is: on the server, in a test, and in a client that predicts
// its own player (they take the world and dt, nothing else, and are deterministic).
namespace __NAME__ {

// Each player moves at player_speed in the direction of its Move, and stops at the field's
// edge.
inline void move(ecsnet::ecs::World& world, float dt) {
    world.view<const Move, Velocity, Position>().each(
        [&](const Move& input, Velocity& v, Position& p) {
            const Velocity wanted{input.x * player_speed, input.y * player_speed};
            const Position next{std::clamp(p.x + wanted.x * dt, -field_half_size, field_half_size),
                                std::clamp(p.y + wanted.y * dt, -field_half_size, field_half_size)};
            if (v == wanted && p == next) {
                return false;  // unchanged: costs nothing on the wire
            }
            v = wanted;
            p = next;
            return true;
        });
}

// Adds the systems, with the components each reads and writes (the world checks them).
inline void add_systems(ecsnet::ecs::Scheduler& scheduler) {
    scheduler.add("move", ecsnet::ecs::component_access{}.reads<Move>().writes<Velocity, Position>(),
                  [](ecsnet::ecs::SystemContext& ctx) {
                      move(ctx.world, static_cast<float>(ctx.dt));
                  });
}

}  // namespace __NAME__
