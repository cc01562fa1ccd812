#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

// Where a tick's work time goes, by stage: summed by the tick's thread, logged with each stats
// line as milliseconds per tick (ecsnet-loadgen reads them) and exported by /metrics as
// ecsnet_tick_stage_seconds_total{stage}. Two clock reads per stage and client-facing step:
// tens of nanoseconds against microseconds of work.
namespace ecsnet::server {

enum class tick_stage : std::uint8_t {
    commands,    // clients' commands applied, players joined and left
    inputs,      // the tick's inputs written into the world
    systems,     // the game's systems
    journal,     // the tick's structural changes and commands journaled
    interest,    // the interest policy's index updated with the changes
    view_query,  // per client: the entities its interest policy wants
    view_plan,   // per client: what enters, leaves and changes in its view, within its budget
    encode,      // deltas encoded (once for the single stream, per client for a view)
    checksum,    // checksums computed and encoded
    hand_off,    // frames queued to the sessions (and the InputAck encoded)
    checkpoint,  // a checkpoint handed to its threads; a copy longer than the time between ticks
    reports,     // health, the clients' report, metrics
};
inline constexpr std::size_t tick_stage_count = 12;

[[nodiscard]] constexpr std::string_view to_string(tick_stage stage) noexcept {
    constexpr std::array<std::string_view, tick_stage_count> names{
        "commands", "inputs", "systems", "journal", "interest", "view_query",
        "view_plan", "encode", "checksum", "hand_off", "checkpoint", "reports"};
    return names[static_cast<std::size_t>(stage)];
}

class tick_profile {
public:
    using clock = std::chrono::steady_clock;

    // Adds the time from its making to its end to `stage`.
    class scope {
    public:
        scope(tick_profile* profile, tick_stage stage) noexcept
            : profile_{profile}, stage_{stage}, started_{profile == nullptr ? clock::time_point{} : clock::now()} {}
        scope(const scope&) = delete;
        scope& operator=(const scope&) = delete;
        ~scope() {
            if (profile_ != nullptr) {
                profile_->add(stage_, clock::now() - started_);
            }
        }

    private:
        tick_profile* profile_;
        tick_stage stage_;
        clock::time_point started_;
    };

    void add(tick_stage stage, clock::duration spent) noexcept {
        nanoseconds_[static_cast<std::size_t>(stage)] +=
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(spent).count());
    }
    [[nodiscard]] std::uint64_t nanoseconds(tick_stage stage) const noexcept {
        return nanoseconds_[static_cast<std::size_t>(stage)];
    }
    void clear() noexcept { nanoseconds_ = {}; }

private:
    std::array<std::uint64_t, tick_stage_count> nanoseconds_{};
};

// Times a scope into a profile that may be null (not profiled).
[[nodiscard]] inline tick_profile::scope timed(tick_profile* profile, tick_stage stage) noexcept {
    return tick_profile::scope{profile, stage};
}

}  // namespace ecsnet::server
