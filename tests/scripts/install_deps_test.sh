#!/usr/bin/env bash
# scripts/install-deps.sh: every package it names exists for this Debian release (a typo or a
# package of another release would only show on a fresh machine), --check passes on the machine
# that just built the project, and --check on a PATH without a command fails at once, naming
# the command and its package, without installing anything.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/tests/scripts/testlib.sh"
deps=$repo/scripts/install-deps.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-install-deps-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1. Every package of every group is installed, or known to apt (the local package lists:
#    no network).
packages=$("$deps" --list build fuzz image 2> "$work/list.err")
rc=$?
check "$rc" "--list build fuzz image exits 0 ($(cat "$work/list.err"))"
n=$(wc -w <<< "$packages")
installed=$(dpkg-query -W -f='${Package} ${Status}\n' $packages 2> /dev/null \
              | awk '/install ok installed/ { print $1 }')
known=$(apt-cache show --no-all-versions $packages 2> /dev/null | sed -n 's/^Package: //p')
unknown=()
for p in $packages; do
  grep -qx -- "$p" <<< "$installed"$'\n'"$known" || unknown+=("$p")
done
[ "$n" -ge 20 ] && [ ${#unknown[@]} -eq 0 ]
check $? "$n packages listed, each installed or known to apt (unknown: ${unknown[*]:-none})"
grep -qx libssl-dev <<< "$packages"
check $? "libssl-dev is among the build packages"
grep -qx iptables <<< "$packages"
check $? "iptables is among the image packages (netavark runs it for every RUN step)"

# 2. The machine that built and runs this test has every build command.
out=$("$deps" --check build 2>&1)
check $? "--check build passes here: $out"

# 3. Without cmake on PATH: exit 1, the command and its package named, nothing installed.
path_without "$work/bin" cmake
expect_missing "$work/bin" cmake cmake "$deps" --check build

# 4. An unknown group is a usage error.
PATH=$work/bin "$deps" --check no-such-group > /dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ]
check $? "an unknown group exits 2 (got $rc)"

echo "$failures failed"
[ "$failures" -eq 0 ]
