#!/usr/bin/env bash
# Fuzzing with libFuzzer (Debian's clang-14, AddressSanitizer + UndefinedBehaviorSanitizer):
# installs clang and the build packages if missing (scripts/install-deps.sh build fuzz), builds
# the targets of tests/fuzz in build/fuzz (the normal g++ build is not touched) and runs each
# for ECSNET_FUZZ_SECONDS on a copy of its seed corpus
# (tests/fuzz/corpus/<target>, never modified). Stops at the first finding: prints the
# sanitizer report, the input's path and its base64, and exits non-zero.
#
# Usage: scripts/fuzz.sh [target ...]     targets: client_frame commands mirror schema session
#                                          (default: all)
# Environment:
#   ECSNET_FUZZ_SECONDS    fuzzing time per target (default 60)
#   ECSNET_FUZZ_BUILD_DIR  build directory (default build/fuzz)
#   ECSNET_FUZZ_USE_BUILD  1: ECSNET_FUZZ_BUILD_DIR is configured already with clang and
#                          ECSNET_FUZZ=ON (scripts/test.sh's ASan build, shared by the tests
#                          and the fuzzers): not reconfigured
#   ECSNET_FUZZ_KEEP       1: keep the work directory (grown corpora, logs) even on success
#   ECSNET_JOBS            build parallelism (default nproc)
#   ECSNET_FUZZ_PARALLEL   targets fuzzed at once (default nproc)
# A finding replays with: build/fuzz/bin/fuzz_<target> <input>
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(client_frame commands mirror schema session)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all_targets[@]}")
fi
for t in "${targets[@]}"; do
  case " ${all_targets[*]} " in
    *" $t "*) ;;
    *) echo "fuzz: unknown target '$t' (known: ${all_targets[*]})" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh build fuzz

build=${ECSNET_FUZZ_BUILD_DIR:-build/fuzz}
seconds=${ECSNET_FUZZ_SECONDS:-60}
jobs=${ECSNET_JOBS:-$(nproc)}
cxx=$(command -v clang++-14 || command -v clang++)

# Every object gets the sanitizers; what the targets run also gets libFuzzer's coverage
# (tests/fuzz/CMakeLists.txt); only the fuzz targets link libFuzzer. Debug keeps assertions and
# the ECS's consistency checks; -O1 keeps the speed reasonable.
if [ "${ECSNET_FUZZ_USE_BUILD:-0}" = 1 ]; then
  if ! grep -q '^ECSNET_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null; then
    echo "fuzz: ECSNET_FUZZ_USE_BUILD=1 but $build is not configured with ECSNET_FUZZ=ON" >&2
    exit 2
  fi
else
  flags="-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="$flags" -DECSNET_FUZZ=ON -DECSNET_BUILD_TESTS=OFF -DECSNET_BUILD_BENCH=OFF \
    >/dev/null
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]/#/fuzz_}"

work=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-fuzz.XXXXXX")
keep=${ECSNET_FUZZ_KEEP:-0}
cleanup() {
  if [ "$keep" = 1 ]; then
    echo "fuzz: work directory kept: $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Each target runs for its full time; up to ECSNET_FUZZ_PARALLEL (default: nproc) at once.
parallel=${ECSNET_FUZZ_PARALLEL:-$(nproc)}
run_target() {
  local t=$1 dir="$work/$1"
  # -entropic=0: with clang 14's libFuzzer the entropic schedule spends most of the time in
  # its feature bookkeeping on these targets (~5x fewer executions, less coverage in a minute).
  local args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -entropic=0
              -print_final_stats=1 -artifact_prefix="$dir/findings/")
  if [ -f "tests/fuzz/$t.dict" ]; then
    args+=(-dict="tests/fuzz/$t.dict")
  fi
  if [ "$t" = session ]; then
    # The server lives across inputs and keeps memory between them (sessions, buffers), so
    # libFuzzer's per-input leak check would run LSan's whole-heap scan after almost every input
    # (~10x fewer executions). LeakSanitizer still checks the whole process at exit.
    args+=(-detect_leaks=0)
  fi
  # The outer timeout only guards against a wedged process: libFuzzer stops itself.
  # `|| rc=$?`: under set -e a failing fuzzer (77: a finding) would end this background job
  # before rc is written, and the script's wait would then exit with it, deleting the finding
  # unreported (it happened in a CI run).
  local rc=0
  timeout --kill-after=30 $((seconds + 300)) \
    "$build/bin/fuzz_$t" "${args[@]}" "$dir/corpus" >"$dir/log" 2>&1 || rc=$?
  echo "$rc" > "$dir/rc"
}

pids=()
for t in "${targets[@]}"; do
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/findings"
  cp tests/fuzz/corpus/"$t"/* "$dir/corpus/"
  echo "fuzz: $t for ${seconds}s on $(find "$dir/corpus" -type f | wc -l) seed inputs"
  run_target "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge "$parallel" ]; then
    wait "${pids[0]}"
    pids=("${pids[@]:1}")
  fi
done
wait

summary=()
failed=0
for t in "${targets[@]}"; do
  dir="$work/$t"
  rc=$(cat "$dir/rc" 2>/dev/null || echo 1)
  finding=$(find "$dir/findings" -type f -print -quit)
  if [ "$rc" -ne 0 ] || [ -n "$finding" ]; then
    keep=1
    failed=1
    echo "fuzz: $t FAILED (exit $rc)" >&2
    tail -n 80 "$dir/log" >&2
    if [ -n "$finding" ]; then
      echo "fuzz: input: $finding" >&2
      echo "fuzz: base64: $(base64 -w0 "$finding")" >&2
      echo "fuzz: replay: $build/bin/fuzz_$t $finding" >&2
    fi
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -n 1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$dir/log" | tail -n 1)
  last=$(grep -E '^#[0-9]+' "$dir/log" | tail -n 1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\/[0-9]*[a-zA-Z]*\).*/\1/p' <<<"$last")
  line="$t: ${seconds}s, ${runs:-?} runs, ${rate:-?} exec/s, cov ${cov:-?}, ft ${ft:-?},"
  line+=" corpus ${corp:-?}, peak rss ${rss:-?} MB"
  echo "fuzz: $line"
  summary+=("$line")
done
if [ "$failed" = 1 ]; then
  exit 1
fi

echo "fuzz: no findings"
printf '  %s\n' "${summary[@]}"
