#include "ecsnet/server/replication/spatial_grid.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace ecsnet::server {

namespace {

std::int32_t coordinate(float v, double cell_size, double inverse) noexcept {
    // floor(v / size), by a product (a division per coordinate was a visible share of moving
    // 100,000 entities a tick) corrected exactly: 1/size is inexact (0.1 for 10), which alone
    // put a point on a boundary (-10 with cells of 10) one cell off.
    const double x = static_cast<double>(v);
    double c = std::floor(x * inverse);
    if (c * cell_size > x) {
        c -= 1.0;
    } else if ((c + 1.0) * cell_size <= x) {
        c += 1.0;
    }
    // NaN and far-away values land in the outermost cells rather than overflowing.
    constexpr double low = std::numeric_limits<std::int32_t>::min();
    constexpr double high = std::numeric_limits<std::int32_t>::max();
    if (!(c >= low)) {
        return std::numeric_limits<std::int32_t>::min();
    }
    return c > high ? std::numeric_limits<std::int32_t>::max() : static_cast<std::int32_t>(c);
}

}  // namespace

spatial_grid::spatial_grid(float cell_size)
    : cell_size_{cell_size}, inverse_{1.0 / static_cast<double>(cell_size)} {
    if (!(cell_size > 0.0F) || !std::isfinite(cell_size)) {
        throw std::invalid_argument("the interest grid's cell size must be a positive number");
    }
}

spatial_grid::cell spatial_grid::cell_of(point p) const noexcept {
    return cell{coordinate(p.x, cell_size_, inverse_), coordinate(p.y, cell_size_, inverse_)};
}

bool spatial_grid::placed(ecs::Entity e) const noexcept {
    return e.index() < slots_.size() && slots_[e.index()].entity == e;
}

void spatial_grid::take_out(std::uint32_t index) {
    slot& s = slots_[index];
    const auto it = cells_.find(s.key);
    auto& list = it->second;
    // Swap with the last, so that removal is O(1); the moved entity's slot follows.
    const ecs::Entity last = list.back();
    list[s.at] = last;
    slots_[last.index()].at = s.at;
    list.pop_back();
    if (list.empty()) {
        cells_.erase(it);
    }
    s.entity = ecs::Entity{};
    --placed_;
}

void spatial_grid::place_by_cell(ecs::Entity e, point p) {
    const cell c = cell_of(p);
    const std::uint64_t key = pack(c);
    if (!bounded_) {
        bounded_ = true;
        low_ = high_ = c;
    } else {
        low_ = cell{std::min(low_.x, c.x), std::min(low_.y, c.y)};
        high_ = cell{std::max(high_.x, c.x), std::max(high_.y, c.y)};
    }
    if (e.index() >= slots_.size()) {
        slots_.resize(std::max<std::size_t>(std::size_t{e.index()} + 1, slots_.size() * 2));
    }
    slot& s = slots_[e.index()];
    s.where = p;
    if (!s.entity.is_null()) {
        if (s.key == key) {
            if (s.entity != e) {  // same cell, a new version at the index
                cells_.find(key)->second[s.at] = e;
                s.entity = e;
            }
            return;  // the common case of a moving entity: it stays in its cell
        }
        take_out(e.index());
    }
    auto& list = cells_[key];
    s = slot{key, e, static_cast<std::uint32_t>(list.size()), p};
    list.push_back(e);
    ++placed_;
}

void spatial_grid::erase(ecs::Entity e) {
    if (e.index() < slots_.size() && !slots_[e.index()].entity.is_null()) {
        take_out(e.index());
    }
}

}  // namespace ecsnet::server
