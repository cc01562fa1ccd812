#include "ecsnet/client/server_clock.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace ecsnet::client {

namespace {

constexpr double smoothing = 1.0 / 16.0;   // per tick sample: about half a second at 30 Hz
constexpr int samples_to_snap = 3;         // consecutive far samples before the offset jumps
constexpr double max_margin_extra = 30.0;  // ticks
constexpr auto roomy_for = std::chrono::seconds{2};

}  // namespace

server_clock::server_clock(options o) : options_{o} {
    if (!(o.rate > 0.0) || !std::isfinite(o.rate)) {
        throw std::invalid_argument("server_clock: the tick rate must be a positive number");
    }
    if (!(o.min_render_delay >= 0.0) || !(o.max_render_delay >= o.min_render_delay) ||
        !(o.snap_ticks > 0.0) || !(o.max_speed_change > 0.0 && o.max_speed_change < 1.0)) {
        throw std::invalid_argument(
            "server_clock: needs 0 <= min_render_delay <= max_render_delay, snap_ticks > 0 "
            "and 0 < max_speed_change < 1");
    }
}

void server_clock::on_welcome(std::uint64_t tick, clock::time_point received) {
    sample(static_cast<double>(tick), received);
}

void server_clock::on_tick(std::uint64_t tick, clock::time_point received) {
    sample(static_cast<double>(tick), received);
}

void server_clock::sample(double tick, clock::time_point received) {
    if (!started_) {
        started_ = true;
        epoch_ = received;
        offset_ = tick;
        shown_ = tick;
        shown_at_ = received;
        delay_shown_ = render_delay();
        return;
    }
    const double d = tick - options_.rate * seconds(received);
    const double error = d - offset_;
    if (std::abs(error) > options_.snap_ticks) {
        // One late frame is jitter; several in a row are a new timeline (the server stalled
        // and skipped ticks, or this process was paused).
        if (++far_samples_ >= samples_to_snap) {
            offset_ = d;
            jitter_ = 0.0;
            far_samples_ = 0;
        }
        return;
    }
    far_samples_ = 0;
    offset_ += error * smoothing;
    jitter_ += (std::abs(error) - jitter_) * smoothing;
}

void server_clock::on_pong(clock::time_point sent, clock::time_point received) {
    const double r = std::max(0.0, std::chrono::duration<double>(received - sent).count());
    if (!have_rtt_) {
        have_rtt_ = true;
        srtt_ = r;
        rttvar_ = r / 2.0;
        return;
    }
    rttvar_ = 0.75 * rttvar_ + 0.25 * std::abs(srtt_ - r);
    srtt_ = 0.875 * srtt_ + 0.125 * r;
}

void server_clock::on_input_ack(const protocol::input_ack& ack, clock::time_point received) {
    // A change shows in the acks a round trip later: one change per round trip at most.
    const auto round_trip = std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double>(std::max(srtt_, 1.0 / options_.rate)));
    const bool may_change = received - margin_changed_ >= round_trip;
    if (ack.lead < 0) {
        roomy_ = false;
        if (may_change && margin_extra_ < max_margin_extra) {
            margin_extra_ += 1.0;
            margin_changed_ = received;
        }
        return;
    }
    if (static_cast<double>(ack.lead) > input_margin() + 2.0) {
        if (!roomy_) {
            roomy_ = true;
            roomy_since_ = received;
        } else if (received - roomy_since_ >= roomy_for && may_change && margin_extra_ > 0.0) {
            margin_extra_ = std::max(0.0, margin_extra_ - 1.0);
            margin_changed_ = received;
            roomy_since_ = received;
        }
        return;
    }
    roomy_ = false;
}

void server_clock::advance(clock::time_point now) {
    if (!started_) {
        return;
    }
    const double dt = std::max(0.0, std::chrono::duration<double>(now - shown_at_).count());
    shown_at_ = std::max(shown_at_, now);
    const double target = offset_ + options_.rate * seconds(now);
    const double predicted = shown_ + options_.rate * dt;
    const double error = target - predicted;
    if (std::abs(error) > options_.snap_ticks) {
        shown_ = target;
        delay_shown_ = render_delay();
        return;
    }
    const double limit = options_.max_speed_change * options_.rate * dt;
    shown_ = predicted + std::clamp(error, -limit, limit);
    // The delay eases at the same rate: the arrival estimate moves at 0.9-1.1x real time and
    // the delay at most 0.1x, so the rendered tick never runs backwards (a late frame that
    // raises the jitter estimate used to step it back by up to a tick).
    delay_shown_ += std::clamp(render_delay() - delay_shown_, -limit, limit);
}

std::uint64_t server_clock::input_tick() const noexcept {
    // The server's tick when the input arrives: now's, plus the one-way trip; then the margin.
    const double arrives = server_tick() + one_way_ticks() + input_margin();
    return static_cast<std::uint64_t>(std::max(0.0, std::floor(arrives))) + 1;
}

double server_clock::render_delay() const noexcept {
    return std::clamp(1.0 + 3.0 * jitter_, options_.min_render_delay, options_.max_render_delay);
}

double server_clock::input_margin() const noexcept {
    const double spread = std::max(2.0 * jitter_, 2.0 * rttvar_ * options_.rate);
    return 1.0 + spread + margin_extra_;
}

std::optional<std::chrono::duration<double>> server_clock::rtt() const noexcept {
    if (!have_rtt_) {
        return std::nullopt;
    }
    return std::chrono::duration<double>{srtt_};
}

}  // namespace ecsnet::client
