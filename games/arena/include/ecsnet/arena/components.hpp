#pragma once

#include <cmath>
#include <cstdint>

#include "arena_generated.h"
#include "ecsnet/protocol/components.hpp"
#include "ecsnet/protocol/replicated.hpp"

// The arena game's components (docs/ARENA.md): each carries the fields of its struct in
// arena.fbs. What a client, a bot or a test compiled with the arena's types needs.
namespace ecsnet::arena {

// Positions travel quantized over [-max_half_size, max_half_size]: the largest arena is
// twice that wide.
inline constexpr float max_half_size = 8192.0F;

struct Position {
    float x{};
    float y{};
    [[nodiscard]] bool valid() const noexcept { return std::isfinite(x) && std::isfinite(y); }
    friend bool operator==(const Position&, const Position&) = default;
};

// Units per second.
struct Velocity {
    float x{};
    float y{};
    [[nodiscard]] bool valid() const noexcept { return std::isfinite(x) && std::isfinite(y); }
    friend bool operator==(const Velocity&, const Velocity&) = default;
};

// A unit vector rather than an angle: interpolating between two ticks then never crosses the
// seam at +-pi (a renderer takes atan2(y, x)).
struct Heading {
    float x{1.0F};
    float y{};
    friend bool operator==(const Heading&, const Heading&) = default;
};

// The player's controls for one tick, an input type: the server writes the value stamped for
// tick T into the ship before the systems of T run, and repeats the last one when none came.
struct Pilot {
    float thrust{};  // 0 .. 1
    float turn{};    // -1 .. 1, +1 counter-clockwise
    bool fire{};
    bool laser{};  // the hitscan weapon (rules::laser_*)
    [[nodiscard]] bool valid() const noexcept {
        return thrust >= 0.0F && thrust <= 1.0F && turn >= -1.0F && turn <= 1.0F;
    }
    friend bool operator==(const Pilot&, const Pilot&) = default;
};

enum class ship_status : std::uint8_t { flying = 0, shielded = 1, wrecked = 2 };

struct Ship {
    std::uint8_t status{};  // a ship_status
    [[nodiscard]] ship_status state() const noexcept { return static_cast<ship_status>(status); }
    [[nodiscard]] bool valid() const noexcept { return status <= 2; }
    friend bool operator==(const Ship&, const Ship&) = default;
};

struct Asteroid {
    std::uint8_t size{};  // 1 small .. 3 large
    [[nodiscard]] bool valid() const noexcept { return size >= 1 && size <= 3; }
    friend bool operator==(const Asteroid&, const Asteroid&) = default;
};

// Also the bullet's spawn key (client::prediction::spawns): who fired it, at which input tick,
// and its sequence in that tick, the same on the server and in a client's prediction.
struct Bullet {
    std::uint32_t shooter{};   // the owner id of the player who fired it
    std::uint32_t tick{};      // the tick of the input that fired it (low 32 bits)
    std::uint16_t sequence{};  // among the bullets its shooter fired in that tick
    friend bool operator==(const Bullet&, const Bullet&) = default;
};

// A ship's last laser shot, as the server resolved it (lag-compensated: docs/PREDICTION.md).
struct Laser {
    std::uint32_t tick{};    // the server tick of the shot (low 32 bits); 0: never fired
    float length{};          // from the muzzle to where the beam stopped
    std::uint32_t target{};  // the entity index of the ship hit + 1; 0: a miss
    friend bool operator==(const Laser&, const Laser&) = default;
};

// The player's own tally: replicated to its owner only.
struct Stats {
    std::uint32_t score{};
    std::uint16_t ammo{};
    std::uint16_t deaths{};
    friend bool operator==(const Stats&, const Stats&) = default;
};

// The rules' numbers, shared by the server, the bot and renderers: units and seconds.
namespace rules {
inline constexpr float ship_radius = 14.0F;
inline constexpr float ship_thrust = 260.0F;      // acceleration at full thrust
inline constexpr float ship_turn_rate = 3.6F;     // radians per second at full turn
inline constexpr float ship_max_speed = 360.0F;
inline constexpr float ship_drag = 0.6F;          // fraction of the speed lost per second
inline constexpr float ship_stop_speed = 2.0F;    // slower than this: at rest
inline constexpr float bullet_speed = 600.0F;     // plus the ship's velocity
inline constexpr float bullet_lifetime = 1.0F;
inline constexpr float fire_interval = 0.18F;
inline constexpr std::uint16_t max_ammo = 12;
inline constexpr float reload_interval = 0.4F;    // one round back
inline constexpr float respawn_delay = 3.0F;
inline constexpr float shield_time = 2.0F;        // after a respawn, or until the ship fires
inline constexpr float free_spot_clearance = 160.0F;
inline constexpr float laser_range = 600.0F;      // from the muzzle
inline constexpr float laser_interval = 1.0F;     // between two shots
inline constexpr float muzzle = ship_radius + 2.0F;  // where bullets and the laser leave
inline constexpr std::uint32_t ship_points = 250;

[[nodiscard]] constexpr float asteroid_radius(std::uint8_t size) noexcept {
    return size <= 1 ? 12.0F : size == 2 ? 24.0F : 40.0F;
}
[[nodiscard]] constexpr std::uint32_t asteroid_points(std::uint8_t size) noexcept {
    return size <= 1 ? 100 : size == 2 ? 50 : 20;
}
}  // namespace rules

}  // namespace ecsnet::arena

namespace ecsnet::protocol {
template <>
struct replicated<arena::Position>
    : replicate<arena::wire::Position, "position",
                replicate_options{.written_by = writer::server,
                                  .quantized = {.min = -arena::max_half_size,
                                                .max = arena::max_half_size,
                                                .step = 1.0 / 16},
                                  .interpolate = true}> {};
template <>
struct replicated<arena::Velocity>
    : replicate<arena::wire::Velocity, "velocity",
                replicate_options{.written_by = writer::server,
                                  .quantized = {.min = -1024, .max = 1024, .step = 1.0 / 16}}> {};
template <>
struct replicated<arena::Heading>
    : replicate<arena::wire::Heading, "heading",
                replicate_options{.written_by = writer::server,
                                  .quantized = {.min = -1, .max = 1, .step = 1.0 / 4096},
                                  .interpolate = true}> {};
template <>
struct replicated<arena::Pilot>
    : replicate<arena::wire::Pilot, "pilot",
                replicate_options{.quantized = {.min = -1, .max = 1, .step = 1.0 / 64},
                                  .input = true}> {};
template <>
struct replicated<arena::Ship>
    : replicate<arena::wire::Ship, "ship", replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<arena::Asteroid>
    : replicate<arena::wire::Asteroid, "asteroid",
                replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<arena::Bullet>
    : replicate<arena::wire::Bullet, "bullet", replicate_options{.written_by = writer::server}> {};
template <>
struct replicated<arena::Stats>
    : replicate<arena::wire::Stats, "stats",
                replicate_options{.written_by = writer::server, .owner_only = true}> {};
template <>
struct replicated<arena::Laser>
    : replicate<arena::wire::Laser, "laser", replicate_options{.written_by = writer::server}> {};
}  // namespace ecsnet::protocol
