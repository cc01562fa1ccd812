#!/usr/bin/env bash
# docker/test-image.sh checks its prerequisites before it does anything: on a PATH without
# iptables (netavark, podman's network backend, runs it for every RUN step of a build; without
# it the build failed at its first RUN with "netavark: No such file or directory") the check
# fails at once with exit 1, naming iptables and its package, before any install, build or
# container. Runs offline in about a second; the real image test is docker/test-image.sh itself.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
. "$repo/tests/scripts/testlib.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-test-image-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

path_without "$work/bin" iptables
PATH=$work/bin command -v iptables > /dev/null
[ $? -ne 0 ]
check $? "the test's PATH has no iptables"

expect_missing "$work/bin" iptables iptables "$repo/docker/test-image.sh" --check-prerequisites

# Where this machine has iptables, the same check with the full PATH does not name it.
if PATH="$PATH:/usr/sbin:/sbin" command -v iptables > /dev/null; then
  out=$(timeout 120 "$repo/docker/test-image.sh" --check-prerequisites 2>&1)
  if grep -q "iptables (Debian package" <<< "$out"; then false; else true; fi
  check $? "with iptables on PATH, it is not reported missing"
fi

echo "$failures failed"
[ "$failures" -eq 0 ]
