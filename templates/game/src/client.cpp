// __NAME__-client: a headless client. It joins, finds its own player, steers it in a circle and
// prints where the server says it is: the loop a game's client runs, without the rendering.
// Exit status 0 when its player moved as steered, 1 otherwise (the smoke test of run.sh).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <thread>

#include "__NAME__/components.hpp"
#include "ecsnet/client/session.hpp"

namespace client = ecsnet::client;
namespace ecs = ecsnet::ecs;
using namespace std::chrono_literals;

int main(int argc, char** argv) {
    client::session_options options;
    options.connect.name = "__NAME__-client";
    double seconds = 5.0;
    CLI::App app{"__NAME__-client: joins a __NAME__-server, steers its player in a circle, prints it"};
    app.add_option("--host", options.connect.host, "Server address")->capture_default_str();
    app.add_option("--port", options.connect.port, "Server port")->capture_default_str();
    app.add_option("--seconds", seconds, "How long to play")->check(CLI::PositiveNumber)->capture_default_str();
    CLI11_PARSE(app, argc, argv);

    client::session session{options};  // connects inside update()
    session.events().joined = [](const ecsnet::protocol::welcome& w) {
        std::printf("joined as player %u at tick %llu\n", w.client_id,
                    static_cast<unsigned long long>(w.current_tick));
    };
    session.events().disconnected = [](const std::string& reason, bool will_reconnect) {
        std::printf("disconnected: %s%s\n", reason.c_str(), will_reconnect ? " (reconnecting)" : "");
    };

    // The player's entity: the server makes it when the client joins, so it arrives with a tick
    // after `joined`; `owned` tells of it (and of anything else this client owns).
    ecs::Entity me;
    session.events().owned = [&](ecs::Entity e) {
        if (me.is_null() && session.mirror().get<__NAME__::Position>(e)) {
            me = e;
        }
    };
    std::optional<__NAME__::Position> first;
    std::optional<__NAME__::Position> last;
    const auto start = std::chrono::steady_clock::now();
    const auto end = start + std::chrono::duration<double>(seconds);
    auto next_print = start;
    while (std::chrono::steady_clock::now() < end &&
           session.state() != client::session_state::closed) {
        session.update();  // applies what arrived, fires the events, sends the input due
        if (session.state() == client::session_state::joined && session.mirror().contains(me)) {
            const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            session.set_input(me, __NAME__::Move{static_cast<float>(std::cos(t)),
                                                 static_cast<float>(std::sin(t))});
            if (const auto at = session.mirror().get<__NAME__::Position>(me)) {
                first = first.value_or(*at);
                last = at;
            }
        }
        if (const auto now = std::chrono::steady_clock::now(); now >= next_print && last) {
            next_print = now + 500ms;
            std::printf("tick %llu  player (%.1f, %.1f)  %zu entities in view\n",
                        static_cast<unsigned long long>(session.mirror().tick()),
                        static_cast<double>(last->x), static_cast<double>(last->y),
                        session.mirror().size());
        }
        std::this_thread::sleep_for(10ms);  // a game renders a frame here
    }
    if (session.state() == client::session_state::closed) {
        std::fprintf(stderr, "__NAME__-client: %s\n", session.closed_reason().c_str());
        return 1;
    }
    if (!first || *first == *last) {
        std::fprintf(stderr, "__NAME__-client: %s\n",
                     first ? "the player did not move" : "never saw its own player");
        return 1;
    }
    std::printf("played %.0f s: moved from (%.1f, %.1f) to (%.1f, %.1f)\n", seconds,
                static_cast<double>(first->x), static_cast<double>(first->y),
                static_cast<double>(last->x), static_cast<double>(last->y));
    return 0;
}
