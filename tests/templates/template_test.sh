#!/usr/bin/env bash
# A game from the template, as a user makes one: `cmake --install` of this build under a
# temporary prefix, `ecsnet new tagdemo` (the installed script and template) in a temporary
# directory outside the repository, configured with only -DCMAKE_PREFIX_PATH=<prefix>, built,
# its ctest run; then its server on a free port of 127.0.0.1 and its headless client for 2 s,
# which exits 0 only when its own player moved as it steered. Ends the server by pid; removes
# everything it made.
# Environment (set by tests/templates/CMakeLists.txt): ECSNET_BUILD_DIR (built), ECSNET_CXX,
# ECSNET_CXX_LAUNCHER (ccache or empty), ECSNET_GENERATOR.
set -euo pipefail
: "${ECSNET_BUILD_DIR:?set ECSNET_BUILD_DIR to a built ecsnet build directory}"
for tool in cmake ctest python3 timeout; do
  command -v "$tool" > /dev/null || { echo "template_test: $tool not found" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-template-test.XXXXXX")
server_pid=""
cleanup() {
  [ -z "$server_pid" ] || { kill "$server_pid" 2> /dev/null; wait "$server_pid" 2> /dev/null; } || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== cmake --install $ECSNET_BUILD_DIR --prefix $work/prefix"
cmake --install "$ECSNET_BUILD_DIR" --prefix "$work/prefix" > "$work/install.log"
[ -f "$work/prefix/lib/cmake/ecsnet/ecsnetConfig.cmake" ] || { cat "$work/install.log"; exit 1; }

echo "== ecsnet new tagdemo"
(cd "$work" && "$work/prefix/bin/ecsnet" new tagdemo)
project=$work/tagdemo
[ -x "$project/run.sh" ] && [ -x "$project/test.sh" ] || { echo "run.sh and test.sh are not executable" >&2; exit 1; }
# Outside the repository: nothing there can find this checkout by a relative path.
case "$project" in "$(cd "$(dirname "$0")/../.." && pwd)"/*) echo "the project is inside the repository" >&2; exit 1 ;; esac

echo "== configure against the prefix, build"
args=(-S "$project" -B "$project/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release)
[ -z "${ECSNET_GENERATOR:-}" ] || args+=(-G "$ECSNET_GENERATOR")
[ -z "${ECSNET_CXX:-}" ] || args+=(-DCMAKE_CXX_COMPILER="$ECSNET_CXX")
[ -z "${ECSNET_CXX_LAUNCHER:-}" ] || args+=(-DCMAKE_CXX_COMPILER_LAUNCHER="$ECSNET_CXX_LAUNCHER")
cmake "${args[@]}" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
grep -E 'Found|ecsnet' "$work/configure.log" || true
cmake --build "$project/build"

echo "== the game's tests"
ctest --test-dir "$project/build" --output-on-failure

echo "== tagdemo-server and tagdemo-client"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$project/build/bin/tagdemo-server" --bind 127.0.0.1 --port "$port" --admin-port 0 \
  > "$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do  # up to 10 s for the listener
  grep -q "listening on 127.0.0.1:$port" "$work/server.log" && break
  kill -0 "$server_pid" 2> /dev/null || { cat "$work/server.log"; echo "the server exited" >&2; exit 1; }
  sleep 0.1
done
grep -q "listening on 127.0.0.1:$port" "$work/server.log" || { cat "$work/server.log"; echo "no listener in 10 s" >&2; exit 1; }
timeout 30 "$project/build/bin/tagdemo-client" --port "$port" --seconds 2
kill "$server_pid"
wait "$server_pid" || { cat "$work/server.log"; echo "the server did not exit 0 on SIGTERM" >&2; exit 1; }
server_pid=""
echo "ok: a game made by ecsnet new builds against the installed prefix, passes its test and runs"
