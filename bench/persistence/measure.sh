#!/usr/bin/env bash
# Issue #29's persistence figures, with a Release build (docs/PERSISTENCE.md, "Cost"):
#  1. checkpoints of --sizes moving demo entities every --interval s for --seconds s: the copy of
#     the world (between two ticks), the encode + write + fsync, the file size; the tick's p50/p99 in the
#     seconds a checkpoint was being written beside those with none (same run: the per-second
#     "stats:" lines, each second classed by the checkpoint lines' tick and write time);
#  2. the restore of the --restore-size checkpoint at start;
#  3. the journal at each of --rates commands per second (bench/persistence/command_load.cpp,
#     SetComponent from --clients connections) for --load-seconds s, beside the same load
#     without --journal: commit time per batch (write + fdatasync, one batch per tick),
#     journal bytes per command, the tick's p50/p99 and the send-to-CommandResult time.
# The server runs on core 0, the load on core 1 (taskset). Run it on a quiet machine.
# Usage: bench/persistence/measure.sh [--build DIR] [--sizes "100000 1000000"]
#          [--restore-size N] [--seconds S] [--interval S] [--rates "200 2000"]
#          [--load-seconds S] [--clients N] [--load-entities N] [--tick-rate HZ] [--keep]
# (--keep: leave the work dir with the logs and state dirs; its path is printed)
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build/release
sizes="100000 1000000"
restore_size=1000000
seconds=40
interval=5
rates="200 2000"
load_seconds=20
clients=4
load_entities=10000
tick_rate=30
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --restore-size) restore_size=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --interval) interval=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --load-seconds) load_seconds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --load-entities) load_entities=$2; shift 2 ;;
    --tick-rate) tick_rate=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
done
for tool in curl jq awk; do
  command -v "$tool" >/dev/null || { echo "measure: needs $tool (scripts/install-deps.sh build ops)" >&2; exit 1; }
done
for bin in ecsnet-server persistence-load; do
  [ -x "$build/bin/$bin" ] || { echo "measure: no $build/bin/$bin (cmake --build $build --target $bin)" >&2; exit 1; }
done
# Read whole first: grep -q would end the pipe early and, under pipefail, fail it with SIGPIPE.
server_help=$("$build/bin/ecsnet-server" --help)
grep -q -- '--state-dir' <<< "$server_help" \
  || { echo "measure: $build/bin/ecsnet-server has no --state-dir (rebuild it)" >&2; exit 1; }
pin_server=() pin_load=()
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
  pin_server=(taskset -c 0) pin_load=(taskset -c 1)
fi

work=$(mktemp -d /tmp/ecsnet-persistence-bench.XXXXXX)
server_pid=
load_pid=
cleanup() {
  [ -n "$load_pid" ] && kill "$load_pid" 2>/dev/null || true
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  if [ "$keep" = 1 ]; then echo "work dir kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# start_server LOG ARGS...: sets server_pid, port, admin; waits for "listening on" (a 1M
# restore takes a while).
start_server() {
  local log=$1; shift
  "${pin_server[@]}" "$build/bin/ecsnet-server" --bind 127.0.0.1 --port 0 --admin-port 0 \
    --tick-rate "$tick_rate" --log-level info "$@" > "$log" 2>&1 &
  server_pid=$!
  port= admin=
  for _ in $(seq 1200); do
    port=$(sed -n 's/.*listening on [0-9.]*:\([0-9]*\).*/\1/p' "$log" | head -n 1)
    admin=$(sed -n 's|.*admin endpoint on http://[0-9.]*:\([0-9]*\).*|\1|p' "$log" | head -n 1)
    [ -n "$port" ] && [ -n "$admin" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  tail -n 20 "$log" >&2
  echo "measure: the server did not start" >&2
  exit 1
}
stop_server() {  # SIGTERM: the shutdown checkpoint is written before it exits
  kill -TERM "$server_pid"
  wait "$server_pid" || { echo "measure: the server exited with $?" >&2; exit 1; }
  server_pid=
}
metrics() { curl -sf "http://127.0.0.1:$admin/metrics"; }
# metric_value FILE NAME: the sample of NAME (with its labels, exactly as exposed), 0 if absent.
metric_value() { awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }' "$1"; }
# bucket_quantile FILE HISTOGRAM Q: the upper bound of the bucket holding quantile Q (in ms).
bucket_quantile() {
  awk -v h="$2_bucket" -v q="$3" '
    index($1, h "{") == 1 { match($1, /le="[^"]*"/); le = substr($1, RSTART + 4, RLENGTH - 5)
                            n++; bound[n] = le; count[n] = $2 }
    END { total = count[n]; if (total == 0) { print "-"; exit }
          for (i = 1; i <= n; i++) if (count[i] >= q * total) {
            if (bound[i] == "+Inf") print "> " bound[i - 1] * 1000; else print "<= " bound[i] * 1000
            exit } }' "$1"
}

echo "ecsnet persistence: build $build, $tick_rate Hz, $(nproc) cores, $(date -u +%FT%TZ)"
echo "commands: $0 --build $build --sizes \"$sizes\" --restore-size $restore_size --seconds $seconds --interval $interval --rates \"$rates\" --load-seconds $load_seconds --clients $clients --load-entities $load_entities --tick-rate $tick_rate"

# ---- 1. checkpoints --------------------------------------------------------------------------
for n in $sizes; do
  dir="$work/state-$n"
  log="$work/checkpoints-$n.log"
  echo
  echo "== checkpoints: $n moving entities, one every $interval s, $seconds s"
  echo "   $build/bin/ecsnet-server --demo-entities $n --state-dir DIR --checkpoint-seconds $interval --stats-interval-s 1"
  start_server "$log" --demo-entities "$n" --state-dir "$dir" --checkpoint-seconds "$interval" \
    --stats-interval-s 1
  sleep "$seconds"
  metrics > "$work/checkpoints-$n.metrics"
  cp "$log" "$work/checkpoints-$n.running.log"  # before the shutdown checkpoint
  stop_server
  running="$work/checkpoints-$n.running.log"
  if ! grep -q 'checkpoint tick [0-9]*: copied' "$running"; then
    echo "   no checkpoint line in $seconds s (longer --seconds?)"; continue
  fi
  # checkpoint tick T: copied N entities in X ms, written B bytes in Y ms (encode E ms, write+fsync W ms)
  # (before the copy left the tick: "X ms on the tick, written")
  sed -n 's/.*checkpoint tick \([0-9]*\): copied \([0-9]*\) entities in \([0-9.]*\) ms\( on the tick\)\{0,1\}, written \([0-9]*\) bytes in \([0-9.]*\) ms (encode \([0-9.]*\) ms, write+fsync \([0-9.]*\) ms).*/\1 \2 \3 \5 \6 \7 \8/p' \
    "$running" > "$work/checkpoints-$n.txt"
  awk '
    function median(a, k,   i, j, t) { for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
                                       return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
    function max(a, k,   i, m) { m = a[1]; for (i = 2; i <= k; i++) if (a[i] > m) m = a[i]; return m }
    { k++; copy[k] = $3; bytes = $4; off[k] = $5; enc[k] = $6; wr[k] = $7; ents = $2 }
    END {
      printf "   %d checkpoints of %d entities\n", k, ents
      printf "   copy of the world:         median %.2f ms, max %.2f ms\n", median(copy, k), max(copy, k)
      printf "   encode + write + fsync:    median %.1f ms, max %.1f ms\n", median(off, k), max(off, k)
      printf "     encode:                  median %.1f ms, max %.1f ms\n", median(enc, k), max(enc, k)
      printf "     write + fsync:           median %.1f ms, max %.1f ms\n", median(wr, k), max(wr, k)
      printf "   size:                      %d bytes (%.1f bytes per entity)\n", bytes, bytes / (ents ? ents : 1)
    }' "$work/checkpoints-$n.txt"
  newest=$(ls "$dir"/checkpoint-*.ckpt | tail -n 1)
  echo "   newest file on disk:       $(stat -c %s "$newest") bytes ($(basename "$newest"), the shutdown one)"
  # Ticks: each per-second stats line covers the ticks since the previous one; it is "during a
  # checkpoint" when one of them is between a checkpoint's capture tick and the tick its write
  # ended (capture + write time). The first 3 s (start-up, 1M spawns) are left out.
  awk -v rate="$tick_rate" '
    NR == FNR { if (match($0, /checkpoint tick [0-9]+: copied/)) {
                  split(substr($0, RSTART), f, /[ :]/); t = f[3] + 0
                  match($0, /written [0-9]+ bytes in [0-9.]+ ms/); split(substr($0, RSTART, RLENGTH), w, " ")
                  n++; from[n] = t; to[n] = t + int(w[5] * rate / 1000) + 1 }
                next }
    /stats: tick [0-9]+ p50/ {
      match($0, /stats: tick [0-9]+ p50 [0-9.]+ ms p99 [0-9.]+ ms/); split(substr($0, RSTART, RLENGTH), s, " ")
      tick = s[3] + 0; lines++
      if (lines > 3) {
        during = 0
        for (i = 1; i <= n; i++) if (from[i] <= tick && to[i] > prev) during = 1
        c = during ? "with" : "none"; m[c]++; p50[c, m[c]] = s[5]; p99[c, m[c]] = s[8]
      }
      prev = tick }
    function sorted_at(arr, c, k, q,   i, j, t, v) { for (i = 1; i <= k; i++) v[i] = arr[c, i]
      for (i = 2; i <= k; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      i = int(q * k + 0.999999); if (i < 1) i = 1; return v[i] }
    END {
      for (c in m) if (m[c] > 0)
        printf "   ticks, %s checkpoint being written: p50 %.3f ms (median of %d seconds), p99 %.3f ms (worst second %.3f ms)\n",
               c == "with" ? "a" : "no", sorted_at(p50, c, m[c], 0.5), m[c], sorted_at(p99, c, m[c], 0.99), sorted_at(p99, c, m[c], 1)
    }' "$running" "$running"
  echo "   /metrics: $(metric_value "$work/checkpoints-$n.metrics" 'ecsnet_checkpoints_total{result="written"}') written, $(metric_value "$work/checkpoints-$n.metrics" 'ecsnet_checkpoints_total{result="skipped"}') skipped (previous still being written), $(metric_value "$work/checkpoints-$n.metrics" 'ecsnet_tick_overruns_total') tick overruns"
done

# ---- 2. restore --------------------------------------------------------------------------------
echo
echo "== restore: $restore_size entities"
dir="$work/state-$restore_size"
if ! ls "$dir"/checkpoint-*.ckpt >/dev/null 2>&1; then
  start_server "$work/restore-make.log" --demo-entities "$restore_size" --state-dir "$dir" --checkpoint-seconds 0
  sleep 3
  stop_server
fi
echo "   $build/bin/ecsnet-server --demo-entities $restore_size --state-dir DIR (its newest checkpoint: $(stat -c %s "$(ls "$dir"/checkpoint-*.ckpt | tail -n 1)") bytes)"
started=$(date +%s.%N)
start_server "$work/restore.log" --demo-entities "$restore_size" --state-dir "$dir" --checkpoint-seconds 0
listening=$(date +%s.%N)
line=$(grep -o 'restored checkpoint tick.*' "$work/restore.log" | head -n 1 || true)
echo "   ${line:-no 'restored checkpoint' line: see $work/restore.log (--keep)}"
awk -v a="$started" -v b="$listening" 'BEGIN { printf "   process start to listening: %.2f s\n", b - a }'
entities=$(curl -sf "http://127.0.0.1:$admin/status" | jq -r '.entities // "?"')
echo "   entities after restore (/status): $entities"
stop_server

# ---- 3. journal --------------------------------------------------------------------------------
for rate in $rates; do
  echo
  echo "== journal: $rate commands/s ($clients clients, SetComponent health), $load_seconds s, $load_entities demo entities"
  for mode in none journal; do
    flags=(--state-dir "$work/journal-$rate-$mode" --checkpoint-seconds 0 --demo-entities "$load_entities"
           --command-rate 1000000 --command-burst 1000000 --stats-interval-s 1)
    [ "$mode" = journal ] && flags+=(--journal)
    log="$work/journal-$rate-$mode.log"
    start_server "$log" "${flags[@]}"
    # The journal's figures are the window's: scraped once the load's spawns are answered
    # (durable) and again when its last command is, the difference taken.
    "${pin_load[@]}" "$build/bin/persistence-load" --port "$port" --clients "$clients" --rate "$rate" \
      --seconds "$load_seconds" --ready-pause 2 > "$work/load-$rate-$mode.json" 2> "$work/load-$rate-$mode.err" &
    load_pid=$!
    for _ in $(seq 1 600); do
      grep -q '^ready$' "$work/load-$rate-$mode.err" && break
      kill -0 "$load_pid" 2>/dev/null || break
      sleep 0.1
    done
    grep -q '^ready$' "$work/load-$rate-$mode.err" || { cat "$work/load-$rate-$mode.err" >&2; echo "measure: the load never got ready" >&2; exit 1; }
    metrics > "$work/journal-$rate-$mode.metrics-before"
    wait "$load_pid" || { cat "$work/load-$rate-$mode.err" >&2; echo "measure: the load failed" >&2; exit 1; }
    load_pid=
    curl -sf "http://127.0.0.1:$admin/status" > "$work/journal-$rate-$mode.status"
    metrics > "$work/journal-$rate-$mode.metrics"
    stop_server
    m="$work/journal-$rate-$mode.metrics"
    m0="$work/journal-$rate-$mode.metrics-before"
    jq -r --arg mode "$mode" '"   \($mode | if . == "journal" then "--journal" else "no journal" end): \(.rate | round) commands/s sent, CommandResult after p50 \(.ack_ms.p50 * 100 | round / 100) ms p99 \(.ack_ms.p99 * 100 | round / 100) ms max \(.ack_ms.max * 100 | round / 100) ms"' \
      "$work/load-$rate-$mode.json"
    jq -e --argjson r "$rate" '.rate >= 0.9 * $r' "$work/load-$rate-$mode.json" >/dev/null \
      || echo "     WARNING: the load reached less than 90% of $rate commands/s: this line does not measure that rate"
    jq -r '"     ticks (last \(.tick_ms.window_ticks), /status): p50 \(.tick_ms.p50 * 1000 | round / 1000) ms p99 \(.tick_ms.p99 * 1000 | round / 1000) ms max \(.tick_ms.max * 1000 | round / 1000) ms"' \
      "$work/journal-$rate-$mode.status"
    if [ "$mode" = journal ]; then
      diff_of() { awk -v a="$(metric_value "$m0" "$1")" -v b="$(metric_value "$m" "$1")" 'BEGIN { printf "%.9f", b - a }'; }
      count=$(diff_of ecsnet_journal_commit_seconds_count)
      sum=$(diff_of ecsnet_journal_commit_seconds_sum)
      bytes=$(diff_of ecsnet_journal_bytes_total)
      sent=$(jq -r .sent "$work/load-$rate-$mode.json")
      elapsed=$(jq -r '.sent / .rate' "$work/load-$rate-$mode.json")
      awk -v c="$count" -v s="$sum" -v b="$bytes" -v n="$sent" -v t="$elapsed" -v hz="$tick_rate" 'BEGIN {
        printf "     journal, the window only (%.1f s, %d commands): %d batches (at most %d ticks fit), commit (write + fdatasync) mean %.3f ms, %.1f bytes per command\n",
               t, n, c, t * hz + 1, c ? s / c * 1000 : 0, n ? b / n : 0 }'
      echo "     commit by bucket (the server's life, spawns included): p50 $(bucket_quantile "$m" ecsnet_journal_commit_seconds 0.5) ms, p99 $(bucket_quantile "$m" ecsnet_journal_commit_seconds 0.99) ms"
    fi
  done
done
