#!/usr/bin/env bash
# Before/after figures of protocol_bench (docs/BENCHMARKS.md): builds protocol_bench at OLD_REV
# (a git worktree in a temporary directory) and at the working tree (uncommitted changes
# included), both Release without tests, then runs the two binaries interleaved (old, new, old,
# new, ...), pinned to one core, on the benchmarks they both have (same names), and prints the
# median of each side and their ratio. Interleaving spreads the machine's drift (other load,
# frequency) over both sides instead of charging it to one.
#
# Usage: bench/compare.sh [options] OLD_REV
#   --reps N       runs of each binary (default 5)
#   --quick        2 runs, ECSNET_BENCH_N=10000, short minimum times: to check the script
#   --cpu N        the core to pin to (default: the last one)
#   --filter RE    only benchmarks whose name matches RE (Google Benchmark syntax)
#   --keep         keep the temporary directory (builds, JSON results)
#   -h, --help     this text
# Environment: ECSNET_BENCH_N (entities, default 100000), ECSNET_JOBS (build parallelism).
# Output: one row per benchmark: real time per iteration (old, new, new/old) and, where the
# benchmark reports them, bytes_per_entity and per_entity counters the same way.
set -euo pipefail

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
}

reps=5
quick=0
cpu=""
filter=""
keep=0
old_rev=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --reps) reps=${2:?--reps needs a number}; shift ;;
    --quick) quick=1 ;;
    --cpu) cpu=${2:?--cpu needs a core number}; shift ;;
    --filter) filter=${2:?--filter needs a regular expression}; shift ;;
    --keep) keep=1 ;;
    -*) echo "compare: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      if [ -n "$old_rev" ]; then
        echo "compare: one OLD_REV only (see --help)" >&2
        exit 2
      fi
      old_rev=$1 ;;
  esac
  shift
done
if [ -z "$old_rev" ]; then
  echo "compare: OLD_REV missing (see --help)" >&2
  exit 2
fi

missing=()
for tool in git cmake ninja taskset g++ python3; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare: missing prerequisites: ${missing[*]} (scripts/install-deps.sh build installs" \
       "the build tools; taskset is in util-linux)" >&2
  exit 2
fi
case "$reps" in
  ''|*[!0-9]*|0) echo "compare: --reps needs a positive number, not '$reps'" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
repo=$(pwd)
if ! old_sha=$(git rev-parse --verify --quiet "$old_rev^{commit}"); then
  echo "compare: '$old_rev' is not a commit of this repository" >&2
  exit 2
fi
if [ -z "$cpu" ]; then
  cpu=$(( $(nproc) - 1 ))
fi
jobs=${ECSNET_JOBS:-$(nproc)}
if [ "$quick" = 1 ]; then
  reps=2
  export ECSNET_BENCH_N=${ECSNET_BENCH_N:-10000}
  min_time=(--benchmark_min_time=0.05)
else
  min_time=()
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ecsnet-compare.XXXXXX")
cleanup() {
  git -C "$repo" worktree remove --force "$work/old-src" >/dev/null 2>&1 || true
  if [ "$keep" = 1 ]; then
    echo "compare: kept $work" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
build() {  # source dir, build dir
  echo "compare: building protocol_bench from $1" >&2
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DECSNET_BUILD_TESTS=OFF \
    -DECSNET_BUILD_BENCH=ON "${launcher[@]}" >"$2.configure.log" 2>&1 \
    || { cat "$2.configure.log" >&2; echo "compare: cmake failed for $1" >&2; exit 1; }
  cmake --build "$2" -j "$jobs" --target protocol_bench >"$2.build.log" 2>&1 \
    || { tail -n 40 "$2.build.log" >&2; echo "compare: build failed for $1" >&2; exit 1; }
}

git worktree add --detach "$work/old-src" "$old_sha" >/dev/null 2>&1
build "$work/old-src" "$work/old-build"
build "$repo" "$work/new-build"
old_bin=$(find "$work/old-build" -type f -name protocol_bench -perm -u+x | head -n 1)
new_bin=$(find "$work/new-build" -type f -name protocol_bench -perm -u+x | head -n 1)
for b in "$old_bin" "$new_bin"; do
  [ -x "$b" ] || { echo "compare: no protocol_bench binary built" >&2; exit 1; }
done

# The benchmarks both binaries have, as one anchored filter.
list() {
  "$1" --benchmark_list_tests=true ${filter:+--benchmark_filter="$filter"}
}
common=$(comm -12 <(list "$old_bin" | sort -u) <(list "$new_bin" | sort -u))
if [ -z "$common" ]; then
  echo "compare: the two revisions have no benchmark in common${filter:+ matching $filter}" >&2
  exit 1
fi
only_new=$(comm -13 <(list "$old_bin" | sort -u) <(list "$new_bin" | sort -u) | wc -l)
pattern=$(python3 -c 'import re, sys; print("^(" + "|".join(re.escape(l) for l in sys.stdin.read().split()) + ")$")' <<<"$common")
echo "compare: $(wc -l <<<"$common") benchmarks in common ($only_new only in the working tree)," \
     "$reps runs each, interleaved, on core $cpu, N=${ECSNET_BENCH_N:-100000}" >&2

for i in $(seq 1 "$reps"); do
  for side in old new; do
    bin=$old_bin
    [ "$side" = new ] && bin=$new_bin
    echo "compare: run $i/$reps: $side" >&2
    taskset -c "$cpu" "$bin" --benchmark_filter="$pattern" "${min_time[@]}" \
      --benchmark_format=console --benchmark_out_format=json \
      --benchmark_out="$work/$side-$i.json" >"$work/$side-$i.log" 2>&1 \
      || { tail -n 20 "$work/$side-$i.log" >&2; echo "compare: $side run $i failed" >&2; exit 1; }
  done
done

python3 - "$work" "$reps" "$old_rev" <<'EOF'
import json, statistics, sys

work, reps, old_rev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

def load(side):
    runs = {}
    for i in range(1, reps + 1):
        with open(f"{work}/{side}-{i}.json") as f:
            for b in json.load(f)["benchmarks"]:
                if b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
                    continue
                r = runs.setdefault(b["name"], {"time": [], "bytes_per_entity": [], "per_entity": []})
                r["time"].append(b["real_time"] * scale[b.get("time_unit", "ns")])
                for c in ("bytes_per_entity", "per_entity"):
                    if c in b:
                        r[c].append(b[c])
    return runs

old, new = load("old"), load("new")

def fmt_time(s):
    for unit, f in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if s >= f:
            return f"{s / f:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"

rows = [("benchmark", "measure", f"old ({old_rev})", "new", "new/old")]
for name in sorted(set(old) & set(new)):
    for key, show in (("time", fmt_time), ("per_entity", fmt_time),
                      ("bytes_per_entity", lambda v: f"{v:.3f} B")):
        if not old[name][key] or not new[name][key]:
            continue
        o, n = statistics.median(old[name][key]), statistics.median(new[name][key])
        ratio = f"{n / o:.3f}" if o else "-"
        rows.append((name, key if key != "time" else "time/iter", show(o), show(n), ratio))
widths = [max(len(r[i]) for r in rows) for i in range(5)]
for r in rows:
    print("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
print(f"medians of {reps} interleaved runs per side; new/old < 1: the working tree is faster "
      f"(or smaller)")
EOF
