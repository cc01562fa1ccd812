#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs missing packages, configures a
# Debug build with AddressSanitizer + UndefinedBehaviorSanitizer, builds, runs ctest.
# Usage: scripts/test.sh [extra ctest args, e.g. -R World]
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

build=${ECSNET_TEST_BUILD_DIR:-build/asan}
jobs=${ECSNET_JOBS:-$(nproc)}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DECSNET_SANITIZE=ON -DECSNET_WERROR=ON
cmake --build "$build" -j "$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
