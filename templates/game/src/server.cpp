// __NAME__-server: the ecsnet server running __NAME__. Every flag of ecsnet-server works here
// (--help lists them): --port, --ws-port and --web-root for the browser page, --tick-rate...
#include <cstdint>
#include <memory>
#include <random>

#include "__NAME__/components.hpp"
#include "__NAME__/systems.hpp"
#include "ecsnet/server/run.hpp"
#include "ecsnet/server/server.hpp"

namespace ecs = ecsnet::ecs;

int main(int argc, char** argv) {
    ecsnet::server::game game;
    game.name = "__NAME__";
    game.register_components = __NAME__::register_components;
    game.setup = [](ecsnet::server::server& service) {
        __NAME__::add_systems(service.scheduler());
        // A player's entity: made when it joins. The server keeps a player's entities for
        // --reconnect-grace after its last connection leaves (a reconnect finds them again:
        // `resumed`), then destroys them.
        auto random = std::make_shared<std::minstd_rand>(std::random_device{}());
        service.on_player_joined = [&service, random](std::uint32_t owner, bool resumed) {
            if (resumed) {
                return;
            }
            ecs::World& world = service.world();
            std::uniform_real_distribution<float> spot(-100.0F, 100.0F);
            const ecs::Entity e = world.create();
            world.emplace<__NAME__::Position>(e, spot(*random), spot(*random));
            world.emplace<__NAME__::Velocity>(e);
            world.emplace<__NAME__::Move>(e);
            world.emplace<ecsnet::protocol::Owner>(e, ecsnet::protocol::Owner{owner});
        };
        // Away, a player stands still: its last Move would otherwise repeat every tick.
        service.on_player_left = [&service](std::uint32_t owner) {
            ecs::World& world = service.world();
            world.view<const ecsnet::protocol::Owner, __NAME__::Move>().each(
                [&](const ecsnet::protocol::Owner& o, __NAME__::Move& m) {
                    if (o.client != owner || m == __NAME__::Move{}) {
                        return false;
                    }
                    m = __NAME__::Move{};
                    return true;
                });
        };
    };
    return ecsnet::server::run(argc, argv, game);
}
