// A server with a rule of its own: entities that clients spawn slow down by drag.
#include <boost/asio/signal_set.hpp>

#include "ecsnet/server/server.hpp"

namespace ecs = ecsnet::ecs;
using ecsnet::protocol::Owner, ecsnet::protocol::Velocity;
struct Drag { float per_second; };  // server-side only: not replicated

int main(int argc, char** argv) {
    auto cli = ecsnet::server::parse_command_line(argc, argv);
    if (cli.exit_code) return *cli.exit_code;
    ecsnet::server::setup_logging(cli.config.log_level, cli.config.log_format_);
    boost::asio::io_context io{1};
    ecsnet::server::server service{io, cli.config};
    service.world().on_construct<Owner>().connect(
        [](ecs::World& w, ecs::Entity e) { w.emplace<Drag>(e, 0.5F); });
    service.scheduler().add("drag", ecs::component_access{}.reads<Drag>().writes<Velocity>(),
                            [](ecs::SystemContext& ctx) {
        ctx.world.view<const Drag, Velocity>().each([&](const Drag& d, Velocity& v) {
            const float k = 1.0F - d.per_second * static_cast<float>(ctx.dt);
            v = Velocity{v.x * k, v.y * k};
        });
    });
    service.start();
    boost::asio::signal_set signals{io, SIGINT, SIGTERM};
    signals.async_wait([&](auto, int) { service.stop(); });
    io.run();
}
