#!/usr/bin/env bash
# Installs the Debian 12 packages ecsnet's scripts need, only those missing (one apt-get update,
# only when something is missing), then checks that every external command the scripts call is
# there; a missing one stops it with the command's name and its package. Idempotent,
# non-interactive. Self-contained: docker/Dockerfile copies it alone into the build stage.
#
# Usage: scripts/install-deps.sh [--check | --list] [GROUP ...]
#   GROUP    build (the default): compilers, CMake, Ninja and the libraries (demo.sh, test.sh,
#                                 bench/run-matrix.sh, the Dockerfile's build stage)
#            fuzz:  clang 14 and its libFuzzer/sanitizer runtime (test.sh's ASan build,
#                   scripts/fuzz.sh)
#            image: podman with runc, netavark and iptables, podman-compose, debootstrap,
#                   python3 (docker/test-image.sh)
#            web:   Node.js >= 20 with npm, flatc, Debian's chromium (sdk/ts: build, tests,
#                   the browser test and bench), Debian's emscripten (a game's prediction
#                   as WebAssembly)
#            ops:   promtool (Debian's prometheus): the /metrics and deploy/ tests; curl
#                   and jq (bench/metrics/measure.sh)
#   --check  install nothing: exit 1, naming each missing command and its package, if any
#   --list   print the groups' packages, one a line
set -euo pipefail

# group  package  [commands the scripts call that it provides: a name on PATH or an absolute path]
# Packages of Debian's essential set (coreutils, tar, util-linux, grep, sed, findutils) are on
# every machine; they are listed for the check, never installed by this script in practice.
table='
build  build-essential         g++ make
build  cmake                   cmake ctest
build  ninja-build             ninja
build  pkg-config              pkg-config
build  libboost1.81-dev
build  libflatbuffers-dev
build  flatbuffers-compiler    flatc
build  libspdlog-dev
build  libgtest-dev
build  libgmock-dev
build  libbenchmark-dev
build  libcli11-dev
build  nlohmann-json3-dev
build  libcpp-jwt-dev
build  libxxhash-dev
build  libreadline-dev
build  libssl-dev
build  prometheus-cpp-dev
build  ccache                  ccache
build  mold                    mold
build  coreutils               nproc mktemp tee timeout nice
build  util-linux              chrt
build  sed                     sed
build  dpkg-dev                dpkg-shlibdeps
build  file                    file
fuzz   clang-14                clang++-14
fuzz   libclang-rt-14-dev
fuzz   coreutils               timeout base64
fuzz   findutils               find
image  podman                  podman
image  runc                    runc
image  conmon                  conmon
image  slirp4netns             slirp4netns
image  catatonit               catatonit
image  buildah
image  netavark                /usr/lib/podman/netavark
image  aardvark-dns            /usr/lib/podman/aardvark-dns
image  iptables                iptables
image  uidmap
image  podman-compose          podman-compose
image  debootstrap             debootstrap
image  debian-archive-keyring
image  python3                 python3
image  coreutils               timeout
image  util-linux              flock
image  tar                     tar
image  mawk                    awk
web    nodejs                  node npm
web    flatbuffers-compiler    flatc
web    chromium                /usr/bin/chromium
web    emscripten              em++
ops    prometheus              promtool
ops    curl                    curl
ops    jq                      jq
'
# Why some are here: libboost1.81-dev is Asio 1.26 (C++20 coroutines), not Debian's default
# 1.74; libreadline-dev is the client shell's line editing; libssl-dev is OpenSSL;
# prometheus-cpp-dev is /metrics (its core library); ops' prometheus brings promtool, which
# the tests run on a live scrape and on the dashboard's queries (not in the image's build); ccache
# makes test.sh's three builds of the same sources (ASan, TSan, Release) and later runs cheaper;
# mold links them about 4x faster than GNU ld (test.sh passes -DECSNET_LINKER=mold). netavark,
# podman's network backend, runs iptables for every RUN step of a build ("netavark: No such file
# or directory" without it); runc because crun fails on these hosts' hybrid cgroups; catatonit
# is compose's init process; python3 parses the image's JSON configuration. web has no npm
# package: these machines' nodejs is Node 20 and provides npm, and Debian's npm package conflicts
# with it (installing it would bring back Debian 12's nodejs 18); node's version is checked below.
# The browser test drives /usr/bin/chromium itself (playwright-core never downloads a browser).

mode=install
groups=()
for arg in "$@"; do
  case "$arg" in
    --check) mode=check ;;
    --list) mode=list ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    build|fuzz|image|web|ops) groups+=("$arg") ;;
    *) echo "install-deps: unknown group or option '$arg' (groups: build fuzz image web ops; --check, --list)" >&2
       exit 2 ;;
  esac
done
[ ${#groups[@]} -gt 0 ] || groups=(build)

packages=()
declare -A command_package=()
while read -r group package commands; do
  [ -n "$group" ] || continue
  case " ${groups[*]} " in *" $group "*) ;; *) continue ;; esac
  case " ${packages[*]} " in *" $package "*) ;; *) packages+=("$package") ;; esac
  for c in $commands; do command_package[$c]=$package; done
done <<< "$table"

if [ "$mode" = list ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

# Every command the selected groups' scripts call, looked up as they will run it: root's
# commands (podman, iptables) run through sudo, whose PATH has the sbin directories.
check_commands() {
  local search=$PATH c missing=()
  [ "$(id -u)" -eq 0 ] || search+=:/usr/local/sbin:/usr/sbin:/sbin
  for c in "${!command_package[@]}"; do
    if [ "${c#/}" != "$c" ]; then
      [ -x "$c" ] || missing+=("$c")
    else
      PATH=$search command -v "$c" > /dev/null || missing+=("$c")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort)
  for c in "${missing[@]}"; do
    echo "install-deps: missing command: $c (Debian package ${command_package[$c]})" >&2
  done
  return 1
}

# sdk/ts needs Node.js 20 or later; Debian 12's own nodejs is 18.
check_node_version() {
  case " ${groups[*]} " in *" web "*) ;; *) return 0 ;; esac
  command -v node > /dev/null || return 0  # reported by check_commands
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  [ "$major" -ge 20 ] && return 0
  echo "install-deps: node $(node --version) is too old: sdk/ts needs Node.js 20 or later" >&2
  return 1
}

if [ "$mode" = check ]; then
  if ! check_commands; then
    echo "install-deps: install them with: scripts/install-deps.sh ${groups[*]}" >&2
    exit 1
  fi
  check_node_version || exit 1
  echo "install-deps: every command of ${groups[*]} present (${#command_package[@]})"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages of ${groups[*]} present"
else
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo > /dev/null \
      || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo_cmd=(sudo)
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Installed is not enough: a package present but a command not found (another PATH, a removed
# alternative) must stop here, not minutes later in the middle of a build.
check_commands || { echo "install-deps: the packages are installed but these commands are not found" >&2; exit 1; }
check_node_version || exit 1
