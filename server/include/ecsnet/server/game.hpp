#pragma once

#include <functional>
#include <string>

#include "ecsnet/protocol/registry.hpp"

namespace CLI {
class App;
}

namespace ecsnet::server {

class server;

// What a game plugs into the server (docs/EXTENDING.md): the components it replicates and
// what it does to a new server: add its systems, spawn its first entities.
struct game {
    std::string name;
    // Adds the game's replicated types; the core's Owner is there already (wire id 0).
    std::function<void(protocol::component_registry&)> register_components;
    // The game's own command-line options (run() parses them with the server's, --help lists
    // them): called before parsing; setup() reads what they set, e.g. through a shared_ptr
    // both lambdas hold.
    std::function<void(CLI::App&)> add_options;
    // Called once the server is built, before start(): scheduler(), world() and config() are
    // ready. What it spawns goes to clients in their first snapshot.
    std::function<void(server&)> setup;
    // The game's browser page: run() defaults --web-root to
    // <exe dir>/../share/ecsnet/web/<web_app> when --ws-port is given and that directory
    // exists. Empty: no page.
    std::string web_app;
};

}  // namespace ecsnet::server
