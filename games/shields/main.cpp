// shields-server: a game of its own on ecsnet, the tutorial of docs/EXTENDING.md. Clients spawn
// beacons; every beacon gets a shield that the server recharges each tick.
#include <algorithm>
#include <cstdint>

#include "ecsnet/server/run.hpp"
#include "ecsnet/server/server.hpp"
#include "shields_generated.h"  // flatc, from shields.fbs

namespace ecs = ecsnet::ecs;
namespace protocol = ecsnet::protocol;

// 1. The components: the fields of their shields.fbs structs, in order and type.
struct Beacon {
    float x;
    float y;
    std::uint8_t team;
};
struct Shield {
    float strength;
    float capacity;
};

// 2. How they replicate: wire name, who may set them, options.
template <>
struct protocol::replicated<Beacon>
    : protocol::replicate<shields::wire::Beacon, "beacon",
                          protocol::replicate_options{
                              .quantized = {.min = -2048, .max = 2048, .step = 1.0 / 64}}> {};
template <>
struct protocol::replicated<Shield>
    : protocol::replicate<shields::wire::Shield, "shield",
                          protocol::replicate_options{.written_by = protocol::writer::server}> {};

constexpr float recharge_per_second = 10.0F;

int main(int argc, char** argv) {
    ecsnet::server::game game;
    game.name = "shields";
    // 3. Register them; wire ids follow the core's Owner, in this order.
    game.register_components = [](protocol::component_registry& types) {
        types.add<Beacon>();
        types.add<Shield>();
    };
    // 4. The rules: a beacon comes with an empty shield, shields recharge, two beacons wait.
    game.setup = [](ecsnet::server::server& service) {
        // A listener runs inside whatever added the Beacon, a client's command included:
        // assume nothing of the entity (a Beacon removed and set again finds its Shield).
        service.world().on_construct<Beacon>().connect([](ecs::World& w, ecs::Entity e) {
            w.emplace_or_replace<Shield>(e, 0.0F, 100.0F);
        });
        service.scheduler().add(
            "recharge", ecs::component_access{}.writes<Shield>(), [](ecs::SystemContext& ctx) {
                const auto gain = recharge_per_second * static_cast<float>(ctx.dt);
                ctx.world.view<Shield>().each([&](Shield& s) {
                    if (s.strength >= s.capacity) {
                        return false;  // unchanged: costs nothing on the wire
                    }
                    s.strength = std::min(s.capacity, s.strength + gain);
                    return true;
                });
            });
        for (std::uint8_t team = 0; team < 2 && !service.restored(); ++team) {
            service.world().emplace<Beacon>(service.world().create(), -100.0F + 200.0F * team,
                                            0.5F, team);
        }
    };
    return ecsnet::server::run(argc, argv, game);
}
