#pragma once

#include "commands.hpp"

// `ecsnet-client shell`: an interactive prompt (GNU readline: line editing, history in
// ~/.ecsnet_client_history) running the same commands on one connection. The connection is
// polled while the shell waits for input, so the mirror is live, and each command first
// waits for the next tick so that it sees the world as of the moment it was entered.
//
// When stdin is not a terminal, plain lines are read (no prompt, no escape codes): scripts
// and tests pipe commands in.
namespace ecsnet::client_cli {

// Runs until quit/exit, end of input, or a lost connection. Exit code: 1 if the connection
// was lost; with input that is not a terminal also 1 if a command failed, else 2 if a line
// was a usage error; else 0.
[[nodiscard]] int run_shell(context& ctx);

}  // namespace ecsnet::client_cli
