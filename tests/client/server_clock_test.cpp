#include "ecsnet/client/server_clock.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>

namespace server_clock_test {

using ecsnet::client::server_clock;
using namespace std::chrono_literals;
using time_point = server_clock::clock::time_point;
using seconds = std::chrono::duration<double>;

constexpr double rate = 30.0;

// A simulated server ticking at `rate` from local time `start` (its tick 1000 then), and a
// network with a one-way delay of `delay` plus uniform jitter of +- `jitter`.
struct simulation {
    time_point start = time_point{} + 100s;
    std::uint64_t first_tick = 1000;
    seconds delay{0.05};
    seconds jitter{0.0};
    std::mt19937 rng{7};

    [[nodiscard]] time_point sent_at(std::uint64_t tick) const {
        return start + std::chrono::duration_cast<time_point::duration>(
                           seconds{static_cast<double>(tick - first_tick) / rate});
    }
    [[nodiscard]] double server_tick_at(time_point t) const {
        return static_cast<double>(first_tick) + seconds{t - start}.count() * rate;
    }
    time_point arrival(time_point sent) {
        std::uniform_real_distribution<double> spread{-jitter.count(), jitter.count()};
        return sent + std::chrono::duration_cast<time_point::duration>(delay + seconds{spread(rng)});
    }
};

server_clock::options defaults() {
    server_clock::options o;
    o.rate = rate;
    return o;
}

// Feeds ticks first..last (frames and a Pong every 10 ticks) and advances at each arrival.
void feed(server_clock& c, simulation& sim, std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t t = first; t <= last; ++t) {
        const time_point received = sim.arrival(sim.sent_at(t));
        c.on_tick(t, received);
        if (t % 10 == 0) {
            const time_point ping = sim.sent_at(t);
            c.on_pong(ping, ping + 2 * std::chrono::duration_cast<time_point::duration>(sim.delay));
        }
        c.advance(received);
    }
}

// The Welcome at the simulation's first tick, then `ticks` ticks fed as above.
void welcome_and_feed(server_clock& c, simulation& sim, std::uint64_t ticks) {
    c.on_welcome(sim.first_tick, sim.arrival(sim.sent_at(sim.first_tick)));
    feed(c, sim, sim.first_tick + 1, sim.first_tick + ticks);
}

TEST(ServerClock, RefusesNonsenseOptions) {
    server_clock::options o = defaults();
    o.rate = 0.0;
    EXPECT_THROW(server_clock{o}, std::invalid_argument);
    o = defaults();
    o.max_render_delay = 1.0;
    EXPECT_THROW(server_clock{o}, std::invalid_argument);
}

TEST(ServerClock, ConvergesOnTheServersTickWithoutJitter) {
    simulation sim;
    server_clock c{defaults()};
    EXPECT_FALSE(c.synchronized());
    c.on_welcome(sim.first_tick, sim.arrival(sim.sent_at(sim.first_tick)));
    EXPECT_TRUE(c.synchronized());
    feed(c, sim, sim.first_tick + 1, sim.first_tick + 90);  // 3 s
    const time_point now = sim.arrival(sim.sent_at(sim.first_tick + 90));
    c.advance(now);
    ASSERT_TRUE(c.rtt().has_value());
    EXPECT_NEAR(c.rtt()->count(), 0.1, 1e-9);
    // Frames of the tick sent a one-way trip ago arrive now; the server runs that many ticks on.
    EXPECT_NEAR(c.arrival_tick(), static_cast<double>(sim.first_tick + 90), 0.25);
    EXPECT_NEAR(c.server_tick(), sim.server_tick_at(now), 0.25);
    EXPECT_NEAR(c.render_tick(), c.arrival_tick() - 2.0, 1e-9);  // no jitter: the minimum
}

TEST(ServerClock, AnInputStampedNowArrivesBeforeItsTickRuns) {
    simulation sim;
    sim.jitter = seconds{0.02};
    server_clock c{defaults()};
    welcome_and_feed(c, sim, 150);
    int late = 0;
    for (std::uint64_t t = sim.first_tick + 151; t < sim.first_tick + 451; ++t) {
        const time_point received = sim.arrival(sim.sent_at(t));
        c.on_tick(t, received);
        c.advance(received);
        const std::uint64_t stamp = c.input_tick();
        // The input travels to the server; its tick must not have run when it gets there.
        const double server_then = sim.server_tick_at(sim.arrival(received));
        late += static_cast<double>(stamp) <= std::floor(server_then) ? 1 : 0;
        // ... and is not needlessly early: within the margin and two ticks.
        EXPECT_LE(static_cast<double>(stamp) - server_then, c.input_margin() + 2.0);
    }
    EXPECT_EQ(late, 0);
}

TEST(ServerClock, RenderTimeStaysBehindTheNewestFrameUnderJitter) {
    simulation sim;
    sim.jitter = seconds{0.04};  // +- 1.2 ticks
    server_clock c{defaults()};
    welcome_and_feed(c, sim, 150);
    EXPECT_GT(c.jitter(), 0.0);
    EXPECT_GT(c.render_delay(), 2.0);  // adapted to the jitter
    // Rendering at 60 Hz between arrivals: the render tick has a newer frame after it.
    std::uint64_t newest = 0;
    int extrapolated = 0;
    int frames = 0;
    time_point now = sim.arrival(sim.sent_at(sim.first_tick + 150));
    for (std::uint64_t t = sim.first_tick + 151; t < sim.first_tick + 451; ++t) {
        const time_point received = sim.arrival(sim.sent_at(t));
        while (now < received) {
            c.advance(now);
            extrapolated += c.render_tick() > static_cast<double>(newest) ? 1 : 0;
            ++frames;
            now += 16667us;
        }
        c.on_tick(t, received);
        newest = std::max(newest, t);
    }
    EXPECT_LE(extrapolated, frames / 100) << extrapolated << " of " << frames;
}

TEST(ServerClock, EasesSmallErrorsAndNeverRunsBackwardsForThem) {
    simulation sim;
    server_clock c{defaults()};
    welcome_and_feed(c, sim, 60);
    // The network gets 100 ms slower: frames arrive 3 ticks later than the estimate says.
    sim.delay = seconds{0.15};
    double last = c.arrival_tick();
    for (std::uint64_t t = sim.first_tick + 61; t < sim.first_tick + 361; ++t) {
        const time_point received = sim.arrival(sim.sent_at(t));
        c.on_tick(t, received);
        c.advance(received);
        EXPECT_GE(c.arrival_tick(), last);
        last = c.arrival_tick();
    }
    EXPECT_NEAR(c.arrival_tick(), static_cast<double>(sim.first_tick + 360), 0.3);
}

// Frames held by a stall (5 to 1 ticks late, within the snap distance) raise the jitter
// estimate at once, and with it the delay the jitter calls for: the rendered tick slows down
// instead of stepping back (ecsnet once stepped it back by up to a tick: BadNetwork's
// interpolation test saw an entity move "in -0.9 ticks").
TEST(ServerClock, RenderTickNeverRunsBackwardsWhenTheJitterRises) {
    simulation sim;
    server_clock c{defaults()};
    welcome_and_feed(c, sim, 60);
    const double delay_before = c.render_delay();
    double peak_delay = delay_before;
    double last = c.render_tick();
    time_point now = sim.arrival(sim.sent_at(sim.first_tick + 60));
    // Ticks 61-63 are held until 100 ms after tick 63 was due; the frames after them queue.
    const time_point stall_end = sim.arrival(sim.sent_at(sim.first_tick + 63)) + 100ms;
    for (std::uint64_t t = sim.first_tick + 61; t < sim.first_tick + 241; ++t) {
        const time_point received = std::max(sim.arrival(sim.sent_at(t)), stall_end);
        while (now < received) {  // rendering at 60 Hz
            c.advance(now);
            EXPECT_GE(c.render_tick(), last) << "tick " << t;
            last = c.render_tick();
            now += 16667us;
        }
        c.on_tick(t, received);
        peak_delay = std::max(peak_delay, c.render_delay());
    }
    EXPECT_GT(peak_delay, delay_before + 0.5) << "the late frames did not raise the jitter";
    // ... and the rendered tick took that delay on, eased: it trails the newest frame by it.
    EXPECT_NEAR(c.arrival_tick() - c.render_tick(), c.render_delay(), 0.25);
}

TEST(ServerClock, ALongStallIsCorrectedAtOnce) {
    simulation sim;
    server_clock c{defaults()};
    welcome_and_feed(c, sim, 60);
    // The server stalls 5 s and skips those ticks: tick numbers go on from 1061, 5 s later.
    sim.start += 5s;
    for (std::uint64_t t = sim.first_tick + 61; t < sim.first_tick + 70; ++t) {
        const time_point received = sim.arrival(sim.sent_at(t));
        c.on_tick(t, received);
        c.advance(received);
    }
    EXPECT_NEAR(c.arrival_tick(), static_cast<double>(sim.first_tick + 69), 1.0);
}

TEST(ServerClock, LateInputsWidenTheMarginOncePerRoundTripAndRoomNarrowsIt) {
    simulation sim;
    server_clock c{defaults()};
    welcome_and_feed(c, sim, 30);
    const double base = c.input_margin();
    const time_point t0 = sim.arrival(sim.sent_at(sim.first_tick + 30));
    ecsnet::protocol::input_ack late{1030, 1029, -1, 1, 0};
    c.on_input_ack(late, t0);
    c.on_input_ack(late, t0 + 10ms);  // within the round trip: no second change
    EXPECT_DOUBLE_EQ(c.input_margin(), base + 1.0);
    c.on_input_ack(late, t0 + 200ms);
    EXPECT_DOUBLE_EQ(c.input_margin(), base + 2.0);
    // Inputs now arrive well ahead: after two seconds of it, a tick of margin goes back.
    ecsnet::protocol::input_ack roomy{1040, 1040, 10, 1, 0};
    for (int i = 0; i <= 21; ++i) {
        c.on_input_ack(roomy, t0 + 300ms + i * 100ms);
    }
    EXPECT_DOUBLE_EQ(c.input_margin(), base + 1.0);
}

}  // namespace server_clock_test
