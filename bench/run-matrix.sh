#!/usr/bin/env bash
# Runs every load scenario of docs/BENCHMARKS.md with ecsnet-loadgen against a release build:
# server pinned to core 0, load generator to core 1. Appends one JSON line per scenario to
# the output file (default bench/results/matrix-<date>.jsonl) and prints the tables, then the
# CPU floor of the same fan-out with plain send() calls (bench/loopback_floor.cpp).
# Usage: bench/run-matrix.sh [--window S] [--out FILE] [--only LABEL]
set -euo pipefail
cd "$(dirname "$0")/.."

window=30
out="bench/results/matrix-$(date +%Y%m%d-%H%M%S).jsonl"
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --window) window=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-matrix.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh > /dev/null
build=${ECSNET_BUILD_DIR:-build/release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_BUILD_TESTS=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target ecsnet-server ecsnet-loadgen loopback-floor > /dev/null
mkdir -p "$(dirname "$out")"

# label entities clients spawns joins warmup [extra loadgen arguments]
big="--world-half-extent 8192 --interest-radius 256 --client-budget 65536 --focus-speed 30"
scenarios=(
  "1k-8     1000    8  600 10 3"
  "10k-8    10000   8  600 10 3"
  "10k-1    10000   1  600 10 3"
  "100-32   100     32 600 10 3"
  "100k-1   100000  1  600  5 3"
  "1m-1     1000000 1  600  3 3"
  # The big world of issue 14: 16,384^2, 100,000 moving entities, each client's area of
  # interest (radius 256) moving at 30 units/s, 64 KiB/s per client.
  "big-100  100000  100  100 3 20 $big"
  "big-500  100000  500  100 3 20 $big"
  "big-1000 100000  1000 100 3 20 $big"
)
echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), load $(cut -d' ' -f1-3 /proc/loadavg)"
for s in "${scenarios[@]}"; do
  read -r label entities clients spawns joins warmup extra <<< "$s"
  if [ -n "$only" ] && [ "$only" != "$label" ]; then
    continue
  fi
  echo
  # shellcheck disable=SC2086 # extra holds several arguments
  "$build/bin/ecsnet-loadgen" --server "$build/bin/ecsnet-server" --label "$label" \
      --entities "$entities" --clients "$clients" --spawns "$spawns" --joins "$joins" \
      --warmup "$warmup" --window "$window" ${extra:-} | tee /tmp/ecsnet-matrix-last.txt
  tail -n 1 /tmp/ecsnet-matrix-last.txt >> "$out"
done
if [ -z "$only" ]; then
  # What plain send() calls cost for the same fan-out, without a server (lower bound of its CPU).
  echo
  "$build/bin/loopback-floor" 8 8000 30 10
  "$build/bin/loopback-floor" 32 1000 30 10
fi
echo
echo "results appended to $out"
