#!/usr/bin/env bash
# The time from an empty directory to a running game made by `ecsnet new`, on a fresh Debian 12:
# a clean debian:bookworm container (podman) holding only ecsnet's two .deb files. In it:
# apt-get install of them (with what they depend on, and ninja, GoogleTest, node and npm),
# `ecsnet new tag`, `./run.sh` (its build, npm install of the page, the server, the C++
# client's 3 s). Then headless chromium on the host opens the page the server serves, and the
# clock stops when the page has joined and shows the player. Prints each step's time.
#
# Usage: bench/template/measure.sh [--packages DIR]
#   --packages DIR  ecsnet_*.deb and ecsnet-dev_*.deb built with the web pages, so that the -dev
#                   package holds the npm SDK the page installs (default: build/packages-web,
#                   made by `scripts/package.sh --out build/packages-web`)
# Needs docker/test-image.sh to have run once on this machine (its podman set-up and Debian base
# images under ECSNET_PODMAN_CACHE, default /var/tmp/ecsnet-podman), and `npm ci` in sdk/ts
# (playwright-core drives Debian's chromium). Removes its container at the end.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
packages=$repo/build/packages-web
while [ $# -gt 0 ]; do
  case "$1" in
    --packages) packages=${2:?--packages needs a directory}; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "measure.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done
cache=${ECSNET_PODMAN_CACHE:-/var/tmp/ecsnet-podman}
for tool in podman node python3 timeout /usr/bin/chromium; do
  command -v "$tool" > /dev/null || { echo "measure.sh: $tool not found (scripts/install-deps.sh image web)" >&2; exit 1; }
done
[ -f "$cache/containers.conf" ] || { echo "measure.sh: no podman set-up in $cache: run docker/test-image.sh once" >&2; exit 1; }
[ -d "$repo/sdk/ts/node_modules/playwright-core" ] || { echo "measure.sh: run scripts/web-deps.sh (playwright-core)" >&2; exit 1; }
packages=$(cd "$packages" && pwd)
dev=$(find "$packages" -maxdepth 1 -name 'ecsnet-dev_*.deb' | head -n 1)
[ -n "$dev" ] && [ -n "$(find "$packages" -maxdepth 1 -name 'ecsnet_*.deb')" ] ||
  { echo "measure.sh: no ecsnet_*.deb and ecsnet-dev_*.deb in $packages (scripts/package.sh)" >&2; exit 1; }
dpkg-deb -c "$dev" | grep '/usr/share/ecsnet/npm/ecsnet-client-.*\.tgz' > /dev/null ||
  { echo "measure.sh: $dev has no npm package: build it with the web pages (scripts/package.sh)" >&2; exit 1; }

export CONTAINERS_CONF=$cache/containers.conf CONTAINERS_STORAGE_CONF=$cache/storage.conf TMPDIR=$cache/tmp
name=ecsnet-template-measure-$$
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
trap 'timeout 60 podman rm -f -v -t 0 "$name" > /dev/null 2>&1 || true' EXIT
# The host's CA bundle: npm reaches the registry through this machine's TLS-intercepting proxy.
ca=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}

timeout 60 podman run -d --name "$name" --network=slirp4netns -p "127.0.0.1:$port:7779" \
  -v "$packages:/packages:ro" -v "$ca:/host-ca.crt:ro" -e NODE_EXTRA_CA_CERTS=/host-ca.crt \
  --entrypoint bash docker.io/library/debian:bookworm -c '
    set -e
    now() { date +%s.%N; }
    start=$(now)
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      /packages/ecsnet_*.deb /packages/ecsnet-dev_*.deb libgtest-dev ninja-build nodejs npm \
      ca-certificates > /tmp/apt.log
    installed=$(now)
    mkdir /work && cd /work
    ecsnet new tag > /dev/null
    cd tag
    created=$(now)
    ECSNET_BIND=0.0.0.0 ./run.sh > run.log 2>&1 &
    for _ in $(seq 6000); do grep -q "runs (pid" run.log && break; sleep 0.1; done
    grep -q "runs (pid" run.log || { cat run.log; echo FAILED; exit 1; }
    running=$(now)
    grep -E "^(joined|played)" run.log
    echo "STEPS $start $installed $created $running"
    sleep infinity' > /dev/null

deadline=$((SECONDS + 1800))
while ! grep -q '^STEPS \|^FAILED' <<< "$(podman logs "$name" 2>&1)"; do
  [ $SECONDS -lt $deadline ] || { podman logs "$name" 2>&1 | tail -n 30; echo "measure.sh: no result in 30 min" >&2; exit 1; }
  [ "$(podman inspect "$name" --format '{{.State.Running}}')" = true ] || { podman logs "$name" 2>&1 | tail -n 30; exit 1; }
  sleep 1
done
logs=$(podman logs "$name" 2>&1)
grep -q '^FAILED' <<< "$logs" && { echo "$logs" | tail -n 40; exit 1; }
read -r _ start installed created running < <(grep '^STEPS ' <<< "$logs")
grep -E '^(joined|played)' <<< "$logs" | sed 's/^/  client: /'

# The page, in headless chromium on the host, until it has joined and shows the player.
page=$(timeout 120 node -e '
  const { chromium } = require(process.argv[1]);
  (async () => {
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      await page.goto(process.argv[2]);
      await page.waitForFunction(() => /^joined: [1-9]/.test(document.getElementById("status").textContent), null, { timeout: 60000 });
      console.log(`${Date.now() / 1000} ${await page.textContent("#status")}`);
    } finally {
      await browser.close();
    }
  })().catch((e) => { console.error(e.message); process.exit(1); });' "$repo/sdk/ts/node_modules/playwright-core" "http://127.0.0.1:$port/")
read -r joined text <<< "$page"
echo "  page: $text"
awk -v s="$start" -v i="$installed" -v c="$created" -v r="$running" -v j="$joined" 'BEGIN {
  printf "%8.1f s  apt-get install of the two packages, their Depends, ninja, GoogleTest, node, npm\n", i - s
  printf "%8.1f s  ecsnet new tag\n", c - i
  printf "%8.1f s  ./run.sh: build, npm install of the page, server up, the C++ client played 3 s\n", r - c
  printf "%8.1f s  the page joined in headless chromium (host)\n", j - r
  printf "%8.1f s  in all, from an empty directory on a fresh Debian 12\n", j - s
}'
