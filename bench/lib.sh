# shellcheck shell=bash
# Shared by the bench scripts (sourced, not run, from the repository root,
# where each script starts with `cd`; bench/nginx-lib.sh sources it too):
# the peers a script needs, the dyno it measures, the report of the scripts
# that compare two builds and the runs of the tree database's workloads.

# RUNSTAT: put before a client's command to have bench/runstat.py add the
# client's CPU time and peak RSS (a `runstat:` line) to its stderr.
# shellcheck disable=SC2034
RUNSTAT="python3 $PWD/bench/runstat.py"

# need COMMAND: whether COMMAND is on the PATH.
need() { command -v "$1" >/dev/null 2>&1; }

# need_tools "COMMAND…" "PACKAGE…" WHAT: when any COMMAND is missing,
# installs the Debian PACKAGEs if run as root, else says "install WHAT
# first" and exits 2.
need_tools() {
  local cmd
  for cmd in $1; do
    need "$cmd" && continue
    if [ "$(id -u)" -eq 0 ]; then
      apt-get update -qq
      # shellcheck disable=SC2086
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $2 >/dev/null
    else
      echo "install $3 first" >&2; exit 2
    fi
    return
  done
}

# dyno_build: $DYNO, the dyno to measure: DYNO=path/to/dyno in the
# environment runs that build (to compare two builds of dyno against the
# same peer, one after the other), else this checkout's is built (release).
dyno_build() {
  if [ -z "${DYNO:-}" ]; then
    cargo build --release --quiet
    DYNO=$PWD/target/release/dyno
  fi
}

# ab_report FILE LINE: the report of the scripts that compare two builds,
# $OLD and $NEW: names both, prints LINE, then runs the Python program on
# stdin with `rows`, FILE's lines ("CASE BUILD FIELD…") grouped as
# {case: {build: [[FIELD, …] of each line]}}, cases and builds in the order
# first seen.
ab_report() {
  echo "OLD $OLD"
  echo "NEW $NEW"
  echo "$2"
  { cat <<'PY'; cat; } | python3 - "$1"
import sys
rows = {}
for line in open(sys.argv[1]):
    case, name, *fields = line.split()
    rows.setdefault(case, {}).setdefault(name, []).append(fields)
PY
}

# tree_run WORKLOAD ARGS…: `dyno scale --workload WORKLOAD ARGS…` (dyno as
# dyno_build gives it), its JSON record in $DYNO_HOME/run.json, DYNO_HOME a
# fresh directory that a trap removes on exit.
tree_run() {
  dyno_build
  export DYNO_HOME
  DYNO_HOME=$(mktemp -d)
  trap 'rm -rf "$DYNO_HOME"' EXIT
  "$DYNO" scale --workload "$@" --json --no-save >"$DYNO_HOME/run.json"
}

# tree_report AMDAHL_NOTE: runs the Python program on stdin with `run`,
# tree_run's record, to print a line for each thread count; then what
# both tree workloads print after those: the speedup within each
# repetition, the Amdahl fit (AMDAHL_NOTE after it) and the warnings.
tree_report() {
  { cat <<'PY'; cat; cat <<'PY'; } | python3 - "$DYNO_HOME/run.json" "$1"
import json, sys
run = json.load(open(sys.argv[1]))
PY
# The repetitions take N = 1 and N = 2 in turns: the ratio within each turn
# is what drift between turns cannot move.
samples = {m["labels"].get("n"): m["samples"] for m in run["metrics"] if m["name"] == "time_ns"}
if "1" in samples and "2" in samples:
    pairs = sorted(a / b for a, b in zip(samples["1"], samples["2"]))
    k = len(pairs)
    mid = pairs[k // 2] if k % 2 else (pairs[k // 2 - 1] + pairs[k // 2]) / 2
    print(f"  speedup within each repetition: median {mid:.2f}×, from {pairs[0]:.2f}× to {pairs[-1]:.2f}× ({k} repetitions)")
p = next((m["value"] for m in run["metrics"] if m["name"] == "amdahl_fit_parallel_fraction"), None)
if p is not None:
    print(f"  Amdahl fit p = {p * 100:.2f}%   {sys.argv[2]}")
for w in run["warnings"]:
    print(f"  ! {w['message']}")
PY
}

# Figures (issue 48): a bench's ratios to its peer, kept as dyno runs so
# that `dyno changes` follows them over commits. figures_start makes
# $FIGURES, a file the bench's report appends one JSON figure to per line
# ({"name", "labels", "unit", "direction", "samples"}, as `dyno import
# --figures` reads them), when BENCH_SAVE is set; save_figures NAME
# SETTINGS_JSON then saves them as one run of kind `figures`, tagged
# `rev:$BENCH_REV` (this checkout's commit unless given) and `bench`, with
# $FIGURES_DYNO (the dyno that knows --figures: this checkout's release
# build unless given, since $DYNO may be an older build under test).
figures_start() {
  FIGURES=
  [ -n "${BENCH_SAVE:-}" ] || return 0
  FIGURES=$(mktemp "${WORK:-${TMPDIR:-/tmp}}/figures.XXXXXX")
  export FIGURES
}
save_figures() {
  [ -n "${FIGURES:-}" ] || return 0
  local saver=${FIGURES_DYNO:-$PWD/target/release/dyno}
  local rev=${BENCH_REV:-$(git rev-parse --short=10 HEAD)}
  python3 - "$1" "$2" "$FIGURES" >"$FIGURES.json" <<'PY'
import json, sys
name, settings, lines = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
figures = [json.loads(line) for line in open(lines) if line.strip()]
json.dump({"name": name, "settings": settings, "figures": figures}, sys.stdout)
PY
  "$saver" import --figures "$FIGURES.json" --tag "rev:$rev" --tag bench >/dev/null
  echo "figures saved as a dyno run tagged rev:$rev (dyno changes --kind figures --tag bench)"
  rm -f "$FIGURES" "$FIGURES.json"
}

# time_it LABEL LIMIT_S COMMAND…: $ROUNDS timed runs of the command (wall
# clock of the whole process), its stdout in $WORK/out; prints the median
# and the worst against the target LIMIT_S.
time_it() {
  local label=$1 limit=$2
  shift 2
  python3 - "$ROUNDS" "$label" "$limit" "$WORK/out" "$@" <<'PY'
import statistics, subprocess, sys, time
rounds, label, limit, out = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
walls = []
for _ in range(rounds):
    start = time.perf_counter()
    with open(out, "wb") as f:
        subprocess.run(sys.argv[5:], stdout=f, stderr=subprocess.DEVNULL, check=True)
    walls.append(time.perf_counter() - start)
print(f"{label:<48} median {statistics.median(walls):6.3f} s  worst {max(walls):6.3f} s  (target < {limit:g} s)")
PY
}
