#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "ecsnet/server/config.hpp"

namespace ecsnet::server {

// Installs the default spdlog logger ("ecsnet") in text or JSON-lines form. SPDLOG_LEVEL in
// the environment overrides `level` (it is read after the logger exists, so it takes effect).
void setup_logging(const std::string& level, log_format format);

// Client-supplied text made safe for a log line: control characters, quotes and backslashes
// escaped, cut to `max_bytes`. JSON output escapes the whole message again for its syntax.
[[nodiscard]] std::string printable(std::string_view text, std::size_t max_bytes = 80);

// Lets `burst` messages through per `interval`, counting the rest, so that a flood of bad
// input cannot flood the log. Thread-safe: the server's thread and the I/O threads share one.
class log_limiter {
public:
    using clock = std::chrono::steady_clock;

    log_limiter(std::size_t burst, std::chrono::seconds interval) noexcept
        : burst_{burst}, interval_{interval} {}

    // True when this message may be logged; then `suppressed` holds how many were dropped
    // since the last one that was logged.
    [[nodiscard]] bool allow(std::size_t& suppressed, clock::time_point now = clock::now()) noexcept {
        const std::lock_guard lock{mutex_};
        if (!take_slot(now)) {
            return false;
        }
        suppressed = std::exchange(suppressed_, 0);
        return true;
    }

    // True when this message may be logged; the dropped ones are counted until
    // take_suppressed() (a summary line says how many, instead of the next message).
    [[nodiscard]] bool allow(clock::time_point now = clock::now()) noexcept {
        const std::lock_guard lock{mutex_};
        return take_slot(now);
    }

    // How many were dropped since the last one logged, now counted as reported.
    [[nodiscard]] std::size_t take_suppressed() noexcept {
        const std::lock_guard lock{mutex_};
        return std::exchange(suppressed_, 0);
    }

private:
    bool take_slot(clock::time_point now) noexcept {
        if (now - window_start_ >= interval_) {
            window_start_ = now;
            used_ = 0;
        }
        if (used_ < burst_) {
            ++used_;
            return true;
        }
        ++suppressed_;
        return false;
    }

    std::mutex mutex_;
    std::size_t burst_;
    std::chrono::seconds interval_;
    clock::time_point window_start_{};
    std::size_t used_{0};
    std::size_t suppressed_{0};
};

}  // namespace ecsnet::server
