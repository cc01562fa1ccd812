#!/usr/bin/env bash
# GET /metrics under load, side by side with no scrape: an ecsnet-server (Release) with
# --clients real clients (ecsnet-loadgen, each with a full mirror of --entities moving demo
# entities), then --rounds pairs of phases of --phase-seconds each: no scrape, then one scrape
# a second. After each phase, the server's own tick time over the phase (/status tick_ms: p50,
# p99, max of the last 300 ticks, 10 s at 30 Hz). Every scrape's time (curl's time_total) and
# size. Prints one line per phase and a summary. Run it on a quiet machine (docs/BENCHMARKS.md).
# Usage: bench/metrics/measure.sh [--build DIR] [--clients N] [--entities N] [--rounds N]
#                                 [--phase-seconds S] [--tick-rate HZ] [--interval S]
# (--interval: seconds between scrapes in the scrape phases, 1 by default; 0.05 is a stress test)
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build/release
clients=1000
entities=1000
rounds=3
phase=10
tick_rate=30
interval=1
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --entities) entities=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --phase-seconds) phase=$2; shift 2 ;;
    --tick-rate) tick_rate=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
scripts/install-deps.sh --check build ops >/dev/null \
  || { echo "measure: missing tools: scripts/install-deps.sh build ops" >&2; exit 1; }
for bin in ecsnet-server ecsnet-loadgen; do
  [ -x "$build/bin/$bin" ] || { echo "measure: no $build/bin/$bin (cmake --build $build --target $bin)" >&2; exit 1; }
done

work=$(mktemp -d /tmp/ecsnet-metrics-bench.XXXXXX)
server_pid=
loadgen_pid=
cleanup() {
  [ -n "$loadgen_pid" ] && kill "$loadgen_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

taskset -c 0 "$build/bin/ecsnet-server" --bind 127.0.0.1 --port 0 --admin-port 0 \
  --tick-rate "$tick_rate" --demo-entities "$entities" --max-clients $((clients + 16)) \
  --max-clients-per-address $((clients + 16)) --max-pending $((clients + 16)) \
  --max-pending-per-address $((clients + 16)) \
  > "$work/server.log" 2>&1 &
server_pid=$!
port= admin=
for _ in $(seq 100); do
  port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$work/server.log" | head -n 1)
  admin=$(sed -n 's|.*admin endpoint on http://[0-9.]*:\([0-9]*\).*|\1|p' "$work/server.log" | head -n 1)
  [ -n "$port" ] && [ -n "$admin" ] && break
  sleep 0.1
done
[ -n "$port" ] && [ -n "$admin" ] || { cat "$work/server.log" >&2; echo "measure: the server did not start" >&2; exit 1; }

total=$(( rounds * phase * 2 + 30 ))
"$build/bin/ecsnet-loadgen" --port "$port" --server-pid "$server_pid" --clients "$clients" \
  --warmup 5 --window "$total" --spawns 0 --joins 0 --label metrics > "$work/loadgen.log" 2>&1 &
loadgen_pid=$!
for _ in $(seq 600); do
  joined=$(curl -s "http://127.0.0.1:$admin/status" | jq -r '.clients // 0')
  [ "$joined" -ge "$clients" ] && break
  sleep 0.2
done
[ "${joined:-0}" -ge "$clients" ] || { tail "$work/loadgen.log" >&2; echo "measure: only $joined clients joined" >&2; exit 1; }
sleep "$phase"  # the joins' snapshots out of the tick window

tick_line() {  # phase label
  curl -s "http://127.0.0.1:$admin/status" \
    | jq -r --arg l "$1" '"\($l)  tick ms p50 \(.tick_ms.p50 * 1000 | round / 1000)  p99 \(.tick_ms.p99 * 1000 | round / 1000)  max \(.tick_ms.max * 1000 | round / 1000)  (\(.tick_ms.window_ticks) ticks, \(.clients) clients, \(.entities) entities)"'
}
echo "ecsnet /metrics under load: $clients clients, $entities entities, $tick_rate Hz, $(nproc) cores, $(date -u +%FT%TZ)"
for r in $(seq "$rounds"); do
  sleep "$phase"
  tick_line "round $r, no scrape       "
  end=$(( $(date +%s) + phase ))
  while [ "$(date +%s)" -lt "$end" ]; do
    curl -s -o "$work/scrape.txt" -w '%{time_total} %{size_download}\n' \
      "http://127.0.0.1:$admin/metrics" >> "$work/scrapes.txt"
    sleep "$interval"
  done
  tick_line "round $r, scrapes every ${interval} s"
done
sort -n "$work/scrapes.txt" | awk '{ t[NR] = $1 * 1000; s = $2 } END {
  printf "scrapes: %d, %d bytes each; time p50 %.2f ms, p99 %.2f ms, max %.2f ms (curl time_total, loopback)\n",
         NR, s, t[int(NR * 0.5 + 0.5)], t[int(NR * 0.99 + 0.5)], t[NR] }'
grep -c '^ecsnet_' "$work/scrape.txt" | sed 's/^/series in a scrape: /'
