#!/usr/bin/env bash
# The whole test suite on a fresh Debian 12 machine: installs missing packages (those of the
# build, the fuzzers and the image test: scripts/install-deps.sh build fuzz image), builds Debug
# with clang, AddressSanitizer + UndefinedBehaviorSanitizer and libFuzzer's coverage (one build
# for the tests and the fuzzers) and runs every test through ctest
# (including the fault, load and soak tests of tests/reliability), then the threaded tests (the
# server's and tests/reliability) under ThreadSanitizer in build/tsan, then the Release build
# (the README's, -O3, no sanitizer) in build/release-tests: the programs and the suites whose
# subject changes with the optimizer (see the stage), then the fuzzers (scripts/fuzz.sh on the ASan
# build: libFuzzer, 30 s per target) and the Docker image test (docker/test-image.sh, with
# podman), which also installs the Release build's Debian packages (scripts/package.sh) on a
# clean Debian 12 and builds and runs a game from their template there. The TSan and Release builds run beside the ASan tests at idle priority. Uses ccache
# and mold when installed.
# A failing ctest stage does not stop the others; the last line sums every ctest stage.
# Usage: scripts/test.sh [--no-image] [--no-fuzz] [--no-tsan] [--no-release] [ctest args]
set -euo pipefail
cd "$(dirname "$0")/.."

image=1
fuzz=1
tsan=1
release=1
ctest_args=()
for arg in "$@"; do
  case "$arg" in
    --no-image) image=0 ;;
    --no-fuzz) fuzz=0 ;;
    --no-tsan) tsan=0 ;;
    --no-release) release=0 ;;
    --fuzz) fuzz=1 ;;  # the default; kept for old command lines
    -h|--help) sed -n '2,/^# Usage/p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) ctest_args+=("$arg") ;;
  esac
done
# A ctest filter means "just these tests".
if [ ${#ctest_args[@]} -gt 0 ]; then
  image=0
  fuzz=0
  tsan=0
  release=0
fi

started=$(date +%s)
stage_name=""
stage_started=$started
timings=()
# Prints the stage's header with the time since the start, and records how long the previous
# stage took (printed at the end).
stage() {
  local now
  now=$(date +%s)
  [ -n "$stage_name" ] && timings+=("$(printf '%5d s  %s' $((now - stage_started)) "$stage_name")")
  stage_name=$*
  stage_started=$now
  echo; echo "== $* ($((now - started)) s)"
}

# Every ctest stage adds to these; a failing stage is recorded and the next one still runs.
passed_total=0
failed_total=0
ctest_failures=()
# The output ctest --output-on-failure printed under each failed test's status line, up to the
# next test's line, cut to its last $failure_lines lines.
failure_lines=40
failed_test_output() {  # ctest log
  awk -v keep="$failure_lines" '
    function flush() { if (name != "") { print "--- " name; s = n > keep ? n - keep + 1 : 1; for (i = s; i <= n; i++) print buf[i] } name = ""; n = 0 }
    /^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / || /^ *Start +[0-9]+: / {
      flush()
      if ($0 !~ /Passed|Skipped|^ *Start/) name = $0
      next
    }
    /^[0-9]+% tests passed/ { flush(); exit }
    name != "" { buf[++n] = $0 }
    END { flush() }' "$1"
}
run_ctest() {  # stage label, then ctest arguments
  local label=$1 log rc summary failed total
  shift
  log=$(mktemp /tmp/ecsnet-ctest.XXXXXX.log)
  rc=0
  ctest "$@" 2>&1 | tee "$log" || rc=$?
  # "100% tests passed, 0 tests failed out of 812"; nothing when no test ran.
  summary=$(sed -n 's/.*tests passed, \([0-9]*\) tests\{0,1\} failed out of \([0-9]*\).*/\1 \2/p' "$log" | tail -n 1)
  read -r failed total <<< "${summary:-0 0}"
  passed_total=$((passed_total + total - failed))
  failed_total=$((failed_total + failed))
  echo "ctest ($label): $((total - failed)) passed, $failed failed"
  if [ "$failed" != 0 ]; then
    # Again, right under the summary, so that a CI report that keeps only a part of a long
    # output still shows why each test failed.
    echo "the failed tests' own output (its last $failure_lines lines each):"
    failed_test_output "$log"
  fi
  rm -f "$log"
  if [ "$rc" != 0 ]; then
    ctest_failures+=("$label (ctest exit $rc)")
  fi
}

stage "dependencies"
# Everything the selected stages run, installed at once (one apt-get update) and checked before
# the build: the fuzzers' clang and the image test's podman, netavark and iptables included.
# fuzz: clang, which builds the ASan stage (and the fuzzers with it) even with --no-fuzz.
groups=(build web ops fuzz)
[ "$image" = 1 ] && groups+=(image)
scripts/install-deps.sh "${groups[@]}"

# ccache (install-deps' build group) makes the three builds of the same sources, and the next
# run, cheap; without it the builds just take longer. The launcher is always set, empty when
# ccache is missing, so that a build directory configured with it earlier does not fail.
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout, for every stage: a clone in another folder (CI's) then
  # hits what an earlier run on this machine compiled.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  echo "ccache: $(command -v ccache) (base dir $CCACHE_BASEDIR)"
else
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
  echo "ccache: not installed, building without it"
fi
# mold (install-deps' build group) links a sanitized test program in 2 s where GNU ld takes
# 8 (docs/BENCHMARKS.md, "CI time"); every build links about a hundred.
linker=(-DECSNET_LINKER=)
if command -v mold >/dev/null 2>&1; then
  linker=(-DECSNET_LINKER=mold)
fi

stage "npm ci: the TypeScript SDK, the inspector, the arena's page"
# Their tests run under ctest in the ASan build (sdk/ts, inspector/, games/arena/web/
# CMakeLists.txt): unit, end to end against this build's ecsnet-server and arena-server, and the
# pages in headless chromium. The ASan build bundles the pages (ECSNET_WEB) into
# build/asan/share/ecsnet/web, where its servers find them.
scripts/web-deps.sh

stage "build: Debug + ASan + UBSan + fuzzers (clang)"
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
# -g1 (line tables) instead of Debug's -g: sanitizer reports keep their files and lines, and the
# sanitized builds compile a little (~5 %) and link faster (docs/BENCHMARKS.md, "CI time").
debug_info=(-DCMAKE_CXX_FLAGS_DEBUG=-g1)
# Unity builds: each library's sources compiled a batch of 8 per file, so the headers (Asio,
# Beast, spdlog, FlatBuffers) are parsed once per batch instead of once per source: under TSan
# the server and client libraries took 368 s of compile instead of 727 (docs/BENCHMARKS.md, "CI
# time"). Every stage and the image build use it (the image's compile then hits the Release
# stage's cache). The ASan build's session path stays file by file (tests/fuzz/CMakeLists.txt).
unity=(-DCMAKE_UNITY_BUILD=ON)
# One build for the tests and the fuzzers (CI time: the same sources were compiled a fourth time
# for libFuzzer): clang, and the fuzz targets (ECSNET_FUZZ) beside the tests; what the fuzzers
# run carries libFuzzer's coverage (tests/fuzz/CMakeLists.txt), the tests' drivers do not. g++
# still builds the TSan and Release stages, with -Werror: both compilers' warnings count.
clang=$(command -v clang++-14 || command -v clang++)
if [ -f "$build/CMakeCache.txt" ] && ! grep -q "^CMAKE_CXX_COMPILER:[A-Z]*=$clang\$" "$build/CMakeCache.txt"; then
  echo "$build was configured with another compiler: configuring it again from scratch"
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$clang" \
  -DECSNET_SANITIZE=ON -DECSNET_WERROR=ON -DCMAKE_CXX_FLAGS= \
  -DECSNET_FUZZ=ON "${debug_info[@]}" "${unity[@]}" \
  -DECSNET_ENTT_DIR="$entt_dir" "${launcher[@]}" "${linker[@]}"
cmake --build "$build" -j "$jobs"

# The TSan and Release builds run while the ASan tests run, at idle priority (SCHED_IDLE, nice
# 19): they take only the CPU time the tests leave (much of the tests' time is waiting on
# sockets and timers), so the tests' timings are not disturbed, and each build has a head start
# when its stage comes (docs/BENCHMARKS.md, "CI time"). Configured here, built in the background
# one after the other; each stage below waits for its own build and fails the run if it failed.
if [ "$tsan" = 1 ]; then
  # Sessions' I/O runs on --io-threads threads beside the world's (docs/SERVER.md, "Threads"):
  # the tests that run a server, in this process (server_test's ServerXxx, Admin..., two of
  # InterestServer's: Focus messages cross threads too; InputServer...: Input frames and their
  # refusals too) or as ecsnet-server (server_process_test, tests/reliability's limits), and the
  # game-client SDK's (client_test: the session with and without its network thread, the bad
  # network through the latency proxy's thread, the proxy itself), under ThreadSanitizer; the
  # session tests run over TCP and WebSocket (Transports/...), and the WebSocket transport's
  # own; the observers (a socket handed from the admin thread to the server); the metrics
  # scraped by the admin thread while sessions and the world count (MetricsEndpoint); the
  # Agones lifecycle on its own thread; the journal's writer thread and the checkpoint writer
  # (JournalTest, ServerPersistence). Only their programs are built (one per part: server_test,
  # client_test) and only these tests run. The flood and soak tests (minutes of load, with CPU
  # and latency bounds that a 5-15x slower build does not hold) stay with the ASan stage.
  tsan_targets=(server_test server_process_test reliability_limits_test client_test
                ecsnet-server ecsnet-client)
  tsan_tests='^(Transports/)?(Server[A-Z][A-Za-z]*|Admin[A-Za-z]*|Timeouts|Caps|Abuse|InputServer[A-Za-z]*|WebSocket[A-Za-z]*|Observer[A-Za-z]*|MetricsEndpoint|Agones[A-Za-z]*|JournalTest|ConnectionOverWebSocket|BadNetwork|LatencyProxy|Threads/Session[A-Za-z]*)\.|^InterestServer\.(EachClient|TheChecksum)'
  # server_test's and client_test's single-threaded units whose names match the pattern above.
  tsan_skipped='^Server(Clock|Config)\.'
  tsan_build=${ECSNET_TSAN_BUILD_DIR:-build/tsan}
  cmake -S . -B "$tsan_build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DECSNET_SANITIZE_THREAD=ON \
    "${debug_info[@]}" "${unity[@]}" \
    -DECSNET_WERROR=ON -DECSNET_BUILD_BENCH=OFF -DECSNET_SDK_TS_TESTS=OFF -DECSNET_WEB=OFF \
    "${launcher[@]}" "${linker[@]}" > /dev/null
fi
if [ "$release" = 1 ]; then
  # What users run (the README's build): -O3, NDEBUG, no sanitizer. CI time: every suite runs
  # in the ASan stage (and the threaded ones under TSan); this stage builds the programs users
  # run (the image's two among them) and the suites whose subject changes with the optimizer:
  # the real processes (server_process_test, client_e2e_test: ecsnet-server and ecsnet-client
  # as built here), the games' systems (arena_test, demo_game_test), the bytes on the wire
  # (protocol_golden_test) and random operations against a reference (protocol_convergence_test).
  # Their drivers are built at -O1 (ECSNET_TEST_DRIVER_FLAGS, tests/CMakeLists.txt): what they
  # test keeps -O3. Its own build directory: scripts/demo.sh configures build/release without
  # tests.
  release_build=${ECSNET_RELEASE_BUILD_DIR:-build/release-tests}
  release_tests='^(server_process_test|client_e2e_test|arena_test|demo_game_test|protocol_golden_test|protocol_convergence_test)$'
  # The image's build stage builds the two programs at these same paths with this cache
  # mounted (ECSNET_IMAGE_* below, docker/Dockerfile), so its compile is cache hits. The base
  # directory and no working directory in the hash: the image sets the same.
  cmake -S . -B "$release_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_WERROR=ON "${unity[@]}" \
    -DECSNET_BUILD_BENCH=OFF -DECSNET_SDK_TS_TESTS=OFF -DECSNET_WEB=OFF -DECSNET_TEST_DRIVER_FLAGS=-O1 \
    -DECSNET_TEST_TARGETS="$release_tests" -DECSNET_SKIP_TEST_TARGETS= \
    "${launcher[@]}" "${linker[@]}" > /dev/null
fi
background=$(mktemp -d /tmp/ecsnet-background.XXXXXX)
background_pid=""
# Ends the background builds with the script, however it ends.
trap '[ -z "$background_pid" ] || kill -- -"$background_pid" 2>/dev/null || true; rm -rf "$background"' EXIT
if [ "$tsan" = 1 ] || [ "$release" = 1 ]; then
  set -m  # the builds in a process group of their own, which the trap below can end whole
  (
    if [ "$tsan" = 1 ]; then
      started_at=$(date +%s)
      rc=0
      nice -n 19 chrt --idle 0 cmake --build "$tsan_build" -j "$jobs" --target "${tsan_targets[@]}" \
        > "$background/tsan.log" 2>&1 || rc=$?
      echo "$rc $started_at $(date +%s)" > "$background/tsan.done"
    fi
    if [ "$release" = 1 ]; then
      started_at=$(date +%s)
      rc=0
      # One locale for this build and the image's (docker/Dockerfile): ccache hashes LANG and
      # LC_*, and a container without them missed every object the host compiled with them.
      env -u LC_ALL -u LC_CTYPE -u LC_MESSAGES LANG=C.UTF-8 \
        nice -n 19 chrt --idle 0 cmake --build "$release_build" -j "$jobs" \
        > "$background/release.log" 2>&1 || rc=$?
      echo "$rc $started_at $(date +%s)" > "$background/release.done"
    fi
  ) &
  background_pid=$!
  set +m
fi
# Waits for a background build (tsan or release); exits the script if it failed, with its log.
wait_for_build() {
  local name=$1 rc started_at ended_at
  while [ ! -f "$background/$name.done" ]; do
    if ! kill -0 "$background_pid" 2>/dev/null && [ ! -f "$background/$name.done" ]; then
      echo "the $name build ended without a result"; cat "$background/$name.log" 2>/dev/null; exit 1
    fi
    sleep 2
  done
  read -r rc started_at ended_at < "$background/$name.done"
  echo "$name build: $((ended_at - started_at)) s, ended $(( $(date +%s) - ended_at )) s ago"
  builds+=("$(printf '%5d s  build: %s (in the background from %d s)' $((ended_at - started_at)) "$name" $((started_at - started)))")
  if [ "$rc" != 0 ]; then
    tail -n 100 "$background/$name.log"
    echo "the $name build failed (exit $rc)"
    exit 1
  fi
}
builds=()

stage "ctest: Debug + ASan + UBSan (the TSan and Release builds beside it, at idle priority)"
# The soak (tests/reliability/soak_test.cpp) runs alone (RUN_SERIAL): 180 s by default, 60 s in
# CI, the least it accepts (CI time; a slow reader's first cut-off and RSS levelling off come
# ~25 s in). ECSNET_SOAK_SECONDS sets it either way.
if [ "${CI:-}" = true ] && [ -z "${ECSNET_SOAK_SECONDS:-}" ]; then
  export ECSNET_SOAK_SECONDS=60
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
run_ctest ASan --test-dir "$build" --output-on-failure -j "$jobs" \
  ${ctest_args[@]+"${ctest_args[@]}"}

if [ "$tsan" = 1 ]; then
  stage "build: ThreadSanitizer, what is left (build/tsan)"
  wait_for_build tsan
  stage "ctest: ThreadSanitizer"
  TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1} \
    run_ctest TSan --test-dir "$tsan_build" --output-on-failure -j "$jobs" -R "$tsan_tests" \
      -E "$tsan_skipped"
fi

if [ "$release" = 1 ]; then
  stage "build: Release, what is left (build/release-tests)"
  wait_for_build release
  stage "ctest: Release"
  # The tests that build nothing (scripts, manifests) ran in the ASan stage.
  run_ctest Release --test-dir "$release_build" --output-on-failure -j "$jobs" \
    -E '^(scripts|docker)\.|^deploy_'
fi

if [ "$fuzz" = 1 ]; then
  # 30 s per target, not fuzz.sh's 60 (CI time): two targets run at once, so the five take three
  # rounds (90 s instead of 180). Every run starts from the seed corpus; 30 s runs reached 94-101 %
  # of the edges (cov) of the dry run's 60 s runs (2026-11-25/26, cov at 30 s / 60 s:
  # client_frame 6028/6084, commands 6282/6277, mirror 2901/3016, schema 2679/2845, session
  # 11653/11750). Longer runs: ECSNET_FUZZ_SECONDS.
  fuzz_seconds=${ECSNET_FUZZ_SECONDS:-30}
  stage "fuzzing (libFuzzer, $fuzz_seconds s per target)"
  # The targets were built with the tests (the ASan stage): nothing is compiled again.
  ECSNET_FUZZ_SECONDS=$fuzz_seconds ECSNET_FUZZ_BUILD_DIR="$build" ECSNET_FUZZ_USE_BUILD=1 \
    scripts/fuzz.sh
fi

if [ "$image" = 1 ]; then
  stage "Docker image test and the Debian packages (podman)"
  # The Release stage's build as Debian packages (scripts/package.sh, cmake/packaging.cmake):
  # the image test installs them on a clean Debian 12 and builds and runs a game from their
  # template (docker/test-image.sh, 6.). Without the Release stage that part is skipped.
  packages=()
  if [ "$release" = 1 ]; then
    scripts/package.sh --from-build "$release_build" --out build/packages
    packages=(ECSNET_PACKAGES_DIR="$PWD/build/packages")
  fi
  image_ccache=()
  if [ "$release" = 1 ] && command -v ccache >/dev/null 2>&1; then
    image_ccache=(ECSNET_IMAGE_CCACHE_DIR="$(ccache --get-config cache_dir)"
                  ECSNET_IMAGE_BUILD_DIR="$release_build")
    mkdir -p "${image_ccache[0]#*=}"
  fi
  env ${image_ccache[@]+"${image_ccache[@]}"} ${packages[@]+"${packages[@]}"} \
    ECSNET_CLIENT="$PWD/$build/bin/ecsnet-client" docker/test-image.sh
fi

stage "done"
echo "stage timings:"
printf '  %s\n' "${timings[@]}"
if [ ${#builds[@]} -gt 0 ]; then
  echo "background builds (their time overlaps the stages above):"
  printf '  %s\n' "${builds[@]}"
fi
if [ ${#ctest_failures[@]} -gt 0 ]; then
  echo "failed ctest stages: ${ctest_failures[*]}"
fi
# Every ctest stage together (ASan, TSan, Release): the run's last line.
echo "ctest: $passed_total passed, $failed_total failed"
[ ${#ctest_failures[@]} -eq 0 ]
