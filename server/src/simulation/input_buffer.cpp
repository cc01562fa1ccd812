#include "ecsnet/server/simulation/input_buffer.hpp"

namespace ecsnet::server {

input_buffer::offered input_buffer::offer(std::uint32_t owner, const protocol::input& in,
                                          std::uint64_t last_run) {
    offered out;
    player& p = players_[owner];
    stream* s = nullptr;
    for (stream& candidate : p.streams) {
        if (candidate.entity == in.entity) {
            s = &candidate;
            break;
        }
    }
    if (s == nullptr) {
        s = &p.streams.emplace_back(stream{in.entity, {}, {}, last_run + 1, false});
    }
    // What this stream held for ticks already run is moot now.
    while (!s->ticks.empty() && s->base <= last_run) {
        s->ticks.pop_front();
        s->views.pop_front();
        ++s->base;
    }
    if (s->ticks.empty()) {
        s->base = std::max(s->base, last_run + 1);
    }
    for (std::size_t i = 0; i < in.ticks.size(); ++i) {
        const std::uint64_t tick = in.first_tick + i;
        if (tick <= last_run) {
            ++out.late;
            p.newest = std::max(p.newest, tick);
            continue;
        }
        if (tick - last_run > ticks_ahead_) {
            ++out.too_early;
            continue;
        }
        p.newest = std::max(p.newest, tick);
        if (tick < s->base) {  // not expected: base <= last_run + 1 <= tick
            ++out.late;
            continue;
        }
        const std::uint64_t at = tick - s->base;
        if (s->ticks.size() <= at) {
            s->ticks.resize(at + 1);
            s->views.resize(at + 1, 0.0);
        }
        s->ticks[at] = in.ticks[i];
        // The render tick was given for the last tick: an earlier one's screen was as many
        // ticks earlier.
        const std::uint64_t back = in.ticks.size() - 1 - i;
        s->views[at] = in.render_tick > back
                           ? static_cast<double>(in.render_tick - back) + in.render_fraction
                           : 0.0;
        ++out.accepted;
    }
    counters_.late += out.late;
    counters_.too_early += out.too_early;
    p.ack.late += out.late;
    return out;
}

std::optional<double> input_buffer::view(std::uint32_t owner) const noexcept {
    const auto it = players_.find(owner);
    return it == players_.end() ? std::nullopt : it->second.view;
}

const protocol::input_ack* input_buffer::ack(std::uint32_t owner) const noexcept {
    const auto it = players_.find(owner);
    return it == players_.end() ? nullptr : &it->second.ack;
}

void input_buffer::forget(std::uint32_t owner, ecs::Entity e) noexcept {
    const auto it = players_.find(owner);
    if (it != players_.end()) {
        std::erase_if(it->second.streams, [&](const stream& s) { return s.entity == e; });
    }
}

std::size_t input_buffer::held() const noexcept {
    std::size_t n = 0;
    for (const auto& [owner, p] : players_) {
        for (const stream& s : p.streams) {
            n += s.ticks.size();
        }
    }
    return n;
}

}  // namespace ecsnet::server
