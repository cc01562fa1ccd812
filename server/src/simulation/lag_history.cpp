#include "ecsnet/server/simulation/lag_history.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ecsnet::server {

lag_history::lag_history(double tick_rate, std::chrono::milliseconds window) {
    if (!(tick_rate > 0.0)) {
        throw std::invalid_argument("lag compensation: the tick rate must be positive");
    }
    if (window.count() <= 0 || window > max_window) {
        throw std::invalid_argument("lag compensation: the window must be within (0, " +
                                    std::to_string(max_window.count()) + "] ms, not " +
                                    std::to_string(window.count()) + " ms");
    }
    // The ticks of the window, plus the one after its oldest (interpolation needs both ends).
    const auto ticks = static_cast<std::size_t>(
        std::ceil(std::chrono::duration<double>(window).count() * tick_rate));
    ring_.resize(std::max<std::size_t>(ticks + 1, 2));
}

void lag_history::record(std::uint64_t tick, std::vector<hit_shape> shapes) {
    if (tick == 0 || tick <= newest_) {
        throw std::logic_error("lag compensation: tick " + std::to_string(tick) +
                               " recorded after tick " + std::to_string(newest_));
    }
    std::sort(shapes.begin(), shapes.end(), [](const hit_shape& a, const hit_shape& b) {
        return a.entity.index() < b.entity.index();
    });
    tick_shapes& slot = ring_[tick % ring_.size()];
    slot.tick = tick;
    slot.shapes = std::move(shapes);
    newest_ = tick;
}

std::uint64_t lag_history::oldest() const noexcept {
    if (newest_ == 0) {
        return 0;
    }
    std::uint64_t oldest = newest_;
    for (const tick_shapes& slot : ring_) {
        if (slot.tick != 0 && slot.tick < oldest && newest_ - slot.tick < ring_.size()) {
            oldest = slot.tick;
        }
    }
    return oldest;
}

const lag_history::tick_shapes* lag_history::find(std::uint64_t tick) const noexcept {
    const tick_shapes& slot = ring_[tick % ring_.size()];
    return slot.tick == tick && tick != 0 ? &slot : nullptr;
}

double lag_history::clamp(double render_tick) const noexcept {
    if (newest_ == 0) {
        return 0.0;
    }
    if (!(render_tick == render_tick)) {  // NaN: the present
        return static_cast<double>(newest_);
    }
    return std::clamp(render_tick, static_cast<double>(oldest()), static_cast<double>(newest_));
}

template <typename Fn>
void lag_history::each_at(double render_tick, Fn&& fn) const {
    if (newest_ == 0) {
        return;
    }
    const double at = clamp(render_tick);
    auto base = static_cast<std::uint64_t>(std::floor(at));
    const tick_shapes* from = find(base);
    while (from == nullptr && base > 0) {  // a skipped tick: the one before it
        from = find(--base);
    }
    if (from == nullptr) {
        return;
    }
    const double fraction = at - static_cast<double>(base);
    const tick_shapes* to = fraction > 0.0 ? find(base + 1) : nullptr;
    const auto by_index = [](const hit_shape& s, std::uint32_t index) { return s.entity.index() < index; };
    for (const hit_shape& a : from->shapes) {
        hit_shape drawn = a;
        if (to != nullptr) {
            const auto b = std::lower_bound(to->shapes.begin(), to->shapes.end(), a.entity.index(), by_index);
            if (b != to->shapes.end() && b->entity == a.entity) {
                const auto f = static_cast<float>(fraction);
                drawn.x = a.x + (b->x - a.x) * f;
                drawn.y = a.y + (b->y - a.y) * f;
                drawn.radius = a.radius + (b->radius - a.radius) * f;
            }
        }
        fn(drawn);
    }
}

std::vector<hit_shape> lag_history::at(double render_tick) const {
    std::vector<hit_shape> out;
    each_at(render_tick, [&](const hit_shape& s) { out.push_back(s); });
    return out;
}

std::optional<float> ray_enters(const hit_shape& shape, float x, float y, float dx, float dy,
                                float length) noexcept {
    // The segment's nearest point to the centre, then back along the ray to the edge.
    const float cx = shape.x - x;
    const float cy = shape.y - y;
    const float along = cx * dx + cy * dy;
    const float off2 = cx * cx + cy * cy - along * along;
    const float r2 = shape.radius * shape.radius;
    if (off2 > r2) {
        return std::nullopt;
    }
    const bool inside = cx * cx + cy * cy <= r2;
    const float enter = inside ? 0.0F : along - std::sqrt(r2 - off2);
    if (enter < 0.0F || enter > length) {
        return std::nullopt;
    }
    return enter;
}

namespace {

// Keeps in `best` the nearer of it and where the segment enters `shape`.
void keep_nearer(std::optional<ray_hit>& best, const hit_shape& shape, float x, float y, float dx,
                 float dy, float length, ecs::Entity ignore) noexcept {
    if (shape.entity == ignore) {
        return;
    }
    const std::optional<float> enter = ray_enters(shape, x, y, dx, dy, length);
    if (enter && (!best || *enter < best->distance)) {
        best = ray_hit{shape.entity, *enter, shape};
    }
}

}  // namespace

std::optional<ray_hit> raycast(std::span<const hit_shape> shapes, float x, float y, float dx,
                               float dy, float length, ecs::Entity ignore) noexcept {
    std::optional<ray_hit> best;
    for (const hit_shape& s : shapes) {
        keep_nearer(best, s, x, y, dx, dy, length, ignore);
    }
    return best;
}

std::optional<ray_hit> lag_history::raycast(double render_tick, float x, float y, float dx, float dy,
                                            float length, ecs::Entity ignore) const {
    std::optional<ray_hit> best;
    each_at(render_tick, [&](const hit_shape& s) { keep_nearer(best, s, x, y, dx, dy, length, ignore); });
    return best;
}

}  // namespace ecsnet::server
