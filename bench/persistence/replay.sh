#!/usr/bin/env bash
# Issue 37, item 7: the time a restore takes to replay --spawns journaled spawns into a world
# whose checkpoint holds --free free slots (persistence-replay-dir makes the dir), as the
# Release ecsnet-server logs it at start ("replayed N journal batches (R records) in X ms"),
# and the process start to "listening" time. Each run makes a new dir; --runs runs.
# Usage: bench/persistence/replay.sh [--build DIR] [--free N] [--spawns N] [--runs N]
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build/release
free=1000000
spawns=100000
runs=3
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --free) free=$2; shift 2 ;;
    --spawns) spawns=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "replay: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
for tool in grep sed date timeout mktemp; do
  command -v "$tool" >/dev/null || { echo "replay: needs $tool (coreutils, grep, sed)" >&2; exit 1; }
done
for bin in ecsnet-server persistence-replay-dir; do
  [ -x "$build/bin/$bin" ] || { echo "replay: no $build/bin/$bin (cmake --build $build --target $bin)" >&2; exit 1; }
done

for run in $(seq 1 "$runs"); do
  dir=$(mktemp -d /tmp/ecsnet-replay.XXXXXX)
  log=$dir.log
  "$build/bin/persistence-replay-dir" "$dir" --free "$free" --spawns "$spawns" >/dev/null
  started=$(date +%s%N)
  "$build/bin/ecsnet-server" --state-dir "$dir" --journal --bind 127.0.0.1 --port 0 \
    --checkpoint-seconds 0 >"$log" 2>&1 &
  pid=$!
  # Bounded: a restore of this size takes seconds; the old one minutes.
  for _ in $(seq 1 6000); do
    grep -q "listening on" "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  listening=$(date +%s%N)
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  line=$(grep -o "replayed [0-9]* journal batches ([0-9]* records) in [0-9.]* ms" "$log" || echo "no replay line (see $log)")
  echo "run $run: free $free, spawns $spawns: $line; start to listening $(( (listening - started) / 1000000 )) ms"
  rm -rf "$dir" "$log"
done
