#!/usr/bin/env bash
# dyno changes on a large store (issue 48: a store of a few thousand runs
# in well under a second per series). The runs are copies of real ones,
# made by bench/synth_runs.py with fresh ids, start times an hour apart and
# ±2% jitter:
#   - 3,000 runs of one `dyno run` (one series, one line), the last 1,500
#     10% slower: one change, at run 1,500;
#   - 1,000 runs of one `dyno quick` (one series, nine lines: int64, http
#     with its latency's p99, disk), the last 300 5% higher.
# Each command is timed ROUNDS times (wall clock of the whole process, the
# store read included); the median and the worst are printed, with the
# changes found.
#
# Usage: bench/changes-store.sh [ROUNDS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
# shellcheck source=bench/lib.sh
. "$PWD/bench/lib.sh"

cargo build --release --quiet
DYNO=$PWD/target/release/dyno
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export DYNO_HOME=$WORK/home

echo "making the template runs (a dyno run and a short dyno quick)…"
"$DYNO" run --runs 5 --json --no-save 'sleep 0.001' >"$WORK/run.json" 2>/dev/null
"$DYNO" quick --int64-iterations 10000000 --http-duration 1s --disk-duration 0.3s \
  --json --no-save >"$WORK/quick.json" 2>/dev/null
python3 bench/synth_runs.py "$WORK/run.json" a=1500 b=1500x1.1 >"$WORK/runs.json"
python3 bench/synth_runs.py "$WORK/quick.json" q=700 r=300x1.05 >"$WORK/quicks.json"
for f in runs quicks; do "$DYNO" import "$WORK/$f.json" 2>/dev/null; done

echo
time_it "changes: 3,000 runs of dyno run (1 line)" 1 "$DYNO" changes --kind run --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print("  ", l["metric"], [c["runs_before"] for c in l["changes"]]) for s in r["series"] for l in s["lines"]]' "$WORK/out"
time_it "changes: 1,000 runs of dyno quick (9 lines)" 1 "$DYNO" changes --kind quick --json
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); [print("  ", l["metric"], [c["runs_before"] for c in l["changes"]]) for s in r["series"] for l in s["lines"]]' "$WORK/out"
time_it "history: the same 4,000 runs, listed" 1 "$DYNO" history
