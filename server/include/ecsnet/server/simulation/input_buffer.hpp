#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "ecsnet/ecs/entity.hpp"
#include "ecsnet/protocol/messages.hpp"

// Player input per tick (docs/PROTOCOL.md, "Input"). What each owner's clients sent for an
// entity is held by tick until that tick runs, then handed out once, before the systems. A tick
// without its input leaves the entity's input components as they are: the last input repeats.
// Lives on the world's thread; knows no world (the server checks ownership and applies).
namespace ecsnet::server {

struct input_counters {
    std::uint64_t applied = 0;    // ticks of input applied (per entity)
    std::uint64_t late = 0;       // ticks of input that arrived after their tick had run
    std::uint64_t repeated = 0;   // ticks that ran on an entity's previous input
    std::uint64_t too_early = 0;  // ticks of input stamped beyond the buffer
};

class input_buffer {
public:
    // Inputs are kept for at most `ticks_ahead` ticks past the last tick run.
    explicit input_buffer(std::uint32_t ticks_ahead) noexcept : ticks_ahead_{ticks_ahead} {}

    struct offered {
        std::uint32_t accepted = 0;
        std::uint32_t late = 0;       // for ticks <= the last tick run: dropped
        std::uint32_t too_early = 0;  // beyond ticks_ahead: dropped (the sender is told)
    };
    // Keeps the ticks of `in` that are still to run and within reach; a tick sent again
    // replaces the value held for it. `last_run` is the tick the server ran last.
    offered offer(std::uint32_t owner, const protocol::input& in, std::uint64_t last_run);

    // Tick `tick` runs: calls apply(owner, entity, values) for each entity with an input for
    // it and forgets what is older. apply returns false when the entity is gone (its stream
    // goes too).
    template <typename Apply>
    void run(std::uint64_t tick, Apply&& apply);

    // The render tick (with its fraction) the owner's client was showing when it set the
    // input applied at the last tick run: what lag compensation rewinds that player's shots
    // to (docs/PREDICTION.md). A tick that ran on a repeated input moves the last one known
    // by a tick. nullopt until an input said it (protocol 4 clients never do).
    [[nodiscard]] std::optional<double> view(std::uint32_t owner) const noexcept;

    // What the owner's clients are told after `tick` (the InputAck); null before its first
    // input.
    [[nodiscard]] const protocol::input_ack* ack(std::uint32_t owner) const noexcept;

    // The owner is gone (its last connection left), or one of its entities is.
    void forget(std::uint32_t owner) noexcept { players_.erase(owner); }
    void forget(std::uint32_t owner, ecs::Entity e) noexcept;

    [[nodiscard]] std::uint32_t ticks_ahead() const noexcept { return ticks_ahead_; }
    [[nodiscard]] const input_counters& counters() const noexcept { return counters_; }
    [[nodiscard]] std::size_t players() const noexcept { return players_.size(); }
    // Ticks of input held, for every owner together.
    [[nodiscard]] std::size_t held() const noexcept;

private:
    struct stream {
        ecs::Entity entity;
        // Ticks last_run+1 .. last_run+ticks_ahead, by tick - base: empty sets are holes.
        std::deque<protocol::component_set> ticks;
        std::deque<double> views;  // beside ticks: each tick's render tick, 0 when not given
        std::uint64_t base = 0;  // the tick of ticks.front()
        bool applied_once = false;
    };
    struct player {
        std::vector<stream> streams;
        std::uint64_t newest = 0;  // the newest tick any input named
        protocol::input_ack ack;
        std::optional<double> view;  // view()
        std::uint64_t view_tick = 0;  // the tick `view` was last set or moved for
    };

    std::uint32_t ticks_ahead_;
    boost::unordered_flat_map<std::uint32_t, player> players_;
    input_counters counters_;
};

template <typename Apply>
void input_buffer::run(std::uint64_t tick, Apply&& apply) {
    for (auto& [owner, p] : players_) {
        bool dropped = false;
        for (stream& s : p.streams) {
            while (!s.ticks.empty() && s.base < tick) {  // never filled: a hole
                s.ticks.pop_front();
                s.views.pop_front();
                ++s.base;
            }
            protocol::component_set values;
            double view = 0.0;
            if (!s.ticks.empty() && s.base == tick) {
                values = std::move(s.ticks.front());
                view = s.views.front();
                s.ticks.pop_front();
                s.views.pop_front();
                ++s.base;
            }
            if (view > 0.0) {
                p.view = view;
                p.view_tick = tick;
            }
            if (s.ticks.empty()) {
                s.base = tick + 1;
            }
            if (values.empty()) {
                if (s.applied_once) {
                    ++counters_.repeated;
                    ++p.ack.repeated;
                }
                continue;
            }
            s.applied_once = true;
            ++counters_.applied;
            p.ack.applied_tick = tick;
            if (!apply(owner, s.entity, values)) {
                s.entity = ecs::Entity{};  // gone: its stream goes
                dropped = true;
            }
        }
        if (dropped) {
            std::erase_if(p.streams, [](const stream& s) { return s.entity.is_null(); });
        }
        if (p.view && p.view_tick < tick) {  // no new view this tick: the screen went on
            *p.view += static_cast<double>(tick - p.view_tick);
            p.view_tick = tick;
        }
        p.ack.tick = tick;
        const auto lead = static_cast<std::int64_t>(p.newest) - static_cast<std::int64_t>(tick);
        p.ack.lead = static_cast<std::int32_t>(
            std::clamp<std::int64_t>(lead, std::numeric_limits<std::int32_t>::min(),
                                     std::numeric_limits<std::int32_t>::max()));
    }
}

}  // namespace ecsnet::server
