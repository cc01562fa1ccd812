#include "ecsnet/server/operations/health_publisher.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace ecsnet::server {

double percentile(std::vector<double>& values, double p) {
    if (values.empty()) {
        return 0.0;
    }
    const auto k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size()))) - 1;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
    return values[k];
}

void health_publisher::tick_loop_started(std::uint16_t ws_port) {
    const std::lock_guard lock{mutex_};
    tick_loop_running_ = true;
    last_tick_end_ = clock::now();
    ws_port_ = ws_port;
}

void health_publisher::tick_loop_ended(std::string why) {
    const std::lock_guard lock{mutex_};
    tick_loop_running_ = false;
    tick_loop_ended_ = std::move(why);
}

void health_publisher::publish(const world_state& state, bool tick_ended, double tick_ms) {
    const std::lock_guard lock{mutex_};
    if (tick_ended) {
        last_tick_end_ = clock::now();
        tick_ms_[tick_ms_next_] = tick_ms;
        tick_ms_next_ = (tick_ms_next_ + 1) % tick_window;
        tick_ms_count_ = std::min(tick_ms_count_ + 1, tick_window);
    }
    state_ = state;
}

void health_publisher::publish_clients(clients_report report, double bytes_out_per_s,
                                       double bytes_in_per_s) {
    const std::lock_guard lock{mutex_};
    clients_ = std::move(report);
    bytes_out_per_s_ = bytes_out_per_s;
    bytes_in_per_s_ = bytes_in_per_s;
}

server_health health_publisher::health() const {
    const auto period = std::chrono::duration<double>(1.0 / settings_.tick_rate);
    const auto limit = std::max(std::chrono::milliseconds{1000},
                                std::chrono::ceil<std::chrono::milliseconds>(10 * period));
    server_health h;
    h.tick_rate = settings_.tick_rate;
    h.max_clients = settings_.max_clients;
    h.inspector_writes = settings_.inspector_writes;
    h.inspector_token = settings_.inspector_token;
    h.tick_limit = limit;
    std::array<double, tick_window> window{};
    std::unique_lock lock{mutex_};
    std::copy(tick_ms_.begin(), tick_ms_.end(), window.begin());
    h.tick_ms.window_ticks = tick_ms_count_;
    h.observers = state_.observers;
    h.entities = state_.entities;
    h.bytes_out_per_s = bytes_out_per_s_;
    h.bytes_in_per_s = bytes_in_per_s_;
    h.interest = state_.interest;
    h.ws_port = ws_port_;
    h.accepting = state_.accepting;
    h.draining = state_.draining;
    h.tick = state_.tick;
    h.clients = state_.clients;
    h.stats = state_.stats;
    h.last_tick_age =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - last_tick_end_);
    if (!tick_loop_running_) {
        h.problem = tick_loop_ended_.empty() ? "not started" : "tick loop " + tick_loop_ended_;
    } else if (h.last_tick_age > limit) {
        h.problem = "no tick completed for " + std::to_string(h.last_tick_age.count()) +
                    " ms (limit " + std::to_string(limit.count()) + " ms), last tick " +
                    std::to_string(h.tick);
    }
    h.ticking = h.problem.empty();
    lock.unlock();
    // The percentiles off the lock: the world thread takes it every tick.
    std::vector<double> ticks(window.begin(),
                              window.begin() + static_cast<std::ptrdiff_t>(h.tick_ms.window_ticks));
    if (!ticks.empty()) {
        h.tick_ms.max = *std::max_element(ticks.begin(), ticks.end());
        h.tick_ms.p99 = percentile(ticks, 0.99);
        h.tick_ms.p50 = percentile(ticks, 0.50);
    }
    return h;
}

clients_report health_publisher::client_list() const {
    const std::lock_guard lock{mutex_};
    return clients_;
}

}  // namespace ecsnet::server
