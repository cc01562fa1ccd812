#include "ecsnet/demo/game.hpp"

#include <algorithm>
#include <random>
#include <string>

#include "ecsnet/server/server.hpp"

namespace ecsnet::demo {

void register_components(protocol::component_registry& types) {
    types.add<Position>();
    types.add<Velocity>();
    types.add<Health>();
    types.add<Lifetime>();
    types.add<Name>();
}

void add_systems(ecs::Scheduler& scheduler, float half_extent) {
    // Movement and bounds in one pass over the moving entities: at 1M entities a second pass
    // costs milliseconds a tick.
    scheduler.add("movement", ecs::component_access{}.reads<Velocity>().writes<Position, Velocity>(),
                  [half_extent](ecs::SystemContext& ctx) {
                      const auto dt = static_cast<float>(ctx.dt);
                      const auto outside = [&](float value) {
                          return value < -half_extent || value > half_extent;
                      };
                      // Returning false leaves a resting entity unmarked: it costs no bytes.
                      ctx.world.view<Position, const Velocity>().each(
                          [&](ecs::Entity e, Position& p, const Velocity& v) {
                              if (v.x == 0.0F && v.y == 0.0F && !outside(p.x) && !outside(p.y)) {
                                  return false;
                              }
                              p.x += v.x * dt;
                              p.y += v.y * dt;
                              if (!outside(p.x) && !outside(p.y)) {
                                  return true;
                              }
                              // Bounce: back inside, heading inwards.
                              const bool flip_x = (p.x < -half_extent && v.x < 0) ||
                                                  (p.x > half_extent && v.x > 0);
                              const bool flip_y = (p.y < -half_extent && v.y < 0) ||
                                                  (p.y > half_extent && v.y > 0);
                              p.x = std::clamp(p.x, -half_extent, half_extent);
                              p.y = std::clamp(p.y, -half_extent, half_extent);
                              if (flip_x || flip_y) {
                                  ctx.world.patch<Velocity>(e, [&](Velocity& w) {
                                      w.x = flip_x ? -w.x : w.x;
                                      w.y = flip_y ? -w.y : w.y;
                                  });
                              }
                              return true;
                          });
                  });

    scheduler.add("lifetime", ecs::component_access{}.writes<Lifetime>(),
                  [](ecs::SystemContext& ctx) {
                      ctx.world.view<const Lifetime>().each(
                          [&](ecs::Entity e, const Lifetime& life) {
                              if (life.ticks == 0) {
                                  ctx.commands.destroy(e);  // not while the view iterates
                              } else {
                                  ctx.world.patch<Lifetime>(e, [](Lifetime& l) { --l.ticks; });
                              }
                          });
                  });
}

void spawn_entities(ecs::World& world, std::size_t count, float half_extent,
                    std::uint64_t seed) {
    std::mt19937_64 rng{seed};
    std::uniform_real_distribution<float> where(-half_extent, half_extent);
    std::uniform_real_distribution<float> speed(-20.0F, 20.0F);
    for (std::size_t i = 0; i < count; ++i) {
        const ecs::Entity e = world.create();
        world.emplace<Position>(e, where(rng), where(rng));
        world.emplace<Velocity>(e, speed(rng), speed(rng));
        world.emplace<Name>(e, "demo-" + std::to_string(i));
    }
}

server::game game() {
    server::game g;
    g.name = "demo";
    g.register_components = register_components;
    g.setup = [](server::server& service) {
        const auto& config = service.config();
        add_systems(service.scheduler(), config.world_half_extent);
        if (config.interest_radius > 0.0F) {
            const float cell = config.interest_cell > 0.0F ? config.interest_cell
                                                           : config.interest_radius / 2.0F;
            service.interest().use_grid<Position>(
                cell, [](const Position& p) { return server::point{p.x, p.y}; });
        }
        if (config.demo_entities > 0 && !service.restored()) {  // a restored world has them
            spawn_entities(service.world(), config.demo_entities, config.world_half_extent);
        }
    };
    return g;
}

}  // namespace ecsnet::demo
