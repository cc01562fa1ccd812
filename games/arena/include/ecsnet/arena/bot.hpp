#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ecsnet/arena/components.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/mirror.hpp"

// A player for the arena that needs no human: what tests and ecsnet-loadgen use to play. It
// sees what a client sees (its mirror), and answers with the Pilot input to send.
namespace ecsnet::arena {

// The player's own ship, as its client sees it.
struct own_ship {
    Position position;
    Velocity velocity;
    Heading heading;
    ship_status status{ship_status::flying};
    std::uint16_t ammo{rules::max_ammo};
};

// An asteroid in view.
struct sighting {
    Position position;
    Velocity velocity;
    float radius{};
};

// The bot's rule, a pure function: dodge the asteroid about to hit the ship (turning away,
// thrusting, firing if it faces it); else turn towards the nearest asteroid, aiming ahead of
// it, close in when it is far, fire when aligned and in range; with nothing in view, cruise in
// a wide circle. A wreck does nothing.
[[nodiscard]] Pilot decide(const own_ship& self, std::span<const sighting> around) noexcept;

// The bot on a client's mirror: finds the ship the client owns, gathers the asteroids in view
// and decides. One per client; not thread-safe.
class bot {
public:
    // nullopt until the mirror holds a ship whose Owner is `client_id` (Welcome's client id).
    [[nodiscard]] std::optional<Pilot> play(const protocol::mirror& mirror, std::uint32_t client_id);
    // The ship the last play() found (the entity to send Input for), or null.
    [[nodiscard]] ecs::Entity ship() const noexcept { return ship_; }

private:
    ecs::Entity ship_;
    std::vector<sighting> around_;
};

}  // namespace ecsnet::arena
