#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ecsnet/ecs/access.hpp"
#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/ecs/error.hpp"

namespace ecsnet::ecs {

template <typename Traits>
class basic_world;

// An entity created inside a command buffer, usable by later commands of the same buffer
// before it exists; resolve() gives the real entity after flush().
struct pending_entity {
    std::uint32_t ordinal;
    friend bool operator==(pending_entity, pending_entity) = default;
};

// Structural changes recorded during iteration and applied, in the order recorded, at a sync
// point (seed 004's finalizeUpdates, with creation, ordering and error reporting).
//
// A command that cannot apply (its entity died meanwhile, the component is already there or
// missing, a patch function threw) is skipped and reported in the flush_report; the others
// still apply. flush() itself does not throw for a failing command.
template <typename Traits>
class basic_command_buffer {
public:
    using entity_type = basic_entity<Traits>;
    using world_type = basic_world<Traits>;

    // A command's subject: an existing entity or one created earlier in this buffer.
    class target {
    public:
        target(entity_type e) : value_{e} {}       // NOLINT(google-explicit-constructor)
        target(pending_entity p) : value_{p} {}    // NOLINT(google-explicit-constructor)

    private:
        friend class basic_command_buffer;
        std::variant<entity_type, pending_entity> value_;
    };

    struct failure {
        std::size_t command;  // position in recording order
        std::string what;
    };

    struct flush_report {
        std::size_t applied{0};
        std::vector<failure> failures;
        [[nodiscard]] bool ok() const noexcept { return failures.empty(); }
    };

    basic_command_buffer() = default;
    basic_command_buffer(const basic_command_buffer&) = delete;
    basic_command_buffer& operator=(const basic_command_buffer&) = delete;
    basic_command_buffer(basic_command_buffer&&) noexcept = default;
    basic_command_buffer& operator=(basic_command_buffer&&) noexcept = default;
    ~basic_command_buffer() = default;

    [[nodiscard]] pending_entity create() {
        const pending_entity p{pending_++};
        record([p](world_type& w, resolver& r) { r.bind(p, w.create()); });
        return p;
    }

    void destroy(target t) {
        record([t](world_type& w, resolver& r) { w.destroy(r(t)); });
    }

    template <typename T, typename... Args>
    void emplace(target t, Args&&... args) {
        check_write<T>();
        record([t, value = make<T>(std::forward<Args>(args)...)](world_type& w,
                                                                 resolver& r) mutable {
            w.template emplace<T>(r(t), std::move(value));
        });
    }

    template <typename T, typename... Args>
    void emplace_or_replace(target t, Args&&... args) {
        check_write<T>();
        record([t, value = make<T>(std::forward<Args>(args)...)](world_type& w,
                                                                 resolver& r) mutable {
            w.template emplace_or_replace<T>(r(t), std::move(value));
        });
    }

    template <typename T, typename Fn>
    void patch(target t, Fn fn) {
        check_write<T>();
        record([t, fn = std::move(fn)](world_type& w, resolver& r) mutable {
            w.template patch<T>(r(t), fn);
        });
    }

    // Strict at playback: component_missing when one is absent (world::erase).
    template <typename... T>
    void erase(target t) {
        (check_write<T>(), ...);
        record([t](world_type& w, resolver& r) { w.template erase<T...>(r(t)); });
    }

    // Tolerant at playback: removes those present; nothing when the entity is gone.
    template <typename... T>
    void remove(target t) {
        (check_write<T>(), ...);
        record([t](world_type& w, resolver& r) {
            const entity_type e = r(t);
            if (w.valid(e)) {
                w.template remove<T...>(e);
            }
        });
    }

    // Applies every command in order and empties the buffer.
    flush_report flush(world_type& world) {
        flush_report report;
        resolved_.assign(pending_, entity_type{});
        resolver r{resolved_};
        auto commands = std::move(commands_);
        commands_.clear();
        pending_ = 0;
        for (std::size_t i = 0; i < commands.size(); ++i) {
            try {
                commands[i]->apply(world, r);
                ++report.applied;
            } catch (const std::exception& e) {
                report.failures.push_back(failure{i, e.what()});
            } catch (...) {
                report.failures.push_back(failure{i, "an exception that is not a std::exception"});
            }
        }
        return report;
    }

    // The entity a pending entity became in the last flush (null if its create failed).
    [[nodiscard]] entity_type resolve(pending_entity p) const noexcept {
        return p.ordinal < resolved_.size() ? resolved_[p.ordinal] : entity_type{};
    }

    [[nodiscard]] std::size_t size() const noexcept { return commands_.size(); }
    [[nodiscard]] bool empty() const noexcept { return commands_.empty(); }
    void clear() noexcept {
        commands_.clear();
        pending_ = 0;
    }

    // Commands recorded while a system runs are checked against its declaration when recorded.
    void restrict_to(const component_access* access, std::string system) {
        access_ = access;
        system_ = std::move(system);
    }

private:
    class resolver {
    public:
        explicit resolver(std::vector<entity_type>& resolved) : resolved_{&resolved} {}
        void bind(pending_entity p, entity_type e) { (*resolved_)[p.ordinal] = e; }
        entity_type operator()(const target& t) const {
            if (const auto* e = std::get_if<entity_type>(&t.value_)) {
                return *e;
            }
            return (*resolved_)[std::get<pending_entity>(t.value_).ordinal];
        }

    private:
        std::vector<entity_type>* resolved_;
    };

    struct command {
        command() = default;
        command(const command&) = delete;
        command& operator=(const command&) = delete;
        virtual ~command() = default;
        virtual void apply(world_type& world, resolver& r) = 0;
    };

    template <typename Fn>
    struct command_fn final : command {
        explicit command_fn(Fn f) : fn{std::move(f)} {}
        void apply(world_type& world, resolver& r) override { fn(world, r); }
        Fn fn;
    };

    template <typename Fn>
    void record(Fn fn) {
        commands_.push_back(std::make_unique<command_fn<Fn>>(std::move(fn)));
    }

    template <typename T, typename... Args>
    static T make(Args&&... args) {
        if constexpr (std::is_aggregate_v<T>) {
            return T{std::forward<Args>(args)...};
        } else {
            return T(std::forward<Args>(args)...);
        }
    }

    template <typename T>
    void check_write() const {
        if (access_ != nullptr && !access_->template can_write<T>()) {
            throw access_violation("system '" + system_ + "' records a change to " +
                                   std::string{type_name_v<T>} +
                                   " without declaring it (it declared " + access_->describe() +
                                   ")");
        }
    }

    std::vector<std::unique_ptr<command>> commands_;
    std::vector<entity_type> resolved_;
    std::uint32_t pending_{0};
    const component_access* access_{nullptr};
    std::string system_;
};

using CommandBuffer = basic_command_buffer<default_entity_traits>;

}  // namespace ecsnet::ecs
