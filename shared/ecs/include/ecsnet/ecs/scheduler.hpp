#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
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
    std::uint64_t failures = 0;  // runs that ended in an exception, since it was added
};

// A system run that ended in an exception.
struct system_failure {
    std::string system;
    std::string what;                 // what(), or a note that it was not a std::exception
    std::size_t commands_dropped{0};  // what the run had recorded in its command buffer
    std::exception_ptr error;         // the exception itself, for callers that need its type
};

// Runs systems in the order they were added, once per tick, with a fixed dt. After each
// system its command buffer is flushed: a sync point, so the next system sees its structural
// changes. While a system runs, the world rejects access to undeclared component types.
//
// A system that throws (access_violation, a bug in user code, anything) fails alone: the
// exception is caught here and reported in the tick_report, the system's failure counter
// goes up, and the tick goes on with the next system. The commands the failed run recorded
// are dropped rather than flushed: they are half of an intent that did not complete. Its
// direct writes stay: they went through the world, which recorded them in the change set
// (replication stays consistent) and applied each structural operation all-or-nothing.
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
        // Systems whose run threw this tick, in run order.
        std::vector<system_failure> system_failures;
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

    // Strict access: an undeclared read or write (access_violation) is a bug in the game, so
    // run() throws it instead of reporting it: a test stops at the first one, with the system
    // and the type in its message, rather than seeing the same failure logged every tick. The
    // system is cleaned up first (counted as failed, its commands dropped, the world's access
    // reset); the systems after it do not run in that tick. Other exceptions are reported as
    // usual. Off by default; a server turns it on with --strict-access.
    void set_strict_access(bool strict) noexcept { strict_access_ = strict; }
    [[nodiscard]] bool strict_access() const noexcept { return strict_access_; }

    // One tick: every enabled system, each followed by its sync point. A system that throws
    // is reported in system_failures, its recorded commands are dropped, and the next system
    // runs: an exception never leaves run() from a system (but see set_strict_access).
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
            std::exception_ptr error;
            try {
                system.run(ctx);
            } catch (...) {
                error = std::current_exception();
            }
            world.set_access(nullptr, {});
            commands_.restrict_to(nullptr, {});
            if (error) {
                ++system.failures;
                ++failures_;
                if (strict_access_ && is_access_violation(error)) {
                    commands_.clear();
                    ++tick_;
                    std::rethrow_exception(error);
                }
                report.system_failures.push_back(
                    system_failure{system.name, describe(error), commands_.size(), error});
                commands_.clear();
                continue;
            }
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
    // The tick the next run() reports and gives its systems: a client's prediction runs the
    // server's tick numbers, and goes back to replay them.
    void set_tick(std::uint64_t tick) noexcept { tick_ = tick; }
    // Failed system runs since the scheduler was made, all systems together.
    [[nodiscard]] std::uint64_t failures() const noexcept { return failures_; }
    [[nodiscard]] double dt() const noexcept { return dt_; }
    [[nodiscard]] const std::vector<system_type>& systems() const noexcept { return systems_; }

private:
    [[nodiscard]] static bool is_access_violation(const std::exception_ptr& error) {
        try {
            std::rethrow_exception(error);
        } catch (const access_violation&) {
            return true;
        } catch (...) {
            return false;
        }
    }

    [[nodiscard]] static std::string describe(const std::exception_ptr& error) {
        try {
            std::rethrow_exception(error);
        } catch (const std::exception& e) {
            return e.what();
        } catch (...) {
            return "an exception that is not a std::exception";
        }
    }

    double dt_;
    std::uint64_t tick_{0};
    std::uint64_t failures_{0};
    bool strict_access_{false};
    std::vector<system_type> systems_;
    basic_command_buffer<Traits> commands_;
};

using Scheduler = basic_scheduler<default_entity_traits>;
using SystemContext = basic_system_context<default_entity_traits>;

}  // namespace ecsnet::ecs
