// libFuzzer entry point; the logic lives in fuzz_targets.cpp (shared with regression_test.cpp).
#include <cstddef>
#include <cstdint>

#include "fuzz_targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ecsnet::fuzz::fuzz_schema_one(data, size);
    return 0;
}
