#!/usr/bin/env bash
# Builds ecsnet's Debian packages with CPack (cmake/packaging.cmake): ecsnet (the programs and
# web pages) and ecsnet-dev (headers, static libraries, the CMake package, the template). A
# Release build in build/package (with the web pages and the npm SDK's tarball when node and npm
# are installed and `scripts/web-deps.sh` has run), then `cpack -G DEB`; prints each package's
# size and Depends.
# Usage: scripts/package.sh [--out DIR] [--build-dir DIR] [--from-build DIR] [--no-web]
#   --out DIR         where the .deb files go (default: build/packages)
#   --build-dir DIR   the build directory (default: build/package)
#   --from-build DIR  package an existing, built build directory as it is (CI: the Release
#                     stage's); nothing is configured or compiled
#   --no-web          without the web pages and the npm tarball
set -euo pipefail
cd "$(dirname "$0")/.."

out=build/packages
build_dir=build/package
from_build=""
web=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=${2:?--out needs a directory}; shift 2 ;;
    --build-dir) build_dir=${2:?--build-dir needs a directory}; shift 2 ;;
    --from-build) from_build=${2:?--from-build needs a directory}; shift 2 ;;
    --no-web) web=OFF; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "package.sh: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
done

# cmake, the compilers and libraries; cpack's DEB generator runs dpkg-deb, dpkg-shlibdeps
# (dpkg-dev) and file.
scripts/install-deps.sh build
for tool in cmake cpack dpkg-deb dpkg-shlibdeps file; do
  command -v "$tool" > /dev/null || { echo "package.sh: $tool not found (scripts/install-deps.sh build)" >&2; exit 1; }
done

if [ -n "$from_build" ]; then
  [ -f "$from_build/CPackConfig.cmake" ] ||
    { echo "package.sh: $from_build is not a configured build directory (no CPackConfig.cmake)" >&2; exit 1; }
  build_dir=$from_build
else
  launcher=()
  command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  web_flag=()
  [ "$web" = OFF ] && web_flag=(-DECSNET_WEB=OFF)
  if [ "$web" = auto ] && command -v npm > /dev/null; then
    scripts/web-deps.sh  # npm ci in the SDK and the pages: they are then built
  fi
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_UNITY_BUILD=ON \
    -DECSNET_BUILD_TESTS=OFF -DECSNET_BUILD_BENCH=OFF ${web_flag[@]+"${web_flag[@]}"} \
    ${launcher[@]+"${launcher[@]}"}
  cmake --build "$build_dir"
  # The npm package for the template's page (share/ecsnet/npm), when the web pages are built.
  # (grep reads all of ninja's list: `grep -q` would end the pipe early, failing it with SIGPIPE)
  if ninja -C "$build_dir" -t targets all 2> /dev/null | grep '^ecsnet_sdk_ts_package:' > /dev/null; then
    cmake --build "$build_dir" --target ecsnet_sdk_ts_package
  fi
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/ecsnet_*.deb "$out"/ecsnet-dev_*.deb
(cd "$build_dir" && cpack -G DEB -B "$out/.cpack" > "$out/.cpack.log" 2>&1) ||
  { tail -n 30 "$out/.cpack.log" >&2; echo "package.sh: cpack failed (log: $out/.cpack.log)" >&2; exit 1; }
mv "$out"/.cpack/*.deb "$out"/
rm -rf "$out/.cpack" "$out/.cpack.log"
for deb in "$out"/ecsnet_*.deb "$out"/ecsnet-dev_*.deb; do
  printf '%s  %s KB packed, %s KB installed\n' "$deb" "$(( $(stat -c %s "$deb") / 1024 ))" \
    "$(dpkg-deb -f "$deb" Installed-Size)"
  printf '  Depends: %s\n' "$(dpkg-deb -f "$deb" Depends)"
done
