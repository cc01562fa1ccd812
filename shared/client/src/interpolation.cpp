#include "ecsnet/client/interpolation.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <variant>

namespace ecsnet::client {

namespace {

double as_double(const protocol::field_value& v) {
    return std::visit([](auto x) { return static_cast<double>(x); }, v);
}

protocol::field_value blend_field(const protocol::field_value& from, const protocol::field_value& to,
                                  double t) {
    return std::visit(
        [&](auto a) -> protocol::field_value {
            using V = decltype(a);
            const V b = std::get<V>(to);
            return detail::blend(a, b, t);
        },
        from);
}

}  // namespace

interpolation::interpolation(protocol::schema types, options o)
    : types_{std::move(types)}, options_{o} {
    if (o.history < 2) {
        throw std::invalid_argument("interpolation: the history must hold at least 2 values");
    }
    if (!(o.max_extrapolation >= 0.0) || !(o.snap_distance >= 0.0)) {
        throw std::invalid_argument(
            "interpolation: max_extrapolation and snap_distance are numbers >= 0");
    }
}

void interpolation::on_tick(std::uint64_t tick) noexcept { tick_ = tick; }

void interpolation::record(ecs::Entity e, std::uint32_t type, std::span<const std::byte> value) {
    const protocol::component_info* info = types_.find(type);
    if (info == nullptr || !info->interpolated || info->is_string ||
        value.size() != info->value_bytes()) {
        return;
    }
    history& h = histories_[key(e.index(), type)];
    if (h.version != e.version()) {
        h.version = e.version();
        h.points.clear();
    }
    if (!h.points.empty() && h.points.back().tick == tick_) {
        h.points.back().value.assign(value.begin(), value.end());  // twice in one tick
        return;
    }
    const bool jump = h.points.empty() ||
                      (options_.snap_distance > 0.0 && moved_too_far(*info, h.points.back().value, value));
    h.points.push_back(point{tick_, jump, {value.begin(), value.end()}});
    while (h.points.size() > options_.history) {
        h.points.pop_front();
    }
}

void interpolation::forget(ecs::Entity e) noexcept {
    for (std::uint32_t type = 0; type < types_.size(); ++type) {
        histories_.erase(key(e.index(), type));
    }
}

void interpolation::forget(ecs::Entity e, std::uint32_t type) noexcept {
    histories_.erase(key(e.index(), type));
}

bool interpolation::moved_too_far(const protocol::component_info& info,
                                  std::span<const std::byte> from,
                                  std::span<const std::byte> to) const {
    for (std::size_t i = 0; i < info.fields.size(); ++i) {
        const auto a = protocol::read_field(info, from, i);
        if (std::holds_alternative<bool>(a)) {
            continue;
        }
        const auto b = protocol::read_field(info, to, i);
        if (std::abs(as_double(b) - as_double(a)) > options_.snap_distance) {
            return true;
        }
    }
    return false;
}

std::optional<interpolation::span_at> interpolation::locate(ecs::Entity e, std::uint32_t type,
                                                            double render_tick) const {
    const auto it = histories_.find(key(e.index(), type));
    if (it == histories_.end() || it->second.version != e.version() || it->second.points.empty()) {
        return std::nullopt;
    }
    const auto& points = it->second.points;
    if (!(render_tick > static_cast<double>(points.front().tick))) {  // NaN too
        return span_at{&points.front(), nullptr, 0.0};
    }
    const auto to = std::find_if(points.begin(), points.end(), [&](const point& p) {
        return static_cast<double>(p.tick) >= render_tick;
    });
    if (to == points.end()) {
        const point& last = points.back();
        const double newest = static_cast<double>(tick_);
        if (render_tick <= newest || points.size() < 2) {
            return span_at{&last, nullptr, 0.0};  // unchanged since: it stands still
        }
        // Frames are late. A value that moved in the newest tick goes on along that step.
        const point& before = points[points.size() - 2];
        if (last.tick != tick_ || last.jump || before.tick + 1 != last.tick) {
            return span_at{&last, nullptr, 0.0};
        }
        return span_at{&before, &last,
                       1.0 + std::min(render_tick - newest, options_.max_extrapolation)};
    }
    const point& from = *(to - 1);
    const double start = static_cast<double>(to->tick) - 1.0;  // it held `from` until then
    if (render_tick >= static_cast<double>(to->tick)) {
        return span_at{&*to, nullptr, 0.0};
    }
    if (to->jump || render_tick <= start) {
        return span_at{&from, nullptr, 0.0};
    }
    return span_at{&from, &*to, render_tick - start};
}

std::optional<std::vector<protocol::field_value>> interpolation::sample(ecs::Entity e,
                                                                        std::uint32_t type,
                                                                        double render_tick) const {
    const auto at = locate(e, type, render_tick);
    if (!at) {
        return std::nullopt;
    }
    const protocol::component_info& info = *types_.find(type);
    std::vector<protocol::field_value> out;
    out.reserve(info.fields.size());
    for (std::size_t i = 0; i < info.fields.size(); ++i) {
        const auto from = protocol::read_field(info, at->from->value, i);
        out.push_back(at->to == nullptr ? from
                                        : blend_field(from, protocol::read_field(info, at->to->value, i),
                                                      at->t));
    }
    return out;
}

}  // namespace ecsnet::client
