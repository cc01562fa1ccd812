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
