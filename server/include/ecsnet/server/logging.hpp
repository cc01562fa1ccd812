#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>

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
        if (now - window_start_ >= interval_) {
            window_start_ = now;
            used_ = 0;
        }
        if (used_ < burst_) {
            ++used_;
            suppressed = suppressed_;
            suppressed_ = 0;
            return true;
        }
        ++suppressed_;
        return false;
    }

private:
    std::mutex mutex_;
    std::size_t burst_;
    std::chrono::seconds interval_;
    clock::time_point window_start_{};
    std::size_t used_{0};
    std::size_t suppressed_{0};
};

}  // namespace ecsnet::server
