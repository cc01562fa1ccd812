#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ecsnet/ecs/access.hpp"
#include "ecsnet/ecs/command_buffer.hpp"
#include "ecsnet/ecs/world.hpp"

namespace ecsnet::ecs {

// What a system receives each tick.
template <typename Traits>
struct basic_system_context {
    basic_world<Traits>& world;
    basic_command_buffer<Traits>& commands;  // flushed right after the system: a sync point
    double dt;                               // fixed, seconds
    std::uint64_t tick;                      // the scheduler's tick counter, from 0
};

// A named callable with the component types it reads and writes.
template <typename Traits>
struct basic_system {
    std::string name;
    component_access access;
    std::function<void(basic_system_context<Traits>&)> run;
    bool enabled = true;
};

// Runs systems in the order they were added, once per tick, with a fixed dt. After each
// system its command buffer is flushed: a sync point, so the next system sees its structural
// changes. While a system runs, the world rejects access to undeclared component types.
template <typename Traits>
class basic_scheduler {
public:
    using world_type = basic_world<Traits>;
    using context_type = basic_system_context<Traits>;
    using system_type = basic_system<Traits>;
    using failure = typename basic_command_buffer<Traits>::failure;

    struct tick_report {
        std::uint64_t tick{0};
        std::size_t commands_applied{0};
        // Commands that could not apply, prefixed with the system that recorded them.
        std::vector<std::string> command_failures;
    };

    explicit basic_scheduler(double dt) : dt_{dt} {
        if (!(dt > 0.0)) {
            throw std::invalid_argument("scheduler: dt must be a positive number of seconds");
        }
    }

    basic_scheduler& add(std::string name, component_access access,
                         std::function<void(context_type&)> run) {
        for (const auto& s : systems_) {
            if (s.name == name) {
                throw std::invalid_argument("scheduler: a system named '" + name +
                                            "' is already registered");
            }
        }
        systems_.push_back(system_type{std::move(name), std::move(access), std::move(run)});
        return *this;
    }

    // Returns false when no system has this name.
    bool set_enabled(const std::string& name, bool enabled) {
        for (auto& s : systems_) {
            if (s.name == name) {
                s.enabled = enabled;
                return true;
            }
        }
        return false;
    }

    // One tick: every enabled system, each followed by its sync point. If a system throws
    // (for example access_violation), its recorded commands are dropped and the exception
    // propagates; the systems after it do not run this tick.
    tick_report run(world_type& world) {
        tick_report report;
        report.tick = tick_;
        for (auto& system : systems_) {
            if (!system.enabled) {
                continue;
            }
            commands_.restrict_to(&system.access, system.name);
            world.set_access(&system.access, system.name);
            context_type ctx{world, commands_, dt_, tick_};
            try {
                system.run(ctx);
            } catch (...) {
                world.set_access(nullptr, {});
                commands_.restrict_to(nullptr, {});
                commands_.clear();
                throw;
            }
            world.set_access(nullptr, {});
            commands_.restrict_to(nullptr, {});
            auto flushed = commands_.flush(world);
            report.commands_applied += flushed.applied;
            for (auto& f : flushed.failures) {
                report.command_failures.push_back(system.name + ": " + f.what);
            }
        }
        ++tick_;
        return report;
    }

    [[nodiscard]] std::uint64_t ticks() const noexcept { return tick_; }
    [[nodiscard]] double dt() const noexcept { return dt_; }
    [[nodiscard]] const std::vector<system_type>& systems() const noexcept { return systems_; }

private:
    double dt_;
    std::uint64_t tick_{0};
    std::vector<system_type> systems_;
    basic_command_buffer<Traits> commands_;
};

using Scheduler = basic_scheduler<default_entity_traits>;
using SystemContext = basic_system_context<default_entity_traits>;

}  // namespace ecsnet::ecs
