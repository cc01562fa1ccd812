#!/usr/bin/env bash
# ecsnet against Colyseus 0.18, side by side in one run on this machine (issue 26, Measurements).
# For each workload (N moving entities x K clients: 1000x8, 10000x1, 100x32), one after the other:
#   1. ecsnet-server driven by ecsnet-loadgen over TCP,
#   2. the same over WebSocket (ecsnet-loadgen --transport ws; skipped, and said so, when it has no --transport),
#   3. the Colyseus server of server.mjs driven by the Colyseus SDK clients of clients.mjs.
# Each server is pinned to core 0 and its load generator to core 1. Each measures the server's
# CPU (utime + stime from /proc/PID/stat) and the bytes received per client over the same
# window after the same warm-up. Prints one table, the ratios, and appends the raw JSON lines
# (one per row, after a line describing the run) to --out.
#
# Usage: bench/colyseus/run.sh [options]
#   --build-dir DIR   ecsnet build with bin/ecsnet-server and bin/ecsnet-loadgen
#                     (default: build/release; ECSNET_SERVER and ECSNET_LOADGEN override each)
#   --window S        seconds measured (default 20)
#   --warmup S        seconds before the window (default 3): ecsnet-loadgen counts them from
#                     starting its clients, clients.mjs from all its mirrors holding the world
#   --only LIST       workloads, comma-separated NxK (default 1000x8,10000x1,100x32)
#   --out FILE        default bench/results/colyseus-<date-time>.jsonl
#   -h, --help        this text
# The whole run takes about 9 x (window + warm-up + 5 s): 4 to 5 minutes with the defaults.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build_dir="$repo/build/release"
window=20
warmup=3
workloads=(1000x8 10000x1 100x32)
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift ;;
    --window) window=${2:?--window needs seconds}; shift ;;
    --warmup) warmup=${2:?--warmup needs seconds}; shift ;;
    --only) IFS=, read -r -a workloads <<< "${2:?--only needs workloads such as 1000x8,100x32}"; shift ;;
    --out) out=${2:?--out needs a file}; shift ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
server=${ECSNET_SERVER:-$build_dir/bin/ecsnet-server}
loadgen=${ECSNET_LOADGEN:-$build_dir/bin/ecsnet-loadgen}
out=${out:-$repo/bench/results/colyseus-$(date +%Y%m%d-%H%M%S).jsonl}

# Prerequisites.
missing=()
for tool in node npm getconf jq; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "run.sh: missing prerequisites: ${missing[*]} (Node.js 20 or later with npm; jq)" >&2
  exit 2
fi
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  echo "run.sh: Node.js $(node --version) is too old: 20 or later (Colyseus 0.18 declares 22;" \
       "it runs on 20)" >&2
  exit 2
fi
for binary in "$server" "$loadgen"; do
  if [ ! -x "$binary" ]; then
    echo "run.sh: $binary is missing. Build a Release tree, e.g." >&2
    echo "  cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_BUILD_TESTS=OFF" >&2
    echo "  cmake --build build/release --target ecsnet-server ecsnet-loadgen" >&2
    echo "or give --build-dir DIR, or ECSNET_SERVER and ECSNET_LOADGEN." >&2
    exit 2
  fi
done
for value in "$window" "$warmup"; do
  case "$value" in
    ''|*[!0-9.]*) echo "run.sh: --window and --warmup take seconds, not '$value'" >&2; exit 2 ;;
  esac
done
for workload in "${workloads[@]}"; do
  case "$workload" in
    [0-9]*x[0-9]*) ;;
    *) echo "run.sh: a workload is NxK (entities x clients), not '$workload'" >&2; exit 2 ;;
  esac
done
if [ ! -d "$here/node_modules" ]; then
  echo "run.sh: installing the Colyseus packages (npm ci in $here)"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
fi
# Two cores at least: the server alone on core 0, its load generator on core 1.
pin_server=()
pin_loadgen=()
loadgen_cores=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
  pin_server=(taskset -c 0)
  pin_loadgen=(taskset -c 1)
else
  echo "run.sh: fewer than 2 cores or no taskset: nothing pinned, the figures mix server and clients"
  loadgen_cores=(--server-core -1 --loadgen-core -1)
fi
has_ws=0
if grep -qE -- '--transport' <<< "$("$loadgen" --help 2>&1 || true)"; then
  has_ws=1
fi
# Both systems tick at ecsnet-server's default rate, read from its help.
tick_rate=$(sed -n 's/.*--tick-rate [^=]*=\([0-9.]*\).*/\1/p' <<< "$("$server" --help 2>&1 || true)")
tick_rate=${tick_rate%%$'\n'*}
tick_rate=${tick_rate:-30}
half_extent=1000

work=$(mktemp -d /tmp/ecsnet-colyseus.XXXXXX)
colyseus_pid=""
# Ends the Colyseus server this script started: SIGTERM, then SIGKILL after 10 s.
stop_colyseus() {
  if [ -z "$colyseus_pid" ]; then
    return
  fi
  kill "$colyseus_pid" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$colyseus_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$colyseus_pid" 2>/dev/null || true
  wait "$colyseus_pid" 2>/dev/null || true
  colyseus_pid=""
}
cleanup() {
  stop_colyseus
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

rows="$work/rows.jsonl"
: > "$rows"
failures=0

# Appends a result (loadgen's or clients.mjs's JSON line) with its workload, system and
# transport, or a failed row with the reason.
record() {
  local workload=$1 system=$2 transport=$3 log=$4 status=$5
  local json
  json=$(grep '^{' "$log" | tail -n 1 || true)
  if [ "$status" -ne 0 ] || [ -z "$json" ]; then
    failures=$((failures + 1))
    echo "run.sh: $workload $system $transport failed (exit $status); its output:" >&2
    tail -n 20 "$log" >&2
    jq -cn --arg w "$workload" --arg s "$system" --arg t "$transport" \
      --arg f "exit $status" '{workload: $w, system: $s, transport: $t, failed: $f}' >> "$rows"
    return
  fi
  jq -c --arg w "$workload" --arg s "$system" --arg t "$transport" \
    '{workload: $w, system: $s, transport: $t} + .' <<< "$json" >> "$rows"
}

run_ecsnet() {
  local entities=$1 clients=$2 transport=$3
  local log="$work/ecsnet-$entities-$clients-$transport.log"
  local args=(--server "$server" --entities "$entities" --clients "$clients"
              --tick-rate "$tick_rate" --world-half-extent "$half_extent"
              --spawns 0 --joins 0 --warmup "$warmup" --window "$window"
              --label "${entities}x${clients} ecsnet $transport" "${loadgen_cores[@]}")
  if [ "$transport" = ws ]; then
    args+=(--transport ws)
  fi
  local status=0
  "$loadgen" "${args[@]}" > "$log" 2>&1 || status=$?
  record "${entities}x${clients}" ecsnet "$transport" "$log" "$status"
}

run_colyseus() {
  local entities=$1 clients=$2
  local server_log="$work/colyseus-server-$entities-$clients.log"
  local log="$work/colyseus-$entities-$clients.log"
  "${pin_server[@]}" node "$here/server.mjs" --entities "$entities" --tick-rate "$tick_rate" \
    --world-half-extent "$half_extent" --port 0 > "$server_log" 2>&1 &
  colyseus_pid=$!
  local listening=""
  for _ in $(seq 600); do  # 60 s
    listening=$(grep -m 1 '^listening on ' "$server_log" || true)
    if [ -n "$listening" ] || ! kill -0 "$colyseus_pid" 2>/dev/null; then
      break
    fi
    sleep 0.1
  done
  local status=0
  if [ -z "$listening" ]; then
    echo "run.sh: the Colyseus server did not listen within 60 s" > "$log"
    cat "$server_log" >> "$log"
    status=1
  else
    # "listening on 127.0.0.1:PORT room ROOM_ID"
    local address room port
    read -r _ _ address _ room <<< "$listening"
    port=${address##*:}
    # --room=ID: a room id may start with '-'.
    "${pin_loadgen[@]}" node "$here/clients.mjs" --port "$port" --room="$room" \
      --entities "$entities" --clients "$clients" --server-pid "$colyseus_pid" \
      --warmup "$warmup" --window "$window" --label "${entities}x${clients} colyseus ws" \
      > "$log" 2>&1 || status=$?
  fi
  stop_colyseus
  record "${entities}x${clients}" colyseus ws "$log" "$status"
}

colyseus_version=$(node -p "require('$here/node_modules/@colyseus/core/package.json').version")
sdk_version=$(node -p "require('$here/node_modules/@colyseus/sdk/package.json').version")
echo "machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)," \
     "load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "ecsnet: $server, $loadgen$([ "$has_ws" = 1 ] || echo ' (no --transport: the ecsnet WebSocket rows are skipped)')"
echo "colyseus: @colyseus/core $colyseus_version, @colyseus/sdk $sdk_version, node $(node --version)"
echo "tick rate $tick_rate Hz, warm-up $warmup s, window $window s, workloads ${workloads[*]}"
jq -cn --arg date "$(date -Iseconds)" --arg cpu "$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1)" \
  --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" --arg node "$(node --version)" \
  --arg colyseus "$colyseus_version" --arg sdk "$sdk_version" --arg server "$server" \
  --argjson cores "$(nproc)" --argjson tick_rate "$tick_rate" --argjson window "$window" \
  --argjson warmup "$warmup" \
  '{run: {date: $date, cores: $cores, cpu: $cpu, load: $load, node: $node,
          colyseus_core: $colyseus, colyseus_sdk: $sdk, ecsnet_server: $server,
          tick_rate: $tick_rate, window_s: $window, warmup_s: $warmup}}' > "$work/header.jsonl"

for workload in "${workloads[@]}"; do
  entities=${workload%x*}
  clients=${workload#*x}
  echo "$workload: ecsnet over TCP"
  run_ecsnet "$entities" "$clients" tcp
  if [ "$has_ws" = 1 ]; then
    echo "$workload: ecsnet over WebSocket"
    run_ecsnet "$entities" "$clients" ws
  fi
  echo "$workload: Colyseus over WebSocket"
  run_colyseus "$entities" "$clients"
done

echo
node "$here/table.mjs" "$rows" "$tick_rate"
mkdir -p "$(dirname "$out")"
cat "$work/header.jsonl" "$rows" >> "$out"
echo
echo "raw results appended to $out"
if [ "$failures" -gt 0 ]; then
  echo "run.sh: $failures run(s) failed" >&2
  exit 1
fi
