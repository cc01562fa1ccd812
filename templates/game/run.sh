#!/usr/bin/env bash
# Builds __NAME__ (build/), bundles its web page (web/dist, when node and npm are installed),
# starts __NAME__-server on 127.0.0.1 (game port 7777, browsers on ws://127.0.0.1:7779 and the
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
  (cd web && { [ -d node_modules ] || npm install --no-audit --no-fund; } && npm run build)
  web_root=(--web-root web/dist)
else
  echo "run.sh: npm not found (apt-get install nodejs npm): no web page"
fi

port=7777
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [ "${args[$i]}" = --port ] && port=${args[$((i + 1))]:-$port}
done
build/bin/__NAME__-server --bind 127.0.0.1 --ws-port 7779 "${web_root[@]}" "$@" &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT INT TERM
sleep 1
build/bin/__NAME__-client --port "$port" --seconds 3
echo "__NAME__-server runs (pid $server): open http://127.0.0.1:7779/ ; Ctrl-C stops it"
wait "$server"
