#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs missing packages (those of the
# build, the fuzzers and the image test: scripts/install-deps.sh build fuzz image), builds Debug
# with AddressSanitizer + UndefinedBehaviorSanitizer and runs every test through ctest
# (including the fault, load and soak tests of tests/reliability), then the threaded tests (the
# server's and tests/reliability) under ThreadSanitizer in build/tsan, then the fuzzers
# (scripts/fuzz.sh: libFuzzer, clang, 60 s per target) and the Docker image test
# (docker/test-image.sh, with podman).
# Usage: scripts/test.sh [--no-image] [--no-fuzz] [--no-tsan] [ctest args, e.g. -R Server]
set -euo pipefail
cd "$(dirname "$0")/.."

image=1
fuzz=1
tsan=1
ctest_args=()
for arg in "$@"; do
  case "$arg" in
    --no-image) image=0 ;;
    --no-fuzz) fuzz=0 ;;
    --no-tsan) tsan=0 ;;
    --fuzz) fuzz=1 ;;  # the default; kept for old command lines
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ctest_args+=("$arg") ;;
  esac
done
# A ctest filter means "just these tests".
if [ ${#ctest_args[@]} -gt 0 ]; then
  image=0
  fuzz=0
  tsan=0
fi

started=$(date +%s)
stage() { echo; echo "== $* ($(( $(date +%s) - started )) s)"; }

stage "dependencies"
# Everything the selected stages run, installed at once (one apt-get update) and checked before
# the build: the fuzzers' clang and the image test's podman, netavark and iptables included.
groups=(build)
[ "$fuzz" = 1 ] && groups+=(fuzz)
[ "$image" = 1 ] && groups+=(image)
scripts/install-deps.sh "${groups[@]}"

stage "build: Debug + ASan + UBSan"
build=${ECSNET_TEST_BUILD_DIR:-build/asan}
jobs=${ECSNET_JOBS:-$(nproc)}
# The EnTT comparison (bench/ecs_vs_entt and its test) needs EnTT's headers, which are not part
# of ecsnet: $ECSNET_ENTT_DIR (absolute or relative to the repository root; a wrong one fails
# the configure), else ../shared/third_party/entt-3.16.0/src if it exists. Without them it is
# skipped (and a value cached by an earlier run is cleared).
entt_dir=${ECSNET_ENTT_DIR:-}
if [ -z "$entt_dir" ] && [ -d ../shared/third_party/entt-3.16.0/src ]; then
  entt_dir=../shared/third_party/entt-3.16.0/src
fi
if [ -n "$entt_dir" ]; then
  [ -d "$entt_dir" ] && entt_dir=$(cd "$entt_dir" && pwd)
  echo "EnTT comparison: ECSNET_ENTT_DIR=$entt_dir"
else
  echo "EnTT comparison skipped: ECSNET_ENTT_DIR is not set and ../shared/third_party/entt-3.16.0/src does not exist"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DECSNET_SANITIZE=ON -DECSNET_WERROR=ON \
  -DECSNET_ENTT_DIR="$entt_dir"
cmake --build "$build" -j "$jobs"

stage "ctest"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
log=$(mktemp /tmp/ecsnet-ctest.XXXXXX.log)
ctest --test-dir "$build" --output-on-failure -j "$jobs" ${ctest_args[@]+"${ctest_args[@]}"} \
  | tee "$log"
# "100% tests passed, 0 tests failed out of 812" -> repeated as the run's last line below.
summary=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -n 1)
rm -f "$log"

if [ "$tsan" = 1 ]; then
  # Sessions' I/O runs on --io-threads threads beside the world's (docs/SERVER.md, "Threads"):
  # the tests that run a server, in this process (server_server_test, server_admin_test, two of
  # server_interest_server_test's: Focus messages cross threads too) or as
  # ecsnet-server (server_process_test, tests/reliability's limits), under ThreadSanitizer.
  # Only their targets are built. The flood and soak tests (minutes of load, with CPU and
  # latency bounds that a 5-15x slower build does not hold) stay with the ASan stage.
  tsan_targets=(server_server_test server_admin_test server_process_test reliability_limits_test
                server_interest_server_test ecsnet-server ecsnet-client)
  tsan_tests='^(Server[A-Z][A-Za-z]*|Admin[A-Za-z]*|Timeouts|Caps|Abuse)\.|^InterestServer\.(EachClient|TheChecksum)'
  stage "ThreadSanitizer: the threaded tests (build/tsan)"
  tsan_build=${ECSNET_TSAN_BUILD_DIR:-build/tsan}
  cmake -S . -B "$tsan_build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DECSNET_SANITIZE_THREAD=ON \
    -DECSNET_WERROR=ON -DECSNET_BUILD_BENCH=OFF
  cmake --build "$tsan_build" -j "$jobs" --target "${tsan_targets[@]}"
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
    ctest --test-dir "$tsan_build" --output-on-failure -j "$jobs" -R "$tsan_tests"
fi

if [ "$fuzz" = 1 ]; then
  stage "fuzzing (libFuzzer, 60 s per target)"
  scripts/fuzz.sh
fi

if [ "$image" = 1 ]; then
  stage "Docker image test (podman)"
  ECSNET_CLIENT="$PWD/$build/bin/ecsnet-client" docker/test-image.sh
fi

stage "done"
read -r failed total <<< "${summary:-0 0}"
echo "ctest: $((total - failed)) passed, $failed failed"
