#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ecsnet/ecs/entity.hpp"

// Lag compensation's memory (docs/PREDICTION.md, "Lag compensation"): where the hit shapes a
// game records were at each of the last ticks. A client draws the others interpolated, some
// ticks behind the server; a shot aimed at what it drew misses the server's present. A game
// system asks instead where each shape was at the render tick the shooter was showing,
// interpolated between two ticks as the client's interpolation does, and tests the shot there.
// The window is bounded: a render tick older than it is answered at its oldest tick, so a long
// round trip (or a forged render tick) buys at most the window. Lives on the world's thread.
namespace ecsnet::server {

// A circle: a ship's hit shape in a 2D game.
struct hit_shape {
    ecs::Entity entity;
    float x{};
    float y{};
    float radius{};
};

struct ray_hit {
    ecs::Entity entity;
    float distance{};  // along the ray, to where it enters the shape (0 from inside)
    hit_shape shape;   // where the shape was at the render tick
};

// Where the segment from (x, y) along the unit vector (dx, dy), `length` long, enters `shape`
// (0 from inside), or nullopt: the test raycast() makes, for a shot at the present too.
[[nodiscard]] std::optional<float> ray_enters(const hit_shape& shape, float x, float y, float dx,
                                              float dy, float length) noexcept;

// The nearest of `shapes` (not `ignore`) that the segment enters: a shot at the present, the
// same test as lag_history::raycast's.
[[nodiscard]] std::optional<ray_hit> raycast(std::span<const hit_shape> shapes, float x, float y,
                                             float dx, float dy, float length,
                                             ecs::Entity ignore = {}) noexcept;

class lag_history {
public:
    // From the tick a shot is applied back to the render tick it was aimed at: the round
    // trip, the interpolation delay and the input's lead over the server (inputs arrive
    // early and wait for their tick). Measured at 30 Hz: 13 ticks (430 ms) at 150 ms RTT,
    // up to 17.5 (580 ms) at 250 ms: 700 ms covers a shooter up to about 300 ms RTT.
    static constexpr std::chrono::milliseconds default_window{700};
    static constexpr std::chrono::milliseconds max_window{1000};

    // Keeps the ticks of the last `window` at `tick_rate` ticks per second (at least two).
    // Throws std::invalid_argument for a rate that is not positive or a window outside
    // (0, max_window].
    explicit lag_history(double tick_rate, std::chrono::milliseconds window = default_window);

    // The shapes after `tick`'s systems, in any order; ticks come in increasing order (throws
    // std::logic_error otherwise). A tick skipped is simply not there: a render tick inside
    // the gap is answered from the tick before it.
    void record(std::uint64_t tick, std::vector<hit_shape> shapes);

    [[nodiscard]] bool empty() const noexcept { return newest_ == 0; }
    [[nodiscard]] std::uint64_t newest() const noexcept { return newest_; }
    [[nodiscard]] std::uint64_t oldest() const noexcept;
    [[nodiscard]] std::size_t capacity() const noexcept { return ring_.size(); }

    // The render tick this history answers for `render_tick`: clamped to [oldest, newest].
    [[nodiscard]] double clamp(double render_tick) const noexcept;
    // The shapes as drawn at `render_tick` (clamped): each shape recorded at floor(tick),
    // moved towards where it was at the next tick by the fraction. A shape that did not exist
    // yet at floor(tick) is not there; one gone at the next tick stays where it last was.
    [[nodiscard]] std::vector<hit_shape> at(double render_tick) const;
    // The nearest shape (not `ignore`) that the segment from (x, y) along the unit vector
    // (dx, dy), `length` long, enters at `render_tick` (clamped). Allocates nothing.
    [[nodiscard]] std::optional<ray_hit> raycast(double render_tick, float x, float y, float dx,
                                                 float dy, float length,
                                                 ecs::Entity ignore = {}) const;

private:
    struct tick_shapes {
        std::uint64_t tick{0};
        std::vector<hit_shape> shapes;  // by entity index
    };
    [[nodiscard]] const tick_shapes* find(std::uint64_t tick) const noexcept;
    // fn(shape) for each shape as drawn at render_tick.
    template <typename Fn>
    void each_at(double render_tick, Fn&& fn) const;

    std::vector<tick_shapes> ring_;
    std::uint64_t newest_{0};
};

}  // namespace ecsnet::server
