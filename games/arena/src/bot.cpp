#include "ecsnet/arena/bot.hpp"

#include <algorithm>
#include <cmath>

namespace ecsnet::arena {

namespace {

constexpr float look_ahead = 1.0F;      // seconds: asteroids closer than this in time are a threat
constexpr float safety_margin = 24.0F;  // units beyond touching
constexpr float bullet_range = 0.9F * rules::bullet_speed * rules::bullet_lifetime;

struct vec {
    float x;
    float y;
};

[[nodiscard]] vec operator-(vec a, vec b) noexcept { return {a.x - b.x, a.y - b.y}; }
[[nodiscard]] float dot(vec a, vec b) noexcept { return a.x * b.x + a.y * b.y; }
[[nodiscard]] float length(vec a) noexcept { return std::hypot(a.x, a.y); }
[[nodiscard]] vec of(Position p) noexcept { return {p.x, p.y}; }
[[nodiscard]] vec of(Velocity v) noexcept { return {v.x, v.y}; }

// From the heading to `direction`, in radians: positive counter-clockwise, like Pilot::turn.
[[nodiscard]] float angle_to(Heading h, vec direction) noexcept {
    return std::atan2(h.x * direction.y - h.y * direction.x, h.x * direction.x + h.y * direction.y);
}

// Full turn beyond about 20 degrees, proportional below: no overshoot at 30 Hz.
[[nodiscard]] float turn_towards(float angle) noexcept { return std::clamp(angle * 3.0F, -1.0F, 1.0F); }

// How soon `s` passes closest to the ship within look_ahead, and how close: both relative.
struct approach {
    float time;
    float distance;
};
[[nodiscard]] approach closest_approach(const own_ship& self, const sighting& s) noexcept {
    const vec d = of(s.position) - of(self.position);
    const vec w = of(s.velocity) - of(self.velocity);
    const float w2 = dot(w, w);
    const float t = w2 > 0.0F ? std::clamp(-dot(d, w) / w2, 0.0F, look_ahead) : 0.0F;
    return {t, length(vec{d.x + w.x * t, d.y + w.y * t})};
}

}  // namespace

Pilot decide(const own_ship& self, std::span<const sighting> around) noexcept {
    if (self.status == ship_status::wrecked) {
        return Pilot{};
    }
    const sighting* threat = nullptr;
    float soonest = look_ahead;
    const sighting* nearest = nullptr;
    float nearest_distance = 0.0F;
    for (const sighting& s : around) {
        const approach a = closest_approach(self, s);
        if (a.distance < s.radius + rules::ship_radius + safety_margin && a.time <= soonest) {
            threat = &s;
            soonest = a.time;
        }
        const float distance = length(of(s.position) - of(self.position)) - s.radius;
        if (nearest == nullptr || distance < nearest_distance) {
            nearest = &s;
            nearest_distance = distance;
        }
    }
    const bool armed = self.ammo > 0;
    if (threat != nullptr) {
        const vec towards = of(threat->position) - of(self.position);
        const float facing = angle_to(self.heading, towards);
        const float away = angle_to(self.heading, vec{-towards.x, -towards.y});
        return Pilot{std::abs(away) < 1.2F ? 1.0F : 0.2F, turn_towards(away),
                     armed && std::abs(facing) < 0.3F, false};
    }
    if (nearest == nullptr) {
        return Pilot{0.4F, 0.2F, false, false};
    }
    // Aim where the asteroid will be when a bullet gets there.
    const vec to = of(nearest->position) - of(self.position);
    const float flight = length(to) / rules::bullet_speed;
    const vec drift = of(nearest->velocity) - of(self.velocity);
    const vec aim{to.x + drift.x * flight, to.y + drift.y * flight};
    const float angle = angle_to(self.heading, aim);
    const float tolerance = std::atan2(nearest->radius, std::max(length(aim), 1.0F));
    const bool aligned = std::abs(angle) < tolerance;
    float thrust = 0.0F;
    if (nearest_distance > 0.6F * bullet_range && std::abs(angle) < 0.5F) {
        thrust = 1.0F;
    } else if (nearest_distance > 0.3F * bullet_range && std::abs(angle) < 0.5F) {
        thrust = 0.3F;
    }
    return Pilot{thrust, turn_towards(angle), armed && aligned && nearest_distance < bullet_range,
                 false};
}

std::optional<Pilot> bot::play(const protocol::mirror& mirror, std::uint32_t client_id) {
    if (!mirror.contains(ship_)) {
        ship_ = ecs::Entity{};
        mirror.each([&](ecs::Entity e) {
            if (!ship_.is_null()) {
                return;
            }
            const auto owner = mirror.get<protocol::Owner>(e);
            if (owner && owner->client == client_id && mirror.get<Ship>(e)) {
                ship_ = e;
            }
        });
    }
    const auto position = mirror.get<Position>(ship_);
    const auto ship = mirror.get<Ship>(ship_);
    if (!position || !ship) {
        return std::nullopt;
    }
    own_ship self{*position, mirror.get<Velocity>(ship_).value_or(Velocity{}),
                  mirror.get<Heading>(ship_).value_or(Heading{}), ship->state(), rules::max_ammo};
    if (const auto stats = mirror.get<Stats>(ship_)) {
        self.ammo = stats->ammo;
    }
    around_.clear();
    mirror.each([&](ecs::Entity e) {
        const auto rock = mirror.get<Asteroid>(e);
        const auto at = rock ? mirror.get<Position>(e) : std::nullopt;
        if (at) {
            around_.push_back(sighting{*at, mirror.get<Velocity>(e).value_or(Velocity{}),
                                       rules::asteroid_radius(rock->size)});
        }
    });
    return decide(self, around_);
}

}  // namespace ecsnet::arena
