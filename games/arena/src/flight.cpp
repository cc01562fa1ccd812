#include "ecsnet/arena/flight.hpp"

#include <algorithm>
#include <cmath>

namespace ecsnet::arena {

namespace {

// Writes `value` into e's T only when it differs: an unchanged value costs nothing on the wire.
template <typename T>
void store(ecs::World& world, ecs::Entity e, const T& value) {
    if (!(world.get<T>(e) == value)) {
        world.write<T>(e) = value;
    }
}

[[nodiscard]] Heading turned(Heading h, float turn, float dt) noexcept {
    const float a = turn * rules::ship_turn_rate * dt;
    const float c = std::cos(a);
    const float s = std::sin(a);
    const float x = h.x * c - h.y * s;
    const float y = h.x * s + h.y * c;
    // Keeps rounding from growing it, tick after tick. Not std::hypot: glibc's and musl's (the
    // browser's module) differ in the last bit for one unit vector in nine, and the golden
    // replay saw a heading a step apart; + * and sqrt round the same everywhere.
    const float length = std::sqrt(x * x + y * y);
    return Heading{x / length, y / length};
}

[[nodiscard]] Velocity accelerated(Velocity v, Heading h, float thrust, float dt) noexcept {
    v.x += h.x * thrust * rules::ship_thrust * dt;
    v.y += h.y * thrust * rules::ship_thrust * dt;
    const float keep = std::max(0.0F, 1.0F - rules::ship_drag * dt);
    v.x *= keep;
    v.y *= keep;
    const float speed = std::sqrt(v.x * v.x + v.y * v.y);  // not std::hypot: see turned()
    if (speed > rules::ship_max_speed) {
        v.x *= rules::ship_max_speed / speed;
        v.y *= rules::ship_max_speed / speed;
    } else if (speed < rules::ship_stop_speed && thrust == 0.0F) {
        v = Velocity{};
    }
    return v;
}

// Off the walls: back inside, heading inwards.
[[nodiscard]] bool bounce(float& at, float& speed, float half) noexcept {
    if ((at < -half && speed < 0.0F) || (at > half && speed > 0.0F)) {
        speed = -speed;
    }
    const float inside = std::clamp(at, -half, half);
    const bool hit = inside != at;
    at = inside;
    return hit;
}

void steer(ecs::SystemContext& ctx) {
    const auto dt = static_cast<float>(ctx.dt);
    ecs::World& world = ctx.world;
    world.view<const Ship, const Pilot, const Position>().each(
        [&](ecs::Entity e, const Ship& ship, const Pilot& pilot, const Position&) {
            if (ship.state() == ship_status::wrecked) {
                return;
            }
            Heading heading = world.get<Heading>(e);
            if (pilot.turn != 0.0F) {
                heading = turned(heading, pilot.turn, dt);
                store(world, e, heading);
            }
            store(world, e, accelerated(world.get<Velocity>(e), heading, pilot.thrust, dt));
        });
}

void move(ecs::SystemContext& ctx, float half) {
    const auto dt = static_cast<float>(ctx.dt);
    ctx.world.view<Position, const Velocity>().each(
        [&](ecs::Entity e, Position& p, const Velocity& v) {
            if (v.x == 0.0F && v.y == 0.0F) {
                return false;  // at rest: not written, no bytes
            }
            p.x += v.x * dt;
            p.y += v.y * dt;
            Velocity turned_back = v;
            const bool hit_x = bounce(p.x, turned_back.x, half);
            const bool hit_y = bounce(p.y, turned_back.y, half);
            if (hit_x || hit_y) {
                store(ctx.world, e, turned_back);
            }
            return true;
        });
}

void fire(ecs::SystemContext& ctx, ecs::Entity ship, const Position& p, Heading h, Velocity v) {
    const auto bullet = ctx.commands.create();
    ctx.commands.emplace<Position>(
        bullet, Position{p.x + h.x * rules::muzzle, p.y + h.y * rules::muzzle});
    ctx.commands.emplace<Velocity>(bullet, Velocity{v.x + h.x * rules::bullet_speed,
                                                    v.y + h.y * rules::bullet_speed});
    // The cooldown is longer than a tick: one bullet per ship and tick, sequence 0.
    ctx.commands.emplace<Bullet>(bullet, Bullet{ctx.world.get<protocol::Owner>(ship).client,
                                                static_cast<std::uint32_t>(ctx.tick), 0});
    ctx.commands.emplace<BulletLife>(bullet, BulletLife{rules::bullet_lifetime, ship});
}

void gun(ecs::SystemContext& ctx) {
    const auto dt = static_cast<float>(ctx.dt);
    ecs::World& world = ctx.world;
    world.view<const Ship, const Pilot, const Position>().each(
        [&](ecs::Entity e, const Ship& ship, const Pilot& pilot, const Position& p) {
            if (ship.state() == ship_status::wrecked) {
                return;
            }
            ShipTimers timers = world.get<ShipTimers>(e);
            Stats stats = world.get<Stats>(e);
            timers.cooldown = std::max(0.0F, timers.cooldown - dt);
            if (stats.ammo >= rules::max_ammo) {
                timers.reload = rules::reload_interval;
            } else if ((timers.reload -= dt) <= 0.0F) {
                ++stats.ammo;
                timers.reload += rules::reload_interval;
            }
            if (pilot.fire && timers.cooldown <= 0.0F && stats.ammo > 0) {
                fire(ctx, e, p, world.get<Heading>(e), world.get<Velocity>(e));
                --stats.ammo;
                timers.cooldown = rules::fire_interval;
                if (ship.state() == ship_status::shielded) {  // firing drops the shield
                    timers.status = 0.0F;
                    store(world, e, Ship{static_cast<std::uint8_t>(ship_status::flying)});
                }
            }
            store(world, e, timers);
            store(world, e, stats);
        });
}

void settle(ecs::SystemContext& ctx) {
    ecs::World& world = ctx.world;
    world.view<const Ship, const Position, const Velocity, const Heading>().each(
        [&](ecs::Entity e, const Ship&, const Position& p, const Velocity& v, const Heading& h) {
            // Copies: store() may write the component a reference would point into.
            const Position at = protocol::quantized(p);
            const Velocity speed = protocol::quantized(v);
            const Heading towards = protocol::quantized(h);
            store(world, e, at);
            store(world, e, speed);
            store(world, e, towards);
        });
    world.view<const Bullet, const Position, const Velocity>().each(
        [&](ecs::Entity e, const Bullet&, const Position& p, const Velocity& v) {
            const Position at = protocol::quantized(p);
            const Velocity speed = protocol::quantized(v);
            store(world, e, at);
            store(world, e, speed);
        });
}

}  // namespace

void add_steer(ecs::Scheduler& scheduler) {
    scheduler.add("steer",
                  ecs::component_access{}.reads<Pilot, Ship, Position>().writes<Heading, Velocity>(),
                  steer);
}

void add_gun(ecs::Scheduler& scheduler) {
    scheduler.add("gun",
                  ecs::component_access{}
                      .reads<Pilot, Ship, protocol::Owner, Heading>()
                      .writes<Velocity, ShipTimers, Stats, Ship, Position, Bullet, BulletLife>(),
                  gun);
}

void add_move(ecs::Scheduler& scheduler, float size) {
    const float half = size / 2.0F;
    scheduler.add("move", ecs::component_access{}.writes<Position, Velocity>(),
                  [half](ecs::SystemContext& ctx) { move(ctx, half); });
}

void add_settle(ecs::Scheduler& scheduler) {
    scheduler.add("settle",
                  ecs::component_access{}.reads<Ship, Bullet>().writes<Position, Velocity, Heading>(),
                  settle);
}

}  // namespace ecsnet::arena
