#include "cli.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "ecsnet/protocol/messages.hpp"
#include "entity_arg.hpp"

#ifndef ECSNET_VERSION
#define ECSNET_VERSION "0.0.0"
#endif

namespace ecsnet::client_cli {

namespace {

constexpr const char* despawn_note =
    "Connections with the same --name are the same owner: one run can destroy what another "
    "spawned. The server despawns an owner's entities when its last connection leaves, unless "
    "it runs with --keep-entities-on-disconnect: --hold, or the shell, stays connected.";

// A float the protocol accepts: finite, also once narrowed to 32 bits.
const CLI::Validator finite_float{[](std::string& text) -> std::string {
                                      char* end = nullptr;
                                      const double value = std::strtod(text.c_str(), &end);
                                      if (end == text.c_str() || *end != '\0') {
                                          return "'" + text + "' is not a number";
                                      }
                                      if (!std::isfinite(static_cast<float>(value))) {
                                          return "'" + text +
                                                 "' is not a finite 32-bit float (positions and "
                                                 "velocities must be finite)";
                                      }
                                      return {};
                                  },
                                  ""};

const CLI::Validator xy_text{[](std::string& text) -> std::string {
                                 std::string why;
                                 return parse_xy(text, &why) ? std::string{} : why;
                             },
                             ""};

const CLI::Validator component_text{[](std::string& text) -> std::string {
                                        std::string why;
                                        return parse_component_arg(text, &why) ? std::string{}
                                                                               : why;
                                    },
                                    ""};

const CLI::Validator entity_text{[](std::string& text) -> std::string {
                                     std::string why;
                                     return parse_entity(text, &why) ? std::string{} : why;
                                 },
                                 ""};

// The options of every command, bound to one invocation being parsed.
struct bindings {
    invocation inv;
    std::vector<std::string> sets;
    std::string x = "0";
    std::string y = "0";
    std::string vx = "0";
    std::string vy = "0";
    std::string name;
    std::string health;
    std::string lifetime;
    double seconds = 0.0;
    std::string focus;
    std::string move;
    std::vector<std::string> entities;
    std::string entity;                       // set, remove
    std::vector<std::string> set_components;  // set: TYPE=V1,V2,...
    std::vector<std::string> remove_types;    // remove: TYPE...

    CLI::Option* x_opt = nullptr;
    CLI::Option* y_opt = nullptr;
    CLI::Option* vx_opt = nullptr;
    CLI::Option* vy_opt = nullptr;
    CLI::Option* name_opt = nullptr;
    CLI::Option* health_opt = nullptr;
    CLI::Option* lifetime_opt = nullptr;
    CLI::Option* seconds_opt = nullptr;
    CLI::Option* focus_opt = nullptr;
    CLI::Option* move_opt = nullptr;

    CLI::App* spawn = nullptr;
    CLI::App* destroy = nullptr;
    CLI::App* set = nullptr;
    CLI::App* remove = nullptr;
    CLI::App* list = nullptr;
    CLI::App* watch = nullptr;
    CLI::App* shell = nullptr;
    CLI::App* help = nullptr;
    CLI::App* quit = nullptr;
};

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
    return app.get_subcommands([](const CLI::App*) { return true; });
}

std::string failure_message(const CLI::App* app, const CLI::Error& e) {
    std::string text = std::string{"error: "} + e.what() + "\n";
    if (app->get_help_ptr() != nullptr) {
        text += "Run with --help for more information.\n";
    }
    return text;
}

// In the shell: no "Run with" (the shell has its own help).
std::string shell_failure_message(const CLI::App*, const CLI::Error& e) {
    return std::string{"error: "} + e.what() + "\n";
}

// spawn: its --set, the shortcuts for the demo's types, --count (and --hold outside the shell).
void add_spawn(CLI::App& app, bindings& b, bool in_shell) {
    b.spawn = app.add_subcommand(
        "spawn", "Spawn entities owned by this client; prints 'spawned INDEX:VERSION' for each");
    b.spawn
        ->add_option("--set", b.sets,
                     "A component by its wire name, its values in field order: "
                     "--set position=1.5,-2 --set name=ship; a string type takes the whole "
                     "text, where {n} becomes the entity's number 1..count. Repeatable. Checked "
                     "against the types the server sends (a quantized float half a step or more "
                     "outside its range is refused, not clamped)")
        ->type_name("TYPE=V1,V2,...")
        ->check(component_text);
    b.x_opt = b.spawn
                  ->add_option("--x", b.x,
                               "Shortcut: position x (when the server has a position type, it is "
                               "0,0 unless given)")
                  ->type_name("FLOAT")
                  ->check(finite_float)
                  ->capture_default_str();
    b.y_opt = b.spawn->add_option("--y", b.y, "Shortcut: position y")
                  ->type_name("FLOAT")
                  ->check(finite_float)
                  ->capture_default_str();
    b.vx_opt = b.spawn
                   ->add_option("--vx", b.vx,
                                "Shortcut: velocity x, units per second (default: no "
                                "velocity; 0 if only --vy is given)")
                   ->type_name("FLOAT")
                   ->check(finite_float);
    b.vy_opt = b.spawn
                   ->add_option("--vy", b.vy,
                                "Shortcut: velocity y, units per second (default: no "
                                "velocity; 0 if only --vx is given)")
                   ->type_name("FLOAT")
                   ->check(finite_float);
    b.name_opt = b.spawn->add_option(
        "--name", b.name,
        "Shortcut: --set name=NAME, UTF-8; {n} becomes the entity's number 1..count");
    b.health_opt =
        b.spawn->add_option("--health", b.health, "Shortcut: --set health=H")->type_name("INT");
    b.lifetime_opt = b.spawn
                         ->add_option("--lifetime", b.lifetime,
                                      "Shortcut: --set lifetime=TICKS, ticks until the server "
                                      "destroys the entity")
                         ->type_name("UINT");
    b.spawn
        ->add_option("--count", b.inv.spawn.count,
                     "Entities to spawn; stops at the first one the server refuses")
        ->check(CLI::PositiveNumber)
        ->capture_default_str();
    if (!in_shell) {
        b.spawn->add_flag("--hold", b.inv.spawn.hold,
                          "Stay connected after spawning, until Ctrl-C, so that the entities "
                          "live on");
        b.spawn->footer(despawn_note);
    }
}

// watch: --seconds, --every-update, and the focus of interest management.
void add_watch(CLI::App& app, bindings& b) {
    b.watch = app.add_subcommand(
        "watch",
        "Stream spawns and destroys as they arrive, with a summary every second (entities, "
        "tick, bytes/s, component updates and removals per type, checksum OK or DESYNC; with "
        "interest management also entered/s, left/s and the use of the byte budget); exit 1 "
        "on desync");
    b.seconds_opt = b.watch
                        ->add_option("--seconds", b.seconds,
                                     "Stop after this many seconds (default: until Ctrl-C)")
                        ->check(CLI::PositiveNumber);
    b.watch->add_flag("--every-update", b.inv.watch.every_update,
                      "Also print every component update and removal, with its value "
                      "(demo entities update ~30 times per second each)");
    b.focus_opt = b.watch
                      ->add_option("--focus", b.focus,
                                   "Interest management: centre this client's area of interest "
                                   "on X,Y (negative: --focus=-100,50); a server that sends the "
                                   "whole world ignores it, with a warning")
                      ->type_name("X,Y")
                      ->check(xy_text);
    b.move_opt = b.watch
                     ->add_option("--move", b.move,
                                  "Move the focus (from --focus, else 0,0) by VX,VY units per "
                                  "second, telling the server about 10 times per second")
                     ->type_name("VX,VY")
                     ->check(xy_text);
}

void add_commands(CLI::App& app, bindings& b, bool in_shell) {
    add_spawn(app, b, in_shell);

    b.destroy = app.add_subcommand(
        "destroy",
        "Destroy entities this client owns; prints 'destroyed INDEX:VERSION' or the server's "
        "error for each; exit 1 if any failed");
    b.destroy->add_option("ENTITY", b.entities, "Entities as index:version, e.g. 5:1")
        ->type_name("INDEX:VERSION")
        ->required()
        ->check(entity_text);

    b.set = app.add_subcommand(
        "set",
        "Set components of an entity (add them, or replace their values) with one command: "
        "all of them or, when the server refuses one, none; prints 'set INDEX:VERSION TYPE...' "
        "or the server's error; exit 1 if refused");
    b.set->add_option("ENTITY", b.entity, "The entity as index:version, e.g. 5:1")
        ->type_name("INDEX:VERSION")
        ->required()
        ->check(entity_text);
    b.set
        ->add_option("COMPONENT", b.set_components,
                     "A component by its wire name, its values in field order, as spawn's --set: "
                     "position=1.5,-2 name=ship (a string type takes the whole text). Each type "
                     "once; checked against the types the server sends")
        ->type_name("TYPE=V1,V2,...")
        ->required()
        ->check(component_text);
    b.set->footer(
        "Who may set a type is the server's rule (its writer: owner, any, or the "
        "server only). A quantized float half a step or more outside its type's "
        "range is refused, not clamped to the edge (as for spawn --set).");

    b.remove = app.add_subcommand(
        "remove",
        "Remove components from an entity with one command (all or none); prints 'removed "
        "INDEX:VERSION TYPE...' or the server's error; exit 1 if refused");
    b.remove->add_option("ENTITY", b.entity, "The entity as index:version, e.g. 5:1")
        ->type_name("INDEX:VERSION")
        ->required()
        ->check(entity_text);
    b.remove
        ->add_option("TYPE", b.remove_types,
                     "Wire names of the components to remove, e.g. velocity name. Each once; "
                     "checked against the types the server sends")
        ->type_name("TYPE")
        ->required();

    b.list = app.add_subcommand(
        "list", "Print the entities of the world (index:version, owner, components), by index");

    add_watch(app, b);

    if (in_shell) {
        b.help = app.add_subcommand("help", "List the commands, or show one command's help");
        b.help->add_option("command", b.inv.help_topic, "A command");
        b.quit = app.add_subcommand("quit", "Leave the shell (also: exit, Ctrl-D)");
        b.quit->alias("exit");
    } else {
        b.shell = app.add_subcommand(
            "shell",
            "Interactive prompt with the same commands plus help and quit, on one connection "
            "whose mirror stays live between commands; reads plain lines when stdin is not a "
            "terminal");
        b.shell->footer(
            "Line editing and history (GNU readline; history in ~/.ecsnet_client_history). "
            "Ctrl-C drops the line being typed or stops a running watch; quit, exit or Ctrl-D "
            "leave.\nExit code: 1 if the connection was lost. With input that is not a terminal "
            "(a script), also 1 if any command failed, else 2 if a line was a usage error.");
    }
}

ecs::Entity entity_of(const std::string& text) {
    std::string why;
    const auto e = parse_entity(text, &why);
    if (!e) {
        throw CLI::ValidationError("ENTITY", why);  // the check already passed
    }
    return *e;
}

// Turns the parsed values into the invocation. Throws CLI::ValidationError.
invocation finish(bindings& b) {
    invocation& inv = b.inv;
    if (b.spawn->parsed()) {
        inv.what = command::spawn;
        std::map<std::string, std::string> given;  // type -> the option that gave it
        const auto add = [&](std::string type, std::string values, const std::string& option) {
            const auto [at, fresh] = given.emplace(type, option);
            if (!fresh) {
                throw CLI::ValidationError(option, "component '" + type + "' is given twice (" +
                                                       at->second + " and " + option + ")");
            }
            inv.spawn.components.push_back(component_arg{std::move(type), std::move(values)});
        };
        for (const auto& text : b.sets) {
            std::string why;
            auto arg = parse_component_arg(text, &why);
            if (!arg) {
                throw CLI::ValidationError("--set", why);  // the check already passed
            }
            add(arg->type, arg->values, "--set " + arg->type);
        }
        // The demo game's shortcuts, by wire name: the server's schema checks them.
        if (b.x_opt->count() > 0 || b.y_opt->count() > 0) {
            add("position", b.x + "," + b.y, "--x/--y");
        }
        if (b.vx_opt->count() > 0 || b.vy_opt->count() > 0) {
            add("velocity", b.vx + "," + b.vy, "--vx/--vy");
        }
        if (b.name_opt->count() > 0) {
            if (!protocol::valid_utf8(b.name)) {
                throw CLI::ValidationError("--name", "the name is not valid UTF-8");
            }
            add("name", b.name, "--name");
        }
        if (b.health_opt->count() > 0) {
            add("health", b.health, "--health");
        }
        if (b.lifetime_opt->count() > 0) {
            add("lifetime", b.lifetime, "--lifetime");
        }
    } else if (b.destroy->parsed()) {
        inv.what = command::destroy;
        for (const auto& text : b.entities) {
            std::string why;
            const auto e = parse_entity(text, &why);
            if (!e) {
                throw CLI::ValidationError("ENTITY", why);  // the check already passed
            }
            inv.destroy.entities.push_back(*e);
        }
    } else if (b.set->parsed()) {
        inv.what = command::set;
        inv.set.entity = entity_of(b.entity);
        std::map<std::string, std::string> given;
        for (const auto& text : b.set_components) {
            std::string why;
            auto arg = parse_component_arg(text, &why);
            if (!arg) {
                throw CLI::ValidationError("COMPONENT", why);  // the check already passed
            }
            if (!given.emplace(arg->type, text).second) {
                throw CLI::ValidationError("COMPONENT",
                                           "component '" + arg->type + "' is given twice");
            }
            inv.set.components.push_back(std::move(*arg));
        }
    } else if (b.remove->parsed()) {
        inv.what = command::remove;
        inv.remove.entity = entity_of(b.entity);
        std::set<std::string> given;
        for (const auto& type : b.remove_types) {
            if (!given.insert(type).second) {
                throw CLI::ValidationError("TYPE", "component '" + type + "' is given twice");
            }
            inv.remove.types.push_back(type);
        }
    } else if (b.list->parsed()) {
        inv.what = command::list;
    } else if (b.watch->parsed()) {
        inv.what = command::watch;
        if (b.seconds_opt->count() > 0) {
            inv.watch.seconds = b.seconds;
        }
        if (b.focus_opt->count() > 0) {
            inv.watch.focus = parse_xy(b.focus, nullptr);  // the check already passed
        }
        if (b.move_opt->count() > 0) {
            inv.watch.move = parse_xy(b.move, nullptr);
        }
    } else if (b.shell != nullptr && b.shell->parsed()) {
        inv.what = command::shell;
    } else if (b.help != nullptr && b.help->parsed()) {
        inv.what = command::help;
    } else if (b.quit != nullptr && b.quit->parsed()) {
        inv.what = command::quit;
    }
    return inv;
}

}  // namespace

std::optional<xy> parse_xy(const std::string& text, std::string* why) {
    const auto fail = [&](std::string message) -> std::optional<xy> {
        if (why != nullptr) {
            *why = std::move(message);
        }
        return std::nullopt;
    };
    const auto comma = text.find(',');
    if (comma == std::string::npos) {
        return fail("'" + text + "' is not X,Y (two numbers separated by a comma)");
    }
    const auto number = [](const std::string& part) -> std::optional<float> {
        char* end = nullptr;
        const double value = std::strtod(part.c_str(), &end);
        if (part.empty() || end != part.c_str() + part.size() ||
            !std::isfinite(static_cast<float>(value))) {
            return std::nullopt;
        }
        return static_cast<float>(value);
    };
    const auto x = number(text.substr(0, comma));
    const auto y = number(text.substr(comma + 1));
    if (!x || !y) {
        return fail("'" + text + "' is not X,Y with two finite 32-bit floats");
    }
    return xy{*x, *y};
}

program_line parse_program(int argc, const char* const* argv) {
    program_line out;
    global_options& g = out.options;
    if (const char* token = std::getenv("ECSNET_AUTH_TOKEN")) {
        g.token = token;  // the server's variable; ECSNET_TOKEN, then --token, take precedence
    }

    CLI::App app{
        "ecsnet-client: the sample client of ecsnet-server. Spawns, destroys, lists "
        "and watches the entities of the replicated world, and sets and removes their "
        "components.",
        "ecsnet-client"};
    app.set_version_flag("--version", std::string{"ecsnet-client "} + ECSNET_VERSION);
    app.failure_message(failure_message);
    app.get_formatter()->column_width(34);
    app.require_subcommand(1);
    app.fallthrough();  // global options may follow the command: `ecsnet-client list --json`

    std::int64_t timeout_ms = g.timeout.count();
    app.add_option("--host", g.host, "Server host name or address")
        ->envname("ECSNET_HOST")
        ->capture_default_str();
    app.add_option("--port", g.port, "Server TCP port (with --ws, its WebSocket port)")
        ->envname("ECSNET_PORT")
        ->check(CLI::Range(1, 65535))
        ->capture_default_str();
    app.add_option(
           "--name", g.client_name,
           "This client's name, for display in the server's log (spawn's --name names "
           "entities). Ownership is not the name: see --connect-token, and the resume keys kept "
           "per server and name in $XDG_STATE_HOME/ecsnet/keys")
        ->envname("ECSNET_CLIENT_NAME")
        ->capture_default_str();
    app.add_option("--token", g.token,
                   "Auth token, when the server requires one (also ECSNET_AUTH_TOKEN)")
        ->envname("ECSNET_TOKEN");
    app.add_option("--connect-token", g.connect_token,
                   "Connect token (a JWT) from the game's backend (servers run with --token-secret "
                   "or --token-public-key); Welcome's resume key is kept for it, so a reconnect "
                   "needs no new token")
        ->envname("ECSNET_CONNECT_TOKEN");
    app.add_flag("--tls", g.tls, "Connect with TLS, verifying the server's certificate and host name")
        ->envname("ECSNET_TLS");
    app.add_option("--ca", g.ca_file,
                   "CA certificate(s) (PEM) to verify the server with, instead of the system's "
                   "(implies --tls)")
        ->envname("ECSNET_CA")
        ->check(CLI::ExistingFile);
    app.add_flag("--ws", g.websocket,
                 "Connect over WebSocket: --port is the server's --ws-port, one binary message "
                 "per frame; with --tls, wss")
        ->envname("ECSNET_WS");
    app.add_flag("--json", g.json,
                 "Print one JSON object per line (results and errors) instead of text");
    app.add_option("--timeout-ms", timeout_ms,
                   "Time allowed to connect and join, and for each answer of the server")
        ->check(CLI::Range(1, 3'600'000))
        ->capture_default_str();
    bindings b;
    add_commands(app, b, false);
    const std::string exit_codes =
        "Exit codes: 0 success; 1 runtime failure (cannot connect, refused command, lost "
        "connection, desync); 2 usage error (also a spawn --set, set or remove that the "
        "server's types refuse before anything is sent).";
    app.footer("Commands take --help too, e.g. 'ecsnet-client spawn --help'.\n" + exit_codes);
    // Subcommands copied the (then empty) footer when created: give each its own.
    for (CLI::App* sub : {b.spawn, b.destroy, b.set, b.remove, b.list, b.watch, b.shell}) {
        const std::string own = sub->get_footer();
        sub->footer((own.empty() ? "" : own + "\n") +
                    "Global options (--host, --port, --name, --token, --connect-token, --tls, --ca, "
                    "--ws, --json, --timeout-ms) go "
                    "before or after the command: see ecsnet-client --help.\n" +
                    exit_codes);
    }
    try {
        app.parse(argc, argv);
        out.run = finish(b);
    } catch (const CLI::ParseError& e) {
        // --help and --version exit 0; every usage error exits 2, whatever CLI11's own code.
        out.exit_code = app.exit(e) == 0 ? exit_ok : exit_usage;
        out.run.reset();
        return out;
    }
    g.timeout = std::chrono::milliseconds{timeout_ms};
    return out;
}

shell_line parse_shell_line(const std::string& line) {
    shell_line out;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') {
        return out;
    }
    CLI::App app{"", ""};
    app.failure_message(shell_failure_message);
    app.get_formatter()->column_width(34);
    app.require_subcommand(1);
    bindings b;
    add_commands(app, b, true);

    const auto word_end = line.find_first_of(" \t\r", first);
    const std::string word = line.substr(first, word_end - first);
    bool known = false;
    for (const CLI::App* sub : commands_of(app)) {
        known = known || sub->check_name(word);
    }
    if (!known) {
        out.error = true;
        out.text = "error: unknown command '" + word + "'; type help for the list\n";
        return out;
    }
    try {
        app.parse(line, false);
        out.run = finish(b);
        if (out.run->what == command::help && !out.run->help_topic.empty()) {
            const auto* sub = [&]() -> const CLI::App* {
                for (const CLI::App* s : commands_of(app)) {
                    if (s->check_name(out.run->help_topic)) {
                        return s;
                    }
                }
                return nullptr;
            }();
            out.run.reset();
            if (sub == nullptr) {
                out.error = true;
                out.text = "error: no command '" + b.inv.help_topic + "'; type help for the list\n";
            } else {
                out.text = sub->help();
            }
        }
    } catch (const CLI::ParseError& e) {
        std::ostringstream normal;
        std::ostringstream errors;
        const int code = app.exit(e, normal, errors);
        out.run.reset();
        out.error = code != 0;
        out.text = code == 0 ? normal.str() : errors.str();
    }
    return out;
}

std::string shell_help() {
    return "Commands (each takes --help, e.g. 'spawn --help'):\n"
           "  spawn [--set TYPE=V1,V2,...]... [--count N]\n"
           "                              spawn entities owned by this client, with the\n"
           "                              components given by wire name (demo shortcuts:\n"
           "                              --x --y --vx --vy --name --health --lifetime)\n"
           "  destroy INDEX:VERSION...    destroy entities this client owns\n"
           "  set INDEX:VERSION TYPE=V1,V2,...\n"
           "                              set components of an entity (several TYPE=...\n"
           "                              in one command: all or none)\n"
           "  remove INDEX:VERSION TYPE...\n"
           "                              remove components of an entity (all or none)\n"
           "  list                        the entities of the world, by index\n"
           "  watch [--seconds S] [--every-update] [--focus X,Y] [--move VX,VY]\n"
           "                              stream changes and a summary every second; Ctrl-C "
           "stops\n"
           "  help [COMMAND]              this list, or a command's options\n"
           "  quit                        leave (also: exit, Ctrl-D)\n"
           "Entities spawned here live until you quit (unless the server keeps them).\n";
}

}  // namespace ecsnet::client_cli
