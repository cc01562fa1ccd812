#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "ecsnet/protocol/messages.hpp"

// The client's estimate of the server's tick (docs/PROTOCOL.md, "Server time"): which tick the
// server runs now (to stamp inputs so that they arrive before it), which tick's frames arrive
// now, and which tick to render (a little behind, so that interpolation has both ends). Fed
// with what arrives (every tick's frame, Pongs, InputAcks); read once per frame. Knows no
// socket: time is passed in, so that it is tested with simulated time.
namespace ecsnet::client {

class server_clock {
public:
    using clock = std::chrono::steady_clock;

    struct options {
        double rate = 30.0;               // ticks per second (Welcome.tick_rate)
        double min_render_delay = 2.0;    // ticks behind the arriving frames, at least
        double max_render_delay = 10.0;   // ... and at most, however bad the jitter
        double snap_ticks = 8.0;          // a larger error is corrected at once, not eased
        double max_speed_change = 0.1;    // easing: at most 10 % faster or slower
    };

    explicit server_clock(options o);

    // Welcome: the server had run `tick` when it sent it.
    void on_welcome(std::uint64_t tick, clock::time_point received);
    // A Snapshot's last chunk or a Delta of `tick`, received at `received`.
    void on_tick(std::uint64_t tick, clock::time_point received);
    // A Pong answering a Ping sent at `sent`.
    void on_pong(clock::time_point sent, clock::time_point received);
    // An InputAck: how far ahead the client's inputs arrive (lead), to adjust the input margin.
    void on_input_ack(const protocol::input_ack& ack, clock::time_point received);

    // Moves the estimate to `now`, easing it towards what the samples say. Call once per frame
    // before reading; the estimate never goes backwards.
    void advance(clock::time_point now);

    [[nodiscard]] bool synchronized() const noexcept { return started_; }
    // The tick the server is running now (fractional): arrival tick plus half the round trip.
    [[nodiscard]] double server_tick() const noexcept { return shown_ + one_way_ticks(); }
    // The tick whose frames are arriving now.
    [[nodiscard]] double arrival_tick() const noexcept { return shown_; }
    // The tick to render: arrival tick minus the render delay, eased towards render_delay() as
    // fast as the estimate itself may change (max_speed_change): when the jitter grows, the
    // rendered tick slows down instead of stepping back. Never backwards but on a snap.
    [[nodiscard]] double render_tick() const noexcept { return shown_ - delay_shown_; }
    // The tick to stamp the next input with: the first the server has not run by the time it
    // arrives, plus the margin.
    [[nodiscard]] std::uint64_t input_tick() const noexcept;

    // The render delay the jitter calls for, in ticks (render_tick() eases towards it).
    [[nodiscard]] double render_delay() const noexcept;
    [[nodiscard]] double input_margin() const noexcept;  // ticks
    [[nodiscard]] double jitter() const noexcept { return jitter_; }  // ticks, smoothed
    [[nodiscard]] std::optional<std::chrono::duration<double>> rtt() const noexcept;
    [[nodiscard]] double rate() const noexcept { return options_.rate; }

private:
    [[nodiscard]] double seconds(clock::time_point t) const noexcept {
        return std::chrono::duration<double>(t - epoch_).count();
    }
    [[nodiscard]] double one_way_ticks() const noexcept { return srtt_ * 0.5 * options_.rate; }
    void sample(double tick, clock::time_point received);

    options options_;
    clock::time_point epoch_{};
    bool started_ = false;
    // The arrival timeline: tick = offset_ + rate * seconds(t), smoothed over samples.
    double offset_ = 0.0;
    double jitter_ = 0.0;  // mean absolute deviation of samples from offset_, in ticks
    int far_samples_ = 0;  // consecutive samples further than snap_ticks away
    double shown_ = 0.0;   // the eased estimate of the arrival tick
    double delay_shown_ = 0.0;  // the eased render delay (render_tick() = shown_ - this)
    clock::time_point shown_at_{};
    // Round trip (RFC 6298's smoothing), seconds; 0 before the first Pong.
    double srtt_ = 0.0;
    double rttvar_ = 0.0;
    bool have_rtt_ = false;
    // Ticks added to the input margin because inputs arrived late (InputAck.lead), or taken
    // back when they arrive with room to spare; one change per round trip.
    double margin_extra_ = 0.0;
    clock::time_point margin_changed_{};
    clock::time_point roomy_since_{};
    bool roomy_ = false;
};

}  // namespace ecsnet::client
