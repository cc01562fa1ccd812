#!/usr/bin/env bash
# Builds __NAME__ with its tests (build/) and runs them.  Usage: ./test.sh [ctest args]
set -euo pipefail
cd "$(dirname "$0")"
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
[ -f build/CMakeCache.txt ] || cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
cmake --build build
ctest --test-dir build --output-on-failure "$@"
