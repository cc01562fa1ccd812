#pragma once

#include <chrono>
#include <string>

#include "cli.hpp"
#include "ecsnet/client/connection.hpp"
#include "output.hpp"

// The commands, run on an open, joined connection. Each returns its exit code (cli.hpp);
// a lost connection throws client::client_error.
namespace ecsnet::client_cli {

struct context {
    client::connection& conn;
    printer& out;
    std::string endpoint;  // host:port, for messages
    std::chrono::milliseconds timeout;
    std::string client_name;  // --name: the owner identity
    bool in_shell = false;
};

// spawn, destroy, set, remove, list or watch.
[[nodiscard]] int run_command(context& ctx, const invocation& inv);

[[nodiscard]] int run_spawn(context& ctx, const spawn_args& args);
[[nodiscard]] int run_destroy(context& ctx, const destroy_args& args);
// One SetComponent / RemoveComponent; values and names checked against the server's schema
// first (exit_usage, nothing sent), the server's refusal printed like destroy's (exit_failure).
[[nodiscard]] int run_set(context& ctx, const set_args& args);
[[nodiscard]] int run_remove(context& ctx, const remove_args& args);
[[nodiscard]] int run_list(context& ctx);
[[nodiscard]] int run_watch(context& ctx, const watch_args& args);

// Reads until the mirror has applied a tick newer than the current one, so that whatever the
// server did before this call shows in the mirror (commands are applied at the start of a
// tick; their CommandResult may arrive before that tick's Delta). False after the timeout.
bool catch_up(client::connection& conn, std::chrono::milliseconds timeout);

}  // namespace ecsnet::client_cli
