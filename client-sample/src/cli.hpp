#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "component_arg.hpp"
#include "ecsnet/ecs/entity.hpp"

// The command line of ecsnet-client (CLI11): global options and the subcommands spawn,
// destroy, set, remove, list, watch and shell. A shell line is parsed by the same code, without the
// global options.
namespace ecsnet::client_cli {

struct global_options {
    std::string host = "127.0.0.1";
    std::uint16_t port = 7777;
    std::string client_name = "ecsnet-client";
    std::string token;
    std::string connect_token;
    bool tls = false;
    std::string ca_file;  // empty: the system's trusted certificates
    bool websocket = false;  // --port is then the server's --ws-port; with tls, wss
    bool json = false;
    std::chrono::milliseconds timeout{5000};
};

struct spawn_args {
    // --set TYPE=VALUES and the demo shortcuts (--x --y: position, --vx --vy: velocity,
    // --name, --health, --lifetime), each type once, checked against the server's schema
    // after Welcome. In a string value "{n}" becomes the entity's number, 1..count.
    std::vector<component_arg> components;
    std::uint32_t count = 1;
    bool hold = false;  // stay connected until Ctrl-C (not in the shell)
};

struct destroy_args {
    std::vector<ecs::Entity> entities;
};

// set ENTITY TYPE=V1,V2,... [TYPE=...]: one SetComponent with every value (each type once),
// parsed like spawn's --set and checked against the server's schema after Welcome.
struct set_args {
    ecs::Entity entity;
    std::vector<component_arg> components;
};

// remove ENTITY TYPE...: one RemoveComponent of these wire names (each once).
struct remove_args {
    ecs::Entity entity;
    std::vector<std::string> types;
};

// Two floats given as X,Y: a point or a velocity on the demo's plane.
struct xy {
    float x = 0.0F;
    float y = 0.0F;
};

struct watch_args {
    std::optional<double> seconds;  // none: until Ctrl-C
    bool every_update = false;
    // Interest management: where this client's area of interest is (protocol::focus, sent
    // after joining), and how fast it moves, units per second (from --focus, else 0,0).
    std::optional<xy> focus;
    std::optional<xy> move;
};

// "X,Y" as two finite 32-bit floats; nullopt (and *why) otherwise.
[[nodiscard]] std::optional<xy> parse_xy(const std::string& text, std::string* why);

enum class command { spawn, destroy, set, remove, list, watch, shell, help, quit };

// One command to run, with its arguments.
struct invocation {
    command what = command::help;
    spawn_args spawn;
    destroy_args destroy;
    set_args set;
    remove_args remove;
    watch_args watch;
    std::string help_topic;  // shell `help <command>`
};

inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // runtime: cannot connect, server error, desync
inline constexpr int exit_usage = 2;    // bad command line

struct program_line {
    global_options options;
    std::optional<invocation> run;
    int exit_code = exit_ok;  // when !run: after --help/--version (0) or a usage error (2)
};

// Parses the program's command line. Prints help, the version or usage errors itself.
[[nodiscard]] program_line parse_program(int argc, const char* const* argv);

struct shell_line {
    std::optional<invocation> run;
    std::string text;  // help text (to stdout) or the usage error (when error)
    bool error = false;
};

// Parses one shell line (a command without the program name and global options), quotes
// as in a POSIX shell. An empty line or a comment (#...) yields neither run nor text.
[[nodiscard]] shell_line parse_shell_line(const std::string& line);

// What `help` prints in the shell.
[[nodiscard]] std::string shell_help();

}  // namespace ecsnet::client_cli
