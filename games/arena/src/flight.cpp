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
    const float length = std::hypot(x, y);  // keeps rounding from growing it, tick after tick
    return Heading{x / length, y / length};
}

[[nodiscard]] Velocity accelerated(Velocity v, Heading h, float thrust, float dt) noexcept {
    v.x += h.x * thrust * rules::ship_thrust * dt;
    v.y += h.y * thrust * rules::ship_thrust * dt;
    const float keep = std::max(0.0F, 1.0F - rules::ship_drag * dt);
    v.x *= keep;
    v.y *= keep;
    const float speed = std::hypot(v.x, v.y);
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
}

}  // namespace

void add_steer(ecs::Scheduler& scheduler) {
    scheduler.add("steer",
                  ecs::component_access{}.reads<Pilot, Ship, Position>().writes<Heading, Velocity>(),
                  steer);
}

void add_move(ecs::Scheduler& scheduler, float size) {
    const float half = size / 2.0F;
    scheduler.add("move", ecs::component_access{}.writes<Position, Velocity>(),
                  [half](ecs::SystemContext& ctx) { move(ctx, half); });
}

void add_settle(ecs::Scheduler& scheduler) {
    scheduler.add("settle",
                  ecs::component_access{}.reads<Ship>().writes<Position, Velocity, Heading>(), settle);
}

}  // namespace ecsnet::arena
