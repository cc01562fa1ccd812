#!/usr/bin/env bash
# Builds docker/Dockerfile, unchanged, with Debian's podman (no Docker engine needed) and tests
# the image: its configuration, its filesystem (no compiler, every shared library resolves), a
# running server driven by the sample client through a published port, the health check, a
# clean SIGTERM stop, a persistent world (ECSNET_STATE_DIR on a named volume: a new container
# finds the entities with their ids and owner), and docker/compose.yaml with podman-compose.
#
# With --packages DIR (scripts/test.sh gives the Release stage's, made by scripts/package.sh):
# the Debian packages on a clean Debian 12: the runtime package installed and run; a game made
# by the -dev package's `ecsnet new`, built by its own Dockerfile (whose build stage installs
# ecsnet-dev on Debian 12, builds the game and runs its test) FROM the image built here, run,
# and joined by a client.
#
# Usage: docker/test-image.sh [--client PATH] [--packages DIR] [--keep-image] [--purge-cache]
#                             [--check-prerequisites] [--help]
#   --client PATH   ecsnet-client built on the host (default: $ECSNET_CLIENT, else
#                   build/release/bin/ecsnet-client if it exists, else the client in the image,
#                   run in a second container that reaches the server through the host)
#   --packages DIR  the ecsnet_*.deb and ecsnet-dev_*.deb to test (default: $ECSNET_PACKAGES_DIR;
#                   none: that part is skipped, and says so)
#   --keep-image    keep the tag ecsnet:test at the end (the build cache is always kept)
#   --purge-cache   delete the podman store and base images under the cache dir, then exit
#   --check-prerequisites  only check that every command this test runs is there (podman, runc,
#                   netavark and the iptables it runs, debootstrap, podman-compose, python3...):
#                   exit 1 naming each missing one and its Debian package; installs nothing
# Environment: ECSNET_PODMAN_CACHE (default /var/tmp/ecsnet-podman): private podman state,
#   configuration, base images and build cache, reused between runs; ECSNET_REFRESH_BASE=1
#   rebuilds the Debian base images; ECSNET_BUILD_TIMEOUT (s, default 3600); ECSNET_NPM_CA: the CA
#   bundle the image's npm ci trusts (default $NODE_EXTRA_CA_CERTS, else the host's
#   /etc/ssl/certs/ca-certificates.crt), passed as a build secret.
# Needs root (or sudo) for apt-get and podman. First installs what is missing
# (scripts/install-deps.sh image) and stops at once, naming command and package, if a
# prerequisite is still not found. Removes what it creates (containers, the tag,
# networks, volumes, processes, the host client's state directory) by name or pid at the
# end, also on failure. Prints the time of each step
# and the total; every wait is bounded.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${ECSNET_PODMAN_CACHE:-/var/tmp/ecsnet-podman}
image=localhost/ecsnet:test
client=${ECSNET_CLIENT:-}
packages=${ECSNET_PACKAGES_DIR:-}
keep_image=0
purge=0
check_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --client) client=$2; shift 2 ;;
    --packages) packages=$2; shift 2 ;;
    --keep-image) keep_image=1; shift ;;
    --purge-cache) purge=1; shift ;;
    --check-prerequisites) check_only=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "test-image.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
done
# Before anything else: a missing command (iptables, say, which netavark runs for every RUN
# step) would otherwise show only minutes later as an obscure error in the middle of the build.
prerequisites_missing() {
  echo "test-image.sh: prerequisites missing (above); nothing was built or started" >&2
  exit 1
}
if [ "$check_only" -eq 1 ]; then
  "$repo/scripts/install-deps.sh" --check image || prerequisites_missing
  exit 0
fi
if [ -z "$client" ] && [ -x "$repo/build/release/bin/ecsnet-client" ]; then
  client=$repo/build/release/bin/ecsnet-client
fi
runtime_deb=""
dev_deb=""
if [ -n "$packages" ]; then
  runtime_deb=$(find "$packages" -maxdepth 1 -name 'ecsnet_*.deb' | sort | tail -n 1)
  dev_deb=$(find "$packages" -maxdepth 1 -name 'ecsnet-dev_*.deb' | sort | tail -n 1)
  [ -n "$runtime_deb" ] && [ -n "$dev_deb" ] ||
    { echo "test-image.sh: $packages has no ecsnet_*.deb and ecsnet-dev_*.deb (scripts/package.sh)" >&2; exit 2; }
  packages=$(cd "$packages" && pwd)
fi
if [ -n "$client" ]; then
  [ -x "$client" ] || { echo "test-image.sh: no executable client at $client" >&2; exit 2; }
  client=$(cd "$(dirname "$client")" && pwd)/$(basename "$client")
fi
cd "$repo"

t_start=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
step_start=$t_start
step() {
  echo "== [$(elapsed "$t_start") s] $*"
  step_start=$(date +%s.%N)
}
ok() { echo "   ok: $*"; }
fail() { echo "   FAIL: $*" >&2; exit 1; }
indent() { sed 's/^/      /'; }

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo > /dev/null || { echo "test-image.sh: needs root or sudo" >&2; exit 2; }
  as_root=(sudo)
fi

# ---- 0. prerequisites: missing packages installed, then every command checked ---------------
step "prerequisites (scripts/install-deps.sh image)"
if ! timeout 1800 "${as_root[@]}" "$repo/scripts/install-deps.sh" image 2>&1 | indent; then
  prerequisites_missing
fi
ok "$(podman --version), $(runc --version | head -n 1), podman-compose $(dpkg-query -W -f='${Version}' podman-compose)"

# ---- 1. private podman state and the Debian base images -----------------------------------
# Private configuration: runc (crun fails here on hybrid cgroups), cgroupfs (no systemd),
# explicit ulimits (root lacks CAP_SYS_RESOURCE), netavark + aardvark-dns (service names
# resolve on compose networks), all state under $cache, nothing under /etc or /var/lib.
step "podman configuration and base images (cache: $cache)"
mkdir -p "$cache"/{storage,run,tmp,engine-tmp,networks,base}
if [ "$purge" -eq 1 ]; then
  [ -f "$cache/containers.conf" ] && timeout 300 "${as_root[@]}" env \
    CONTAINERS_CONF="$cache/containers.conf" CONTAINERS_STORAGE_CONF="$cache/storage.conf" \
    TMPDIR="$cache/tmp" podman system reset --force > /dev/null 2>&1 || true
  "${as_root[@]}" rm -rf "$cache"
  echo "test-image.sh: removed $cache"
  exit 0
fi
exec 9> "$cache/lock"
flock -w 1800 9 || fail "another test-image.sh holds $cache/lock (waited 30 min)"

hard_nofile=$(ulimit -Hn)
[ "$hard_nofile" = unlimited ] && hard_nofile=1048576
nofile=$(( hard_nofile < 65536 ? hard_nofile : 65536 ))
cat > "$cache/containers.conf" << EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=32768:32768"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$cache/events.log"
tmp_dir = "$cache/engine-tmp"

[network]
network_backend = "netavark"
network_config_dir = "$cache/networks"
EOF
cat > "$cache/storage.conf" << EOF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/run"
EOF
export CONTAINERS_CONF=$cache/containers.conf
export CONTAINERS_STORAGE_CONF=$cache/storage.conf
export TMPDIR=$cache/tmp
export BUILDAH_FORMAT=docker  # keeps HEALTHCHECK (OCI image configs have none)
penv=(CONTAINERS_CONF="$CONTAINERS_CONF" CONTAINERS_STORAGE_CONF="$CONTAINERS_STORAGE_CONF"
      TMPDIR="$TMPDIR" BUILDAH_FORMAT=docker)
# podman with a time limit: pm ARGS (120 s), pmt SECONDS ARGS; pc: podman-compose (180 s)
pmt() { local t=$1; shift; timeout "$t" "${as_root[@]}" env "${penv[@]}" podman "$@"; }
pm() { pmt 120 "$@"; }
pc() { timeout 180 "${as_root[@]}" env "${penv[@]}" "${compose_env[@]}" podman-compose "$@"; }
compose_env=()

# Base images for the unmodified FROM lines: a minbase debootstrap of bookworm (from the mirror
# this machine's apt uses) as docker.io/library/debian:bookworm, and the same trimmed like the
# official slim variant (no docs, man pages, locales) as docker.io/library/debian:bookworm-slim.
# Both carry CMD ["bash"], like the official images.
make_base_tarballs() {
  local mirror rootfs
  mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' \
             /etc/apt/sources.list.d/debian.sources 2> /dev/null | awk '!/security/ && !found { print; found = 1 }')
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' \
                                 /etc/apt/sources.list 2> /dev/null)
  [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  rootfs=$cache/base/rootfs
  "${as_root[@]}" rm -rf "$rootfs"
  echo "   debootstrap --variant=minbase bookworm from $mirror"
  timeout 1200 "${as_root[@]}" debootstrap --variant=minbase bookworm "$rootfs" "$mirror" \
    > "$cache/base/debootstrap.log" 2>&1 || { tail -n 20 "$cache/base/debootstrap.log" >&2; fail "debootstrap"; }
  "${as_root[@]}" sh -c "
    set -e
    rm -f '$rootfs/etc/apt/sources.list'
    cat > '$rootfs/etc/apt/sources.list.d/debian.sources' << 'SOURCES'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    # apt settings of the official images (debuerreotype): no package caches left behind
    cat > '$rootfs/etc/apt/apt.conf.d/docker-clean' << 'APT'
DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };
APT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };
Dir::Cache::pkgcache \"\";
Dir::Cache::srcpkgcache \"\";
APT
    echo 'Acquire::Languages \"none\";' > '$rootfs/etc/apt/apt.conf.d/docker-no-languages'
    echo 'Acquire::GzipIndexes \"true\";' > '$rootfs/etc/apt/apt.conf.d/docker-gzip-indexes'
    echo 'Apt::AutoRemove::SuggestsImportant \"false\";' > '$rootfs/etc/apt/apt.conf.d/docker-autoremove-suggests'
    rm -rf '$rootfs'/var/cache/apt/*.bin '$rootfs'/var/cache/apt/archives/*.deb \
           '$rootfs'/var/lib/apt/lists/* '$rootfs'/var/log/*.log '$rootfs'/dev/* '$rootfs'/tmp/*
    tar --numeric-owner -C '$rootfs' -cf '$cache/base/bookworm.tar.tmp' .
    mv '$cache/base/bookworm.tar.tmp' '$cache/base/bookworm.tar'
    cat > '$rootfs/etc/dpkg/dpkg.cfg.d/docker' << 'DPKG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
DPKG
    find '$rootfs/usr/share/doc' -mindepth 1 -not -name copyright -not -type d -delete
    rm -rf '$rootfs'/usr/share/man/* '$rootfs'/usr/share/info/* '$rootfs'/usr/share/locale/*
    tar --numeric-owner -C '$rootfs' -cf '$cache/base/bookworm-slim.tar.tmp' .
    mv '$cache/base/bookworm-slim.tar.tmp' '$cache/base/bookworm-slim.tar'
    rm -rf '$rootfs'
  "
}
base_ready() {
  pm image exists docker.io/library/debian:bookworm \
    && pm image exists docker.io/library/debian:bookworm-slim
}
if [ "${ECSNET_REFRESH_BASE:-0}" = 1 ]; then
  "${as_root[@]}" rm -f "$cache/base/bookworm.tar" "$cache/base/bookworm-slim.tar"
  pm rmi -f docker.io/library/debian:bookworm docker.io/library/debian:bookworm-slim \
    localhost/debian:bookworm localhost/debian:bookworm-slim > /dev/null 2>&1 || true
fi
if base_ready; then
  ok "base images cached: $(pm images --format '{{.Repository}}:{{.Tag}} {{.Size}}' \
        --filter reference='docker.io/library/debian' | tr '\n' ' ')"
else
  if [ ! -s "$cache/base/bookworm.tar" ] || [ ! -s "$cache/base/bookworm-slim.tar" ]; then
    make_base_tarballs
  fi
  for variant in bookworm bookworm-slim; do
    pm import -q --change 'CMD ["bash"]' "$cache/base/$variant.tar" \
      "localhost/debian:$variant" > /dev/null
    pm tag "localhost/debian:$variant" "docker.io/library/debian:$variant"
  done
  base_ready || fail "base images missing after import"
  ok "base images imported ($(elapsed "$step_start") s)"
fi

# ---- cleanup of everything the run creates, by name / pid --------------------------------
run_id=ecsnet-test-$$
game_image=localhost/ecsnet-game:test  # the template's game (6.), built FROM $image
server_name=$run_id-server
check_name=$run_id-check
project=ecsnet-test-$$
# The client's identity (resume keys) between runs: a volume for the image's client, a
# directory of this run for the host's (never the real ~/.local/state).
client_volume=$run_id-client-state
compose_volume=${project}_client-state
state_volume=$run_id-state   # the persistent world's state dir (/var/lib/ecsnet)
state_name=$run_id-state     # its two containers: $state_name-1, then $state_name-2
client_state=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-test-client-state.XXXXXX")
pids=()
cleanup() {
  local rc=$?
  set +e
  for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null; done
  # -v: also the anonymous volume the image's VOLUME /var/lib/ecsnet gives each container
  for name in "$server_name" "$check_name" "$run_id-port" "$run_id-client1" "$run_id-client2" \
              "$state_name-1" "$state_name-2" "$run_id-deb" "$run_id-game" "$run_id-new" \
              "${project}_client_run1" "${project}_client_run2" "${project}_client_run3"; do
    pm container exists "$name" 2> /dev/null && pm rm -f -v -t 0 "$name" > /dev/null 2>&1
  done
  local names
  names=$(pm ps -a --filter "label=io.podman.compose.project=$project" \
            --format '{{.Names}}' 2> /dev/null)
  for name in $names; do pm rm -f -v -t 0 "$name" > /dev/null 2>&1; done
  pm network exists "${project}_default" 2> /dev/null \
    && pm network rm -f "${project}_default" > /dev/null 2>&1
  for name in "$client_volume" "$compose_volume" "$state_volume" ${compose_anonymous-}; do
    pm volume exists "$name" 2> /dev/null && pm volume rm -f "$name" > /dev/null 2>&1
  done
  if [ -n "${volumes_before+set}" ]; then  # anything else this run created (we hold the store's lock)
    for name in $(new_volumes 2> /dev/null); do pm volume rm -f "$name" > /dev/null 2>&1; done
  fi
  rm -rf "$client_state"
  [ -z "${game_work:-}" ] || rm -rf "$game_work"
  for name in "$game_image" "$game_image-build"; do
    pm image exists "$name" 2> /dev/null && pm untag "$name" > /dev/null 2>&1
  done
  if [ "$keep_image" -eq 0 ]; then
    # Only the tag goes: its layers stay as the build cache of the next run.
    pm image exists "$image" 2> /dev/null && pm untag "$image" > /dev/null 2>&1
  fi
  echo "== cleanup done"
  echo "== total $(elapsed "$t_start") s, exit $rc"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# Volumes that exist now: every one this run creates must be gone at the end (the image's VOLUME
# gives each container an anonymous one, which `rm` without -v leaves behind).
volumes_before=$(pm volume ls -q | sort)
new_volumes() { comm -13 <(printf '%s\n' "$volumes_before") <(pm volume ls -q | sort); }

# ---- 2. build the real Dockerfile -----------------------------------------------------------
step "podman build --pull=never --format docker -f docker/Dockerfile -t $image ."
build_log=$cache/build.log
# The web stage runs npm ci: behind a TLS-intercepting proxy (these machines) the registry's
# certificate is signed by a CA the host trusts and the build container does not. The host's CA
# bundle goes in as a build secret (never a layer); NODE_EXTRA_CA_CERTS adds it to node's.
ca_secret=()
npm_ca=${ECSNET_NPM_CA:-${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}}
[ -s "$npm_ca" ] && ca_secret=(--secret "id=npm_ca,src=$npm_ca")
# ECSNET_IMAGE_CCACHE_DIR (scripts/test.sh sets it to the host's ccache directory): the build
# stage compiles through it (docker/Dockerfile), reusing the Release stage's objects.
# ECSNET_IMAGE_BUILD_DIR names that stage's build directory (relative to the repository): the
# image builds at the same paths, which ccache's hashes include.
ccache_volume=()
if [ -n "${ECSNET_IMAGE_CCACHE_DIR:-}" ]; then
  [ -d "$ECSNET_IMAGE_CCACHE_DIR" ] || fail "ECSNET_IMAGE_CCACHE_DIR=$ECSNET_IMAGE_CCACHE_DIR is not a directory"
  ccache_volume=(--volume "$ECSNET_IMAGE_CCACHE_DIR:/ccache" --build-arg ECSNET_CCACHE=1
                 --build-arg "ECSNET_SRC_DIR=$repo"
                 --build-arg "ECSNET_BUILD_DIR=${ECSNET_IMAGE_BUILD_DIR:-build/release}")
fi
# --jobs 2: the web stage (downloads, npm) runs beside the C++ build stage.
if ! pmt "${ECSNET_BUILD_TIMEOUT:-3600}" build --pull=never --format docker --jobs 2 "${ca_secret[@]}" \
       ${ccache_volume[@]+"${ccache_volume[@]}"} \
       -f docker/Dockerfile -t "$image" . > "$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  fail "podman build (log: $build_log)"
fi
cached=$(grep -c -- '--> Using cache' "$build_log" || true)
versions=$(grep -E '^ecsnet-(server|client) ' "$build_log" | paste -sd ' ' || true)
compiled=$(grep -E '^ccache: ' "$build_log" | tail -n 1 || true)
ok "built in $(elapsed "$step_start") s ($cached cached steps)${versions:+; $versions}${compiled:+; $compiled}"
size=$(pm image inspect "$image" --format '{{.Size}}')
ok "image size $(awk -v s="$size" 'BEGIN { printf "%.1f MB", s / 1e6 }')"

# ---- 3. image configuration and filesystem -------------------------------------------------
step "image configuration (podman image inspect)"
pm image inspect "$image" > "$cache/inspect.json"
python3 - "$cache/inspect.json" << 'EOF'
import json, re, sys
img = json.load(open(sys.argv[1]))[0]
c = img["Config"]
def check(cond, what, got):
    print(("   ok: " if cond else "   FAIL: ") + what + ": " + json.dumps(got))
    if not cond:
        sys.exit(1)
user = c.get("User", "")
check(re.fullmatch(r"[0-9]+(:[0-9]+)?", user) is not None and int(user.split(":")[0]) != 0
      and (":" not in user or int(user.split(":")[1]) != 0), "numeric non-root user", user)
check(c.get("Entrypoint") == ["/usr/local/bin/ecsnet-server"], "JSON-form entrypoint", c.get("Entrypoint"))
check(not c.get("Cmd"), "CMD empty (no inherited [\"bash\"]; defaults come from ENV)", c.get("Cmd"))
hc = c.get("Healthcheck") or img.get("HealthCheck") or img.get("Healthcheck") or {}
check(hc.get("Test", [])[:1] == ["CMD"] and "--healthcheck" in hc.get("Test", []), "healthcheck", hc)
check("7777/tcp" in (c.get("ExposedPorts") or {}) and "7779/tcp" in (c.get("ExposedPorts") or {}),
      "exposed ports (TCP 7777, WebSocket 7779)", list((c.get("ExposedPorts") or {}).keys()))
check(c.get("StopSignal") in ("SIGTERM", "15"), "stop signal", c.get("StopSignal"))
check("/var/lib/ecsnet" in (c.get("Volumes") or {}), "VOLUME /var/lib/ecsnet (the state dir)",
      list((c.get("Volumes") or {}).keys()))
env = dict(e.split("=", 1) for e in c.get("Env", []))
check(env.get("ECSNET_PORT") == "7777" and env.get("ECSNET_BIND") == "0.0.0.0"
      and env.get("ECSNET_WS_PORT") == "7779"
      and env.get("ECSNET_ADMIN_PORT") == "7778" and env.get("ECSNET_ADMIN_BIND") == "127.0.0.1",
      "ENV defaults",
      {k: v for k, v in env.items() if k.startswith("ECSNET_")})
EOF

step "image filesystem (a container of the image, no network)"
fs_out=$(pm run --rm --name "$check_name" --network=none --no-healthcheck --entrypoint /bin/sh "$image" -c '
  echo "id: $(id -u):$(id -g) $(id -un)"
  for c in gcc g++ cc c++ cpp clang clang++ ld as make cmake ninja; do
    p=$(command -v "$c") && echo "compiler: $c at $p"
  done
  find / -xdev \( -name "cc1*" -o -name "collect2" -o -name "*-linux-gnu-gcc*" \) -print 2> /dev/null \
    | sed "s/^/compiler: /"
  ldd /usr/local/bin/ecsnet-server /usr/local/bin/ecsnet-client
  /usr/local/bin/ecsnet-server --version
  /usr/local/bin/ecsnet-client --version
  start=$(date +%s%N)
  /usr/local/bin/ecsnet-server --healthcheck > /dev/null 2>&1
  echo "healthcheck without a server: exit $? after $(( ($(date +%s%N) - start) / 1000000 )) ms"
  test -w /usr/local/bin/ecsnet-server && echo "writable: ecsnet-server"
  echo "client state: $(stat -c "%u:%g %a" /var/lib/ecsnet-client) XDG_STATE_HOME=$XDG_STATE_HOME"
  echo "server state: $(stat -c "%u:%g %a" /var/lib/ecsnet)"
  echo "packages: $(dpkg-query -W | wc -l)"
  for page in inspector arena; do
    test -s /usr/local/share/ecsnet/web/$page/index.html && echo "web page: $page"
  done
  echo "done"
' 2>&1) || { echo "$fs_out" | indent; fail "the check container failed"; }
echo "$fs_out" | indent
grep -qx 'id: 10001:10001 ecsnet' <<< "$fs_out" || fail "the image does not run as 10001:10001"
if grep -q '^compiler: ' <<< "$fs_out"; then fail "a compiler is in the runtime image"; fi
ok "no compiler (gcc g++ cc c++ cpp clang ld as make cmake ninja, cc1*, collect2)"
if grep -q 'not found' <<< "$fs_out"; then fail "unresolved shared libraries"; fi
ok "every shared library of both binaries resolves ($(grep -c '=>' <<< "$fs_out") ldd lines)"
if grep -q '^writable: ' <<< "$fs_out"; then fail "the binaries are writable by the runtime user"; fi
grep -q '^ecsnet-server ' <<< "$fs_out" && grep -q '^ecsnet-client ' <<< "$fs_out" \
  || fail "--version of a binary"
ok "both binaries run in the image; not writable by the runtime user"
grep -qx 'client state: 10001:10001 700 XDG_STATE_HOME=/var/lib/ecsnet-client' <<< "$fs_out" \
  || fail "the client's state directory must be /var/lib/ecsnet-client, 10001:10001, 0700"
ok "the client's state directory /var/lib/ecsnet-client is 10001:10001 0700 (XDG_STATE_HOME)"
grep -qx 'server state: 10001:10001 700' <<< "$fs_out" \
  || fail "the server's state directory /var/lib/ecsnet must be 10001:10001, 0700"
ok "the server's state directory /var/lib/ecsnet is 10001:10001 0700"
grep -Eq '^healthcheck without a server: exit 1 after [0-9]{1,4} ms$' <<< "$fs_out" \
  && [ "$(sed -n 's/^healthcheck without a server: exit 1 after \([0-9]*\) ms$/\1/p' <<< "$fs_out")" -lt 3000 ] \
  || fail "the health check must report unhealthy (exit 1) within 2 s when no server answers"
ok "with no server, the health check exits 1 within 2 s"
grep -qx 'web page: inspector' <<< "$fs_out" && grep -qx 'web page: arena' <<< "$fs_out" \
  || fail "the web pages (/usr/local/share/ecsnet/web/inspector and arena) are not in the image"
ok "the inspector's and the arena's pages are in /usr/local/share/ecsnet/web"

# ---- 4. the server in a container, the client from the host --------------------------------
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_healthy() {  # NAME SECONDS: podman healthcheck run until healthy (no systemd timer here)
  local deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    pm healthcheck run "$1" > /dev/null 2>&1 && return 0
    [ "$(pm inspect "$1" --format '{{.State.Running}}' 2> /dev/null)" = true ] || return 1
    sleep 0.5
  done
  return 1
}
port=$(free_port)
ws_port=$(free_port)
step "podman run -d --network=slirp4netns -p 127.0.0.1:$port:7777 -p 127.0.0.1:$ws_port:7779 $image (config by ECSNET_* env)"
pm run -d --name "$server_name" --network=slirp4netns -p "127.0.0.1:$port:7777" \
  -p "127.0.0.1:$ws_port:7779" \
  -e ECSNET_DEMO_ENTITIES=20 -e ECSNET_TICK_RATE=20 -e ECSNET_KEEP_ENTITIES_ON_DISCONNECT=true \
  "$image" > /dev/null 2> "$cache/podman-run.log" \
  || { indent < "$cache/podman-run.log"; fail "podman run"; }
wait_healthy "$server_name" 30 || { pm logs "$server_name" 2>&1 | indent; fail "not healthy within 30 s"; }
ok "healthy after $(elapsed "$step_start") s"
logs=$(pm logs "$server_name" 2>&1)
head -n 2 <<< "$logs" | indent
grep -q 'tick_rate=20 .*demo_entities=20 .*on_disconnect=keep' <<< "$logs" \
  || fail "the ECSNET_* environment did not reach the server"
grep -q 'listening on 0.0.0.0:7777' <<< "$logs" || fail "not listening on 0.0.0.0:7777"
grep -q 'WebSocket listening on 0.0.0.0:7779' <<< "$logs" || fail "no WebSocket listener on 0.0.0.0:7779"
ok "configuration from the environment: tick_rate=20 demo_entities=20 on_disconnect=keep"
pid=$(pm inspect "$server_name" --format '{{.State.Pid}}')
pid1=$("${as_root[@]}" cat "/proc/$pid/comm")
uid1=$("${as_root[@]}" awk '/^Uid:/ { print $2 }' "/proc/$pid/status")
[ "$pid1" = ecsnet-server ] && [ "$uid1" = 10001 ] || fail "PID 1 of the container is $pid1 (uid $uid1)"
ok "PID 1 in the container is ecsnet-server, uid 10001 (host pid $pid)"

step "ECSNET_PORT=7878 ECSNET_ADMIN_PORT=7879: the server and the image's health check follow them"
pm run -d --name "$run_id-port" --network=none -e ECSNET_PORT=7878 -e ECSNET_ADMIN_PORT=7879 \
  "$image" > /dev/null 2>> "$cache/podman-run.log"
wait_healthy "$run_id-port" 30 || { pm logs "$run_id-port" 2>&1 | indent; fail "not healthy with admin port 7879"; }
port_logs=$(pm logs "$run_id-port" 2>&1)
grep -q 'listening on 0.0.0.0:7878' <<< "$port_logs" || fail "not listening on 7878"
grep -q 'admin endpoint on http://127.0.0.1:7879' <<< "$port_logs" || fail "no admin endpoint on 7879"
grep -q 'web inspector on http://127.0.0.1:7879/inspector/ (files from /usr/local/share/ecsnet/web/inspector)' \
  <<< "$port_logs" || { echo "$port_logs" | indent; fail "the inspector is not served from the image's files"; }
pm rm -f -v -t 10 "$run_id-port" > /dev/null 2>> "$cache/podman-run.log"
ok "listening on 0.0.0.0:7878, admin endpoint on 127.0.0.1:7879 with the inspector, healthy"

client_port=$port     # the server ecsnet_client talks to, and as whom (its resume key's name)
client_name=image-test
if [ -n "$client" ]; then
  step "the host's client ($client) through 127.0.0.1:$port"
  ecsnet_client() {
    XDG_STATE_HOME=$client_state timeout 30 "$client" --host 127.0.0.1 --port "$client_port" \
      --name "$client_name" "$@"
  }
else
  # No client on the host: the image's client in a second container, which reaches the
  # published port through slirp4netns' gateway to the host's loopback (10.0.2.2). Its
  # identity lives in a volume, so each run is the same owner.
  step "no host client: the image's client in a container, through the host's 127.0.0.1:$port"
  client_runs=0
  ecsnet_client() {
    client_runs=$((client_runs + 1))
    pmt 60 run --rm --name "$run_id-client$(( (client_runs % 2) + 1 ))" --no-healthcheck \
      --network=slirp4netns:allow_host_loopback=true --entrypoint /usr/local/bin/ecsnet-client \
      -v "$client_volume:/var/lib/ecsnet-client" \
      "$image" --host 10.0.2.2 --port "$client_port" --name "$client_name" "$@"
  }
fi
spawned=$(ecsnet_client spawn --count 5 --x 1 --y 2 --name 'docker {n}' 2>&1) || { echo "$spawned" | indent; fail "spawn"; }
echo "$spawned" | indent
mapfile -t ids < <(echo "$spawned" | sed -n 's/^spawned \([0-9]*:[0-9]*\).*/\1/p')
[ "${#ids[@]}" -eq 5 ] || fail "spawn --count 5 printed ${#ids[@]} entities"
ok "spawned ${ids[*]}"
listed=$(ecsnet_client list) || { echo "$listed" | indent; fail "list"; }
head -n 3 <<< "$listed" | indent
echo "$listed" | tail -n 1 | indent
for id in "${ids[@]}"; do
  grep -Eq "(^|[^0-9:])$id([^0-9:]|$)" <<< "$listed" || fail "list does not show $id"
done
ok "list shows the 5 spawned entities (and the demo entities)"
out=$(ecsnet_client destroy "${ids[0]}") || { echo "$out" | indent; fail "destroy ${ids[0]}"; }
echo "$out" | indent
set +e
out=$(ecsnet_client destroy "${ids[0]}" 2>&1); rc=$?
set -e
echo "$out" | indent
[ "$rc" -eq 1 ] || fail "destroying ${ids[0]} twice exited $rc, not 1"
listed=$(ecsnet_client list) || fail "list"
if grep -Eq "(^|[^0-9:])${ids[0]}([^0-9:]|$)" <<< "$listed"; then fail "${ids[0]} still listed"; fi
grep -Eq "(^|[^0-9:])${ids[1]}([^0-9:]|$)" <<< "$listed" || fail "${ids[1]} no longer listed"
ok "destroyed ${ids[0]}; the stale handle is refused (exit 1); list no longer shows it"

step "the same world over WebSocket (ws://127.0.0.1:$ws_port, the image's 7779)"
if [ -n "$client" ]; then
  ws_listed=$(XDG_STATE_HOME=$client_state timeout 30 "$client" --host 127.0.0.1 \
    --port "$ws_port" --ws --name image-test list 2>&1) || { echo "$ws_listed" | indent; fail "list over WebSocket"; }
else
  ws_listed=$(pmt 60 run --rm --name "$run_id-wsclient" --no-healthcheck \
    --network=slirp4netns:allow_host_loopback=true --entrypoint /usr/local/bin/ecsnet-client \
    -v "$client_volume:/var/lib/ecsnet-client" \
    "$image" --host 10.0.2.2 --port "$ws_port" --ws --name image-test list 2>&1) \
    || { echo "$ws_listed" | indent; fail "list over WebSocket"; }
fi
echo "$ws_listed" | tail -n 1 | indent
grep -Eq "(^|[^0-9:])${ids[1]}([^0-9:]|$)" <<< "$ws_listed" || fail "list over WebSocket does not show ${ids[1]}"
ok "list over WebSocket shows ${ids[1]}, spawned over TCP"

step "podman healthcheck run $server_name"
hc=$(pm healthcheck run "$server_name" 2>&1) || { echo "$hc" | indent; fail "unhealthy"; }
status=$(pm inspect "$server_name" --format '{{.State.Healthcheck.Status}}' 2> /dev/null || true)
ok "exit 0${hc:+ ($hc)}, .State.Healthcheck.Status ${status:-?}"

step "podman stop -t 10 $server_name (SIGTERM to PID 1)"
if [ -n "$client" ]; then  # a connected watcher: the server must say goodbye, not hang on it
  XDG_STATE_HOME=$client_state timeout 60 "$client" --host 127.0.0.1 --port "$port" \
    watch --seconds 30 > "$cache/watch.log" 2>&1 &
  pids+=($!)
  sleep 1
fi
t_stop=$(date +%s.%N)
pm stop -t 10 "$server_name" > /dev/null 2>> "$cache/podman-run.log"
stop_s=$(elapsed "$t_stop")
code=$(pm inspect "$server_name" --format '{{.State.ExitCode}}')
pm logs "$server_name" 2>&1 | tail -n 3 | indent
[ "$code" = 0 ] || fail "exit code $code"
awk -v s="$stop_s" 'BEGIN { exit !(s < 10) }' || fail "took $stop_s s: killed after the grace period?"
logs=$(pm logs "$server_name" 2>&1)
grep -q 'received SIGTERM' <<< "$logs" || fail "no 'received SIGTERM' in the log"
ok "exit code 0 after $stop_s s (grace period 10 s)"
if [ -n "$client" ]; then
  wait "${pids[0]}" || true
  pids=()
  tail -n 2 "$cache/watch.log" | indent
fi
pm rm -v "$server_name" > /dev/null 2>> "$cache/podman-run.log"

# ---- 4b. a persistent world: the state dir on a named volume outlives its container -----------
# ECSNET_STATE_DIR=/var/lib/ecsnet (the image's, owned by 10001) on a named volume, with the
# journal: what a client spawned and destroyed is in a new container on the same volume after a
# graceful stop (SIGTERM: a last checkpoint), with the same ids, the same owner (the client's
# resume key) and no second set of demo entities; inspect-state reads the checkpoint.
state_port=$(free_port)
state_server() {  # NAME: a server on $state_volume, published on 127.0.0.1:$state_port
  pm run -d --name "$1" --network=slirp4netns -p "127.0.0.1:$state_port:7777" \
    -v "$state_volume:/var/lib/ecsnet" -e ECSNET_STATE_DIR=/var/lib/ecsnet -e ECSNET_JOURNAL=true \
    -e ECSNET_DEMO_ENTITIES=3 -e ECSNET_TICK_RATE=20 -e ECSNET_KEEP_ENTITIES_ON_DISCONNECT=true \
    "$image" > /dev/null 2>> "$cache/podman-run.log" \
    || { tail -n 5 "$cache/podman-run.log" | indent; fail "podman run $1"; }
  wait_healthy "$1" 30 || { pm logs "$1" 2>&1 | indent; fail "$1 not healthy within 30 s"; }
}
stop_state_server() {  # NAME: SIGTERM, exit 0, its log in $state_log; rm -v keeps the named volume
  pm stop -t 10 "$1" > /dev/null 2>> "$cache/podman-run.log"
  local code
  code=$(pm inspect "$1" --format '{{.State.ExitCode}}')
  state_log=$(pm logs "$1" 2>&1)
  [ "$code" = 0 ] || { tail -n 5 <<< "$state_log" | indent; fail "$1 exited $code on SIGTERM"; }
  pm rm -v "$1" > /dev/null 2>> "$cache/podman-run.log"
}
step "a persistent world: ECSNET_STATE_DIR=/var/lib/ecsnet on volume $state_volume, ECSNET_JOURNAL=true"
state_server "$state_name-1"
client_port=$state_port
client_name=state-test
out=$(ecsnet_client spawn --count 3 --x 5 --y 6 --name 'kept {n}' 2>&1) || { echo "$out" | indent; fail "spawn"; }
mapfile -t kept < <(sed -n 's/^spawned \([0-9]*:[0-9]*\).*/\1/p' <<< "$out")
[ "${#kept[@]}" -eq 3 ] || { echo "$out" | indent; fail "spawn --count 3 printed ${#kept[@]} entities"; }
out=$(ecsnet_client destroy "${kept[0]}" 2>&1) || { echo "$out" | indent; fail "destroy ${kept[0]}"; }
stop_state_server "$state_name-1"
grep 'checkpoint tick' <<< "$state_log" | tail -n 1 | indent
final=$(sed -n 's/.*checkpoint tick \([0-9]*\): copied \([0-9]*\) entities .*/\1 \2/p' <<< "$state_log" | tail -n 1)
[ -n "$final" ] || { tail -n 8 <<< "$state_log" | indent; fail "no checkpoint written at the SIGTERM stop"; }
read -r final_tick final_alive <<< "$final"
[ "$final_alive" -eq 5 ] || fail "the last checkpoint holds $final_alive entities, not 5 (3 demo + 2 kept)"
ok "spawned ${kept[*]}, destroyed ${kept[0]}; stopped (exit 0) with a checkpoint of tick $final_tick, 5 entities"

step "a new container on $state_volume: the same world"
state_server "$state_name-2"
logs=$(pm logs "$state_name-2" 2>&1)
grep 'restored checkpoint' <<< "$logs" | indent
grep -q "restored checkpoint tick $final_tick (5 entities" <<< "$logs" \
  || { echo "$logs" | tail -n 8 | indent; fail "no 'restored checkpoint tick $final_tick (5 entities' in the log"; }
listed=$(ecsnet_client list 2>&1) || { echo "$listed" | indent; fail "list"; }
echo "$listed" | tail -n 1 | indent
for id in "${kept[1]}" "${kept[2]}"; do
  grep -Eq "(^|[^0-9:])$id([^0-9:]|$)" <<< "$listed" || fail "$id is not in the restored world"
done
if grep -Eq "(^|[^0-9:])${kept[0]}([^0-9:]|$)" <<< "$listed"; then fail "the destroyed ${kept[0]} is back"; fi
summary=$(tail -n 1 <<< "$listed")
[[ $summary =~ ^5\ entities\ at\ tick\ ([0-9]+)\;\ this\ client\ \([0-9]+\)\ owns\ 2$ ]] \
  || fail "expected 5 entities of which this client owns 2 (the demo entities spawned again? the owner lost?)"
[ "${BASH_REMATCH[1]}" -gt "$final_tick" ] || fail "the tick went back: ${BASH_REMATCH[1]} after $final_tick"
ok "${kept[1]} and ${kept[2]} kept their ids and their owner; ${kept[0]} stays destroyed; the tick continues"
inspect=$(pm exec "$state_name-2" /usr/local/bin/ecsnet-server inspect-state /var/lib/ecsnet 2>&1) \
  || { echo "$inspect" | indent; fail "podman exec ... ecsnet-server inspect-state /var/lib/ecsnet"; }
echo "$inspect" | indent
ckpt=$(printf 'checkpoint-%020d.ckpt' "$final_tick")
grep -Eq "^  $ckpt  tick $final_tick .* entities 5 alive of [0-9]+ slots  free [1-9][0-9]* .* valid$" <<< "$inspect" \
  || fail "inspect-state does not show $ckpt as valid with 5 entities and a free slot"
grep -Eq '^journal segments: [1-9]' <<< "$inspect" || fail "no journal segment (ECSNET_JOURNAL=true)"
stop_state_server "$state_name-2"
pm volume rm "$state_volume" > /dev/null
ok "inspect-state in the running container: $ckpt valid, a journal segment; volume removed"

# ---- 5. docker/compose.yaml with podman-compose ---------------------------------------------
port2=$(free_port)
compose_env=(ECSNET_IMAGE="$image" ECSNET_PUBLISH="127.0.0.1:$port2"
             ECSNET_WS_PUBLISH="127.0.0.1:$(free_port)" ECSNET_CLIENT_NAME=compose-test)
compose=(-p "$project" -f docker/compose.yaml)
step "podman-compose -p $project -f docker/compose.yaml up -d server (published 127.0.0.1:$port2)"
pc "${compose[@]}" up -d server > "$cache/compose.log" 2>&1 || { indent < "$cache/compose.log"; fail "compose up"; }
srv=${project}_server_1
wait_healthy "$srv" 30 || { pm logs "$srv" 2>&1 | indent; fail "$srv not healthy within 30 s"; }
ok "$srv healthy after $(elapsed "$step_start") s; init: $(pm inspect "$srv" --format '{{.HostConfig.Init}}'), restart: $(pm inspect "$srv" --format '{{.HostConfig.RestartPolicy.Name}}')"

step "podman-compose run --rm client spawn --count 5, then list and destroy in new containers"
out=$(pc "${compose[@]}" run --rm -T --no-deps --name "${project}_client_run1" client spawn --count 5 2>&1) \
  || { echo "$out" | indent; fail "compose run client spawn"; }
grep -E '^spawned' <<< "$out" | indent
mapfile -t ids < <(sed -n 's/^spawned \([0-9]*:[0-9]*\).*/\1/p' <<< "$out")
[ "${#ids[@]}" -eq 5 ] || fail "the client service did not spawn 5"
pm volume exists "$compose_volume" || fail "no volume $compose_volume for the client's state"
out=$(pc "${compose[@]}" run --rm -T --no-deps --name "${project}_client_run2" client list 2>&1) \
  || { echo "$out" | indent; fail "compose run client list"; }
grep 'entities at tick' <<< "$out" | indent
grep -q 'entities at tick .*owns 5$' <<< "$out" || fail "the next client run does not own the 5"
# A third container destroys what the first spawned: the resume key in the volume carries the
# identity (before, the name did; now a new container without it would be another owner).
out=$(pc "${compose[@]}" run --rm -T --no-deps --name "${project}_client_run3" client destroy "${ids[0]}" 2>&1) \
  || { echo "$out" | indent; fail "compose run client destroy ${ids[0]} (the identity did not persist?)"; }
grep -E '^destroyed' <<< "$out" | indent
grep -qx "destroyed ${ids[0]}" <<< "$out" || fail "destroy ${ids[0]} printed no 'destroyed ${ids[0]}'"
ok "the client service spawned 5 entities; the next run lists them as its own, the one after destroys ${ids[0]} (identity in volume $compose_volume)"
if [ -n "$client" ]; then
  n=$(XDG_STATE_HOME=$client_state timeout 30 "$client" --host 127.0.0.1 --port "$port2" list | tail -n 1)
  echo "$n" | indent
  ok "the host's client reaches the compose server on the published 127.0.0.1:$port2"
fi

step "podman-compose stop -t 10 server; down; network rm ${project}_default; volume rm $compose_volume"
pc "${compose[@]}" stop -t 10 server >> "$cache/compose.log" 2>&1 || fail "compose stop"
# `down` removes the containers without -v: the server's anonymous /var/lib/ecsnet volume stays.
compose_anonymous=$(pm inspect "$srv" --format '{{range .Mounts}}{{if eq .Destination "/var/lib/ecsnet"}}{{.Name}}{{end}}{{end}}')
code=$(pm inspect "$srv" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "the compose server exited $code"
ok "the compose server (behind init) exited 0 on SIGTERM"
pc "${compose[@]}" down >> "$cache/compose.log" 2>&1 || fail "compose down"
pm network exists "${project}_default" && pm network rm "${project}_default" > /dev/null
pm volume exists "$compose_volume" && pm volume rm "$compose_volume" > /dev/null
for name in $compose_anonymous; do pm volume rm "$name" > /dev/null; done
left=$(pm ps -a --filter "label=io.podman.compose.project=$project" --format '{{.Names}}')
[ -z "$left" ] || fail "containers left after down: $left"
ok "no container, network or volume of the project left"

# ---- 6. the Debian packages: installed on a clean Debian 12, a game built and run on them ----
if [ -z "$packages" ]; then
  step "Debian packages: skipped (no --packages DIR nor ECSNET_PACKAGES_DIR; scripts/package.sh makes them)"
else
  step "$(basename "$runtime_deb") on a clean Debian 12 (bookworm-slim): apt-get install, then its programs"
  out=$(pmt 900 run --rm --name "$run_id-deb" --network=slirp4netns --no-healthcheck \
          -v "$packages:/packages:ro" --entrypoint sh docker.io/library/debian:bookworm-slim -c '
            set -e
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
              /packages/'"$(basename "$runtime_deb")"' > /dev/null
            for program in ecsnet-server ecsnet-client arena-server arena-client; do
              "$program" --help > /dev/null
            done
            ecsnet-server --version
            ecsnet-client --version
            dpkg -L ecsnet | grep -c "^/usr/bin/"' 2>&1) || { echo "$out" | indent; fail "the runtime package"; }
  echo "$out" | indent
  ok "installed with the Depends it declares, every program runs ($(elapsed "$step_start") s)"

  step "ecsnet new tagdemo: the script and template of $(basename "$dev_deb"), unpacked on the host"
  game_work=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-game.XXXXXX")
  dpkg-deb -x "$dev_deb" "$game_work/dev"
  "$game_work/dev/usr/bin/ecsnet" new tagdemo --dir "$game_work/tagdemo" | indent
  mkdir "$game_work/tagdemo/packages"
  cp "$dev_deb" "$game_work/tagdemo/packages/"
  [ -x "$game_work/tagdemo/run.sh" ] && [ -x "$game_work/tagdemo/test.sh" ] || fail "run.sh or test.sh is not executable"
  ok "$(find "$game_work/tagdemo" -type f | wc -l) files; run.sh and test.sh executable"

  step "podman build the game's own Dockerfile: ecsnet-dev on Debian 12, its build and test, FROM $image"
  game_log=$cache/game-build.log
  if ! pmt 1800 build --pull=never --format docker --build-arg "ECSNET_IMAGE=$image" \
         -t "$game_image" "$game_work/tagdemo" > "$game_log" 2>&1; then
    tail -n 40 "$game_log" >&2
    fail "the game's podman build (log: $game_log)"
  fi
  { grep -E 'tests passed|Linking CXX executable' "$game_log" || true; } | indent
  # The build step runs the tests; a cached step is one that passed them with the same inputs
  # (a failing RUN leaves no layer).
  if grep -q '100% tests passed' "$game_log"; then
    ok "built and tested in $(elapsed "$step_start") s"
  elif grep -A1 'RUN cmake -S . -B /build' "$game_log" | grep -q -- '--> Using cache'; then
    ok "its build and test step cached: the same sources and packages passed it before ($(elapsed "$step_start") s)"
  else
    fail "the game's tests did not all pass in its build (log: $game_log)"
  fi
  pmt 600 build --pull=never --format docker --target build -t "$game_image-build" \
    "$game_work/tagdemo" > /dev/null 2>&1 || fail "the game's build stage, tagged"
  out=$(pmt 60 run --rm --name "$run_id-new" --network=none --no-healthcheck --entrypoint sh \
          "$game_image-build" -c 'cd /tmp && ecsnet version && ecsnet new second > /dev/null && ls second' 2>&1) \
    || { echo "$out" | indent; fail "ecsnet new inside the build stage (installed by ecsnet-dev)"; }
  ok "ecsnet-dev installed \`$(head -n 1 <<< "$out")\` in the build stage; \`ecsnet new\` works there: $(tail -n +2 <<< "$out" | paste -sd ' ')"

  game_port=$(free_port)
  step "the game's image: podman run -p 127.0.0.1:$game_port:7777, healthy, a client joins and gets a player"
  pm run -d --name "$run_id-game" --network=slirp4netns -p "127.0.0.1:$game_port:7777" \
    "$game_image" > /dev/null 2> "$cache/podman-run.log" || { indent < "$cache/podman-run.log"; fail "podman run the game"; }
  wait_healthy "$run_id-game" 30 || { pm logs "$run_id-game" 2>&1 | indent; fail "the game not healthy within 30 s"; }
  client_port=$game_port
  client_name=tagdemo-test
  # Joined for 2 s, then listed as the same player (its resume key): the game made it an entity
  # with a position, which outlives the first connection for the reconnect grace.
  watched=$(ecsnet_client watch --seconds 2 2>&1) || { echo "$watched" | indent; fail "watch the game"; }
  head -n 1 <<< "$watched" | indent
  listed=$(ecsnet_client list 2>&1) || { echo "$listed" | indent; fail "list the game"; }
  echo "$listed" | indent
  grep -Eq '^[0-9]+:[0-9]+ +client [0-9]+ +\(' <<< "$listed" && grep -Eq 'owns [1-9]' <<< "$listed" \
    || fail "the game made no player (an owned entity with a position) for the client"
  pm stop -t 10 "$run_id-game" > /dev/null 2>&1
  code=$(pm inspect "$run_id-game" --format '{{.State.ExitCode}}')
  [ "$code" = 0 ] || fail "the game's server exited $code"
  pm rm -v "$run_id-game" > /dev/null 2>&1  # -v: the anonymous volume of the image's VOLUME
  ok "tagdemo-server (FROM $image) gave the client its player and stopped cleanly on SIGTERM"
fi

step "no volume left behind"
left=$(new_volumes)
[ -z "$left" ] || fail "volumes this run created are left: $(echo $left)"
ok "every volume this run created is gone"

step "all checks passed"
