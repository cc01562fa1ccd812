#!/usr/bin/env bash
# The main job on a fresh Debian 12 machine: installs missing packages, builds release, starts
# a server with moving demo entities on 127.0.0.1, runs the sample client through spawn, list,
# destroy and a few seconds of watch, then stops the server by its pid.
# Usage: scripts/demo.sh [--entities N] [--watch-seconds S]
set -euo pipefail
cd "$(dirname "$0")/.."

entities=200
watch_seconds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --entities) entities=$2; shift 2 ;;
    --watch-seconds) watch_seconds=$2; shift 2 ;;
    -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done

scripts/install-deps.sh

build=${ECSNET_BUILD_DIR:-build/release}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_BUILD_TESTS=OFF \
      -DECSNET_BUILD_BENCH=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" --target ecsnet-server ecsnet-client
server="$build/bin/ecsnet-server"
client="$build/bin/ecsnet-client"

log=$(mktemp /tmp/ecsnet-demo.XXXXXX.log)
# Entities outlive each short-lived client process, so one command can destroy what the
# previous one spawned (the server's default despawns them when their owner leaves).
"$server" --bind 127.0.0.1 --port 0 --demo-entities "$entities" \
          --keep-entities-on-disconnect 2> "$log" &
server_pid=$!
stop_server() {
  if kill -0 "$server_pid" 2> /dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid" || true
  fi
}
trap stop_server EXIT

port=""
for _ in $(seq 1 100); do
  port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log" | head -n 1)
  [ -n "$port" ] && break
  kill -0 "$server_pid" 2> /dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { echo "demo: the server did not start listening in 10 s" >&2; cat "$log" >&2; exit 1; }

run() {
  echo
  echo "\$ ecsnet-client $*"
  "$client" --port "$port" --name demo "$@"
}

echo "ecsnet demo: server pid $server_pid on 127.0.0.1:$port with $entities moving entities"
# (spawn's note that entities are despawned with their owner does not apply: see above)
spawned=$(run spawn --count 3 --x 0 --y 0 --vx 5 --vy 2 --name 'ship-{n}' 2> /dev/null)
echo "$spawned"
first=$(echo "$spawned" | sed -n 's/^spawned \([0-9]*:[0-9]*\)$/\1/p' | sed -n 1p)
second=$(echo "$spawned" | sed -n 's/^spawned \([0-9]*:[0-9]*\)$/\1/p' | sed -n 2p)
run list | { head -n 6; echo "  ..."; } || true
run list | tail -n 1
run destroy "$first"
run destroy "$first" || echo "(exit code $?, as expected: it is gone)"
index=${second%%:*}
version=${second##*:}
run destroy "$index:$((version + 1))" || echo "(exit code $?, as expected: a stale version is refused)"
run destroy 0:1 || echo "(exit code $?, as expected: demo entities belong to the server)"
run watch --seconds "$watch_seconds"

echo
echo "stopping the server (SIGTERM to pid $server_pid)"
kill -TERM "$server_pid"
status=0
wait "$server_pid" || status=$?
trap - EXIT
echo "server exited with status $status; its log:"
sed 's/^/  /' "$log"
rm -f "$log"
