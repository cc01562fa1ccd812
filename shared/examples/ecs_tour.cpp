// A guided tour of the ECS core: entities and handles, components, views, the command buffer,
// systems and the per-tick change set. Run it: build/release/bin/ecs_tour
#include <cstdio>
#include <string>

#include "ecsnet/ecs/ecs.hpp"

namespace ecs = ecsnet::ecs;

struct Position {
    float x, y;
};
struct Velocity {
    float x, y;
};
struct Lifetime {
    int ticks;
};
struct Frozen {};

namespace {

void section(const char* title) { std::printf("\n== %s\n", title); }

void print_changes(const ecs::World::change_set_type& changes) {
    std::printf("  change set: %zu created, %zu destroyed\n", changes.created.size(),
                changes.destroyed.size());
    for (const auto& c : changes.components) {
        std::printf("    %-10.*s added %zu, updated %zu, removed %zu\n",
                    static_cast<int>(c.name.size()), c.name.data(), c.added.size(),
                    c.updated.size(), c.removed.size());
    }
}

}  // namespace

int main() {
    // A world lives only in a shared_ptr; handles keep a weak_ptr to it.
    auto world = ecs::World::make();
    world->register_component<Position>("Position");
    world->register_component<Velocity>("Velocity");
    world->register_component<Lifetime>("Lifetime");

    section("entities and handles");
    const ecs::Entity ship = world->create();
    world->emplace<Position>(ship, 0.0F, 0.0F);
    world->emplace<Velocity>(ship, 1.0F, 0.5F);
    const ecs::Handle handle = world->handle(ship);
    std::printf("created %s, signature %s, handle valid: %d\n", ecs::to_string(ship).c_str(),
                world->signature_of(ship).to_string().c_str(), handle.valid());

    world->destroy(ship);
    const ecs::Entity reused = world->create();  // a freed index is reused at once
    std::printf("destroyed it; new entity %s reuses the index at a newer version\n",
                ecs::to_string(reused).c_str());
    std::printf("old handle valid: %d, try_get<Position>: %s\n", handle.valid(),
                handle.try_get<Position>() ? "value" : "nullopt");
    try {
        (void)handle.get<Position>();
    } catch (const ecs::invalid_entity& e) {
        std::printf("get through the stale handle throws: %s\n", e.what());
    }

    section("views and systems");
    for (int i = 0; i < 5; ++i) {
        const ecs::Entity e = world->create();
        world->emplace<Position>(e, static_cast<float>(i), 0.0F);
        world->emplace<Velocity>(e, 1.0F, static_cast<float>(i));
        world->emplace<Lifetime>(e, 2 + i);
        if (i == 4) {
            world->emplace<Frozen>(e);
        }
    }
    (void)world->take_changes();

    ecs::Scheduler scheduler(1.0 / 30.0);
    scheduler.add("movement", ecs::component_access{}.reads<Velocity, Frozen>().writes<Position>(),
                  [](ecs::SystemContext& ctx) {
                      auto view = ctx.world.view<Position, const Velocity>(ecs::exclude<Frozen>);
                      for (auto [e, position, velocity] : view) {
                          position.x += velocity.x * static_cast<float>(ctx.dt);
                          position.y += velocity.y * static_cast<float>(ctx.dt);
                      }
                  });
    scheduler.add("lifetime", ecs::component_access{}.writes<Lifetime>(),
                  [](ecs::SystemContext& ctx) {
                      // Destroying while iterating would invalidate the view: defer it.
                      ctx.world.view<Lifetime>().each([&](ecs::Entity e, Lifetime& life) {
                          if (--life.ticks <= 0) {
                              ctx.commands.destroy(e);
                          }
                      });
                  });
    for (int tick = 0; tick < 3; ++tick) {
        const auto report = scheduler.run(*world);
        std::printf("tick %llu ran, %zu deferred commands applied, %zu entities alive\n",
                    static_cast<unsigned long long>(report.tick), report.commands_applied,
                    world->alive());
        print_changes(world->take_changes());
    }

    section("access checks");
    scheduler.add("sneaky", ecs::component_access{}.reads<Position>(),
                  [](ecs::SystemContext& ctx) { (void)ctx.world.view<const Velocity>(); });
    try {
        scheduler.run(*world);
    } catch (const ecs::access_violation& e) {
        std::printf("%s\n", e.what());
    }
    return 0;
}
