#pragma once

#include <cstddef>
#include <cstdint>

#include "ecsnet/demo/components.hpp"
#include "ecsnet/ecs/scheduler.hpp"
#include "ecsnet/protocol/registry.hpp"
#include "ecsnet/server/game.hpp"

// The demo game, a module on the engine's public API: what ecsnet-server runs.
namespace ecsnet::demo {

// Position, Velocity, Health, Lifetime and Name, in this order (their wire ids follow Owner's).
void register_components(protocol::component_registry& types);

// The systems, in tick order: movement (position += velocity * dt), bounds (keep entities
// inside [-half_extent, half_extent] by bouncing), lifetime (count down, destroy at zero).
// Entities that do not move are not written, so they cost nothing on the wire.
void add_systems(ecs::Scheduler& scheduler, float half_extent);

// Spawns `count` server-owned moving entities (Position, Velocity, Name) for demos and
// benchmarks; deterministic for a given seed.
void spawn_entities(ecs::World& world, std::size_t count, float half_extent,
                    std::uint64_t seed = 7);

// All of it for a server: the components, the systems with --world-half-extent, and
// --demo-entities moving entities.
[[nodiscard]] server::game game();

}  // namespace ecsnet::demo
