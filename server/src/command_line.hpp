#pragma once

// How each part of the server declares its own command-line options (parse_command_line in
// config.cpp lists the parts): a group of `--help` per part, and what must wait until the whole
// command line is parsed (checks that need other options, numbers the config keeps as
// durations). Private to the server library.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <list>
#include <string>
#include <vector>

#include "ecsnet/server/config.hpp"

namespace ecsnet::server::detail {

// An option that the environment variable `name` also sets, its default shown in --help.
inline CLI::Option* env(CLI::Option* o, const char* name) {
    return o->envname(name)->capture_default_str();
}

class command_line {
public:
    command_line(CLI::App& app, server_config& c) : config{c}, app_{app} {}

    server_config& config;

    // The part's options appear under `name` in --help.
    [[nodiscard]] CLI::Option_group* group(const std::string& name, const std::string& description) {
        return app_.add_option_group(name, description);
    }
    // Storage for an option's value until the parse is done, that lives as long as this object
    // (a duration's number of units, a name the config keeps as an enum).
    [[nodiscard]] std::int64_t& number(std::int64_t initial) { return numbers_.emplace_back(initial); }
    [[nodiscard]] double& real(double initial) { return reals_.emplace_back(initial); }
    [[nodiscard]] std::string& text(std::string initial) {
        return texts_.emplace_back(std::move(initial));
    }
    // Runs once every option is parsed, in the order added; throws CLI::ValidationError for a
    // combination that cannot work.
    void after_parse(std::function<void()> f) { after_parse_.push_back(std::move(f)); }
    void finish() const {
        for (const auto& f : after_parse_) {
            f();
        }
    }

private:
    CLI::App& app_;
    std::list<std::int64_t> numbers_;  // lists: references stay valid as they grow
    std::list<double> reals_;
    std::list<std::string> texts_;
    std::vector<std::function<void()>> after_parse_;
};

// One per part, in server/src/<part>/options.cpp.
void add_transport_options(command_line& cl);
void add_session_options(command_line& cl);
void add_admission_options(command_line& cl);
void add_simulation_options(command_line& cl);
void add_replication_options(command_line& cl);
void add_persistence_options(command_line& cl);
void add_operations_options(command_line& cl);

}  // namespace ecsnet::server::detail
