#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs missing packages, builds release and runs
# the demo. Until the server exists, the demo is the ECS tour program.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

build=${ECSNET_BUILD_DIR:-build/release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_BUILD_TESTS=OFF
cmake --build "$build" -j "$(nproc)" --target ecs_tour
"$build/bin/ecs_tour"
