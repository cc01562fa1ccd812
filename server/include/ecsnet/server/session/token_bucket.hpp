#pragma once

#include <algorithm>
#include <chrono>

namespace ecsnet::server {

// Command rate limit: `rate` tokens per second, at most `burst` saved up.
class token_bucket {
public:
    using clock = std::chrono::steady_clock;

    token_bucket(double rate, double burst, clock::time_point now = clock::now()) noexcept
        : rate_{rate}, burst_{burst}, tokens_{burst}, last_{now} {}

    // Takes one token if there is one.
    [[nodiscard]] bool try_take(clock::time_point now = clock::now()) noexcept {
        const double elapsed = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        tokens_ = std::min(burst_, tokens_ + std::max(0.0, elapsed) * rate_);
        if (tokens_ >= 1.0) {
            tokens_ -= 1.0;
            return true;
        }
        return false;
    }

    [[nodiscard]] double tokens() const noexcept { return tokens_; }

private:
    double rate_;
    double burst_;
    double tokens_;
    clock::time_point last_;
};

}  // namespace ecsnet::server
