#!/usr/bin/env bash
# Builds __NAME__ (build/), bundles its web page (web/dist, when node and npm are installed),
# starts __NAME__-server on 127.0.0.1 (ECSNET_BIND; game port 7777, browsers on ws://127.0.0.1:7779 and the
# page at http://127.0.0.1:7779/) and runs the headless client against it for a few seconds.
# The server keeps running until Ctrl-C.  Usage: ./run.sh [server flags, e.g. --port 7800]
set -euo pipefail
cd "$(dirname "$0")"

for tool in cmake c++ flatc pkg-config; do
  command -v "$tool" > /dev/null ||
    { echo "run.sh: $tool not found: install ecsnet-dev (apt-get install ./ecsnet-dev_*.deb)" >&2; exit 1; }
done
generator=()
command -v ninja > /dev/null && generator=(-G Ninja)
[ -f build/CMakeCache.txt ] || cmake -S . -B build "${generator[@]}" -DCMAKE_BUILD_TYPE=Release
cmake --build build

web_root=()
if command -v npm > /dev/null; then
  if (cd web && { [ -d node_modules ] || npm install --no-audit --no-fund; } && npm run build); then
    web_root=(--web-root web/dist)
  else
    echo "run.sh: the web page was not built (above): the game runs without it"
  fi
else
  echo "run.sh: npm not found (apt-get install nodejs npm): no web page"
fi

port=7777
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = --port ] && port=${args[$((i + 1))]:-$port}
done
# Loopback unless ECSNET_BIND says otherwise (a container: ECSNET_BIND=0.0.0.0); every flag
# is also an ECSNET_* variable, and a flag given here wins.
export ECSNET_BIND=${ECSNET_BIND:-127.0.0.1}
build/bin/__NAME__-server --ws-port 7779 "${web_root[@]}" "$@" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT INT TERM
for _ in $(seq 100); do  # up to 10 s for its listener
  (exec 3<> "/dev/tcp/127.0.0.1/$port") 2> /dev/null && break
  kill -0 "$server" 2> /dev/null || { echo "run.sh: __NAME__-server exited" >&2; exit 1; }
  sleep 0.1
done
build/bin/__NAME__-client --port "$port" --seconds 3
echo "__NAME__-server runs (pid $server): open http://127.0.0.1:7779/ ; Ctrl-C stops it"
wait "$server"
