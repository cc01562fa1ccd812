// The failure handler of all fuzz targets (fuzz_targets.hpp).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz_targets.hpp"

namespace ecsnet::fuzz {

namespace {

[[noreturn]] void abort_handler(const std::string& message) {
    std::fprintf(stderr, "ecsnet fuzz check failed: %s\n", message.c_str());
    std::fflush(stderr);
    std::abort();
}

failure_handler current_handler = &abort_handler;

}  // namespace

void set_failure_handler(failure_handler handler) noexcept {
    current_handler = handler != nullptr ? handler : &abort_handler;
}

void throwing_failure_handler(const std::string& message) {
    throw check_failure{message};
}

bool tracing() noexcept {
    static const bool on = [] {
        const char* v = std::getenv("ECSNET_FUZZ_TRACE");
        return v != nullptr && *v != '\0' && *v != '0';
    }();
    return on;
}

void report_failure(const std::string& message) {
    current_handler(message);
    std::abort();  // a handler must not return
}

}  // namespace ecsnet::fuzz
