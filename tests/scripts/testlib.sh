# Sourced by the scripts' tests. path_without DIR NAME...: fills DIR with symlinks to every
# command on this machine's PATH (and the sbin directories root has) except NAME..., so that a
# script run with PATH=DIR finds everything but those commands, as on a machine without their
# packages. The real binaries stay where they are.
path_without() {
  local dir=$1 d name
  shift
  mkdir -p "$dir"
  local dirs
  IFS=: read -ra dirs <<< "$PATH:/usr/local/sbin:/usr/sbin:/sbin"
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    # The first directory on PATH wins, as in a lookup; ln leaves existing names alone.
    find "$d" -mindepth 1 -maxdepth 1 -exec ln -s -t "$dir" {} + 2> /dev/null || true
  done
  for name in "$@"; do
    rm -f "${dir:?}/$name"
  done
}

failures=0
check() {  # check EXIT-CODE WHAT: records a failure unless EXIT-CODE is 0
  if [ "$1" -eq 0 ]; then echo "ok: $2"; else echo "FAIL: $2" >&2; failures=$((failures + 1)); fi
}

# expect_missing PATH-DIR COMMAND PACKAGE ARGV...: runs ARGV with PATH=PATH-DIR (made by
# path_without without COMMAND) and checks that it exits 1, names COMMAND and its Debian
# PACKAGE, and installs, builds and bootstraps nothing.
expect_missing() {
  local dir=$1 cmd=$2 package=$3 out rc
  shift 3
  out=$(PATH=$dir timeout 120 "$@" 2>&1)
  rc=$?
  echo "$out" | sed 's/^/    /'
  [ "$rc" -eq 1 ]
  check $? "${*##*/} without $cmd exits 1 (got $rc)"
  grep -q "$cmd (Debian package $package)" <<< "$out"
  check $? "the message names $cmd and its package"
  if grep -Eqi "installing|podman build|debootstrap --variant" <<< "$out"; then false; else true; fi
  check $? "nothing was installed, built or bootstrapped"
}
