#pragma once

#include <cstddef>
#include <cstdint>

#include "ecsnet/ecs/scheduler.hpp"

namespace ecsnet::server {

// The demo game's systems, in tick order: movement (position += velocity * dt), bounds (keep
// entities inside [-half_extent, half_extent] by bouncing), lifetime (count down, destroy at
// zero). Entities that do not move are not written, so they cost nothing on the wire.
void add_game_systems(ecs::Scheduler& scheduler, float half_extent);

// Spawns `count` server-owned moving entities (Position, Velocity, Name) for demos and
// benchmarks; deterministic for a given seed.
void spawn_demo_entities(ecs::World& world, std::size_t count, float half_extent,
                         std::uint64_t seed = 7);

}  // namespace ecsnet::server
