#pragma once

#include "ecsnet/server/game.hpp"

namespace ecsnet::server {

// Everything a game's server binary does, so that its main() is one line: the command line
// (--help, issue-token, --healthcheck), logging, the service running `g`, the admin endpoint,
// SIGINT/SIGTERM with draining. Returns the process's exit code.
[[nodiscard]] int run(int argc, char** argv, const game& g);

}  // namespace ecsnet::server
