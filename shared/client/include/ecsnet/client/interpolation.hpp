#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/pfr/core.hpp>
#include <boost/unordered/unordered_flat_map.hpp>

#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/replicated.hpp"
#include "ecsnet/protocol/schema.hpp"

// Snapshot interpolation (docs/CLIENT.md, "Interpolation"): a short history of the values of
// the types the schema marks `interpolated`, and their value at a fractional render tick,
// between the two server ticks around it.
//
// The server sends a value only when it changes, so a value recorded at tick b after one at
// tick a held from a until b - 1 and moved during the last tick: sample() interpolates between
// b - 1 and b. A value that appears (an entity spawned or entering the view) or moves further
// than `snap_distance` in one tick jumps instead. Past the newest tick received, a value that
// was moving is extrapolated along its last step for at most `max_extrapolation` ticks.
namespace ecsnet::client {

class interpolation {
public:
    struct options {
        std::size_t history = 16;          // values kept per entity and type
        double max_extrapolation = 3.0;    // ticks past the newest one received, at most
        double snap_distance = 0.0;        // > 0: a field moving further in one tick jumps
    };

    explicit interpolation(protocol::schema types) : interpolation(std::move(types), options{}) {}
    interpolation(protocol::schema types, options o);

    // ---- fed from the mirror's events, in the order they happen ------------------------
    // The values recorded next are those of `tick` (a Delta, or a Snapshot, was applied).
    void on_tick(std::uint64_t tick) noexcept;
    // e's value of `type` as of the current tick (spawned, entered, or updated); ignored for
    // a type the schema does not mark interpolated.
    void record(ecs::Entity e, std::uint32_t type, std::span<const std::byte> value);
    // e appeared (spawn, enter): no interpolation from anything before.
    void appeared(ecs::Entity e) noexcept { forget(e); }
    // e is gone (destroyed, left the view), or lost a type.
    void forget(ecs::Entity e) noexcept;
    void forget(ecs::Entity e, std::uint32_t type) noexcept;
    void clear() noexcept { histories_.clear(); }

    // ---- read once per frame -------------------------------------------------------------
    // The fields of e's `type` at render_tick (numbers interpolated as doubles or integers
    // rounded; bools step), or nothing when none was recorded.
    [[nodiscard]] std::optional<std::vector<protocol::field_value>> sample(
        ecs::Entity e, std::uint32_t type, double render_tick) const;
    // The same as a compiled component (checked against the schema like mirror::get<T>):
    // float fields interpolated without requantizing, integers rounded, bools step.
    template <protocol::replicated_component T>
    [[nodiscard]] std::optional<T> sample(ecs::Entity e, double render_tick) const;

    [[nodiscard]] std::uint64_t tick() const noexcept { return tick_; }
    [[nodiscard]] std::size_t histories() const noexcept { return histories_.size(); }
    [[nodiscard]] const protocol::schema& types() const noexcept { return types_; }

private:
    struct point {
        std::uint64_t tick;
        bool jump;  // reached by a jump, not a move: no interpolation into it
        std::vector<std::byte> value;
    };
    struct history {
        std::uint32_t version;
        std::deque<point> points;  // ascending ticks
    };
    // Where render_tick falls: between `from` and `to` with weight `t` (0: from), or, for an
    // extrapolation, t > 1 along from -> to.
    struct span_at {
        const point* from;
        const point* to;
        double t;
    };

    [[nodiscard]] static std::uint64_t key(std::uint32_t index, std::uint32_t type) noexcept {
        return (std::uint64_t{index} << 8U) | type;
    }
    [[nodiscard]] std::optional<span_at> locate(ecs::Entity e, std::uint32_t type,
                                                double render_tick) const;
    [[nodiscard]] bool moved_too_far(const protocol::component_info& info,
                                     std::span<const std::byte> from,
                                     std::span<const std::byte> to) const;

    protocol::schema types_;
    options options_;
    std::uint64_t tick_ = 0;
    boost::unordered_flat_map<std::uint64_t, history> histories_;
};

namespace detail {

template <typename F>
F blend(F from, F to, double t) noexcept {
    if constexpr (std::is_same_v<F, bool>) {
        return t < 1.0 ? from : to;
    } else if constexpr (std::is_floating_point_v<F>) {
        return static_cast<F>(static_cast<double>(from) +
                              (static_cast<double>(to) - static_cast<double>(from)) * t);
    } else {
        const double v = static_cast<double>(from) +
                         (static_cast<double>(to) - static_cast<double>(from)) * t;
        return static_cast<F>(v < 0 ? v - 0.5 : v + 0.5);
    }
}

}  // namespace detail

template <protocol::replicated_component T>
std::optional<T> interpolation::sample(ecs::Entity e, double render_tick) const {
    static_assert(!protocol::detail::is_string_v<T>, "strings are not interpolated");
    const protocol::component_info* info = types_.checked(protocol::compiled_layout<T>());
    if (info == nullptr) {
        return std::nullopt;
    }
    const auto at = locate(e, info->id, render_tick);
    if (!at) {
        return std::nullopt;
    }
    T out = protocol::unpack<T>(at->from->value.data());
    if (at->to == nullptr || at->t == 0.0) {
        return out;
    }
    const T to = protocol::unpack<T>(at->to->value.data());
    [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((boost::pfr::get<I>(out) =
              detail::blend(boost::pfr::get<I>(out), boost::pfr::get<I>(to), at->t)),
         ...);
    }(std::make_index_sequence<boost::pfr::tuple_size_v<T>>{});
    return out;
}

}  // namespace ecsnet::client
