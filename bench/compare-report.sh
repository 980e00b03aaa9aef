#!/usr/bin/env bash
# dyno compare and dyno report on large stores (issue 11's performance
# targets): `dyno compare` of two groups of 100 runs under 0.5 s; `dyno
# report` of 1,000 stored runs, and of an HTTP run of one hour (3,600
# timeline points), under 1 s each and under 2 MB of HTML.
#
# The runs are copies of real ones: one `dyno quick` (int64, http and disk
# lines, with their HDR histograms) and one `dyno http` run, made here, then
# multiplied by bench/synth_runs.py with fresh ids, start times an hour
# apart and ±2% jitter (group b 5% higher), and imported. The HTTP run's
# timeline is stretched to 3,600 seconds by repeating its measured seconds.
# Each command is timed ROUNDS times (wall clock of the whole process, the
# store read included); the median and the worst are printed.
#
# Usage: bench/compare-report.sh [ROUNDS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
# shellcheck source=bench/lib.sh
. "$PWD/bench/lib.sh"

cargo build --release --quiet
DYNO=$PWD/target/release/dyno
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export DYNO_HOME=$WORK/home

echo "making the template runs (a short dyno quick and dyno http)…"
"$DYNO" quick --int64-iterations 10000000 --http-duration 2s --disk-duration 0.3s \
  --json --no-save >"$WORK/quick.json" 2>/dev/null
"$DYNO" http -d 3s --json --no-save >"$WORK/http.json" 2>/dev/null

python3 bench/synth_runs.py "$WORK/quick.json" a=100 b=100x1.05 >"$WORK/groups.json"
python3 bench/synth_runs.py "$WORK/quick.json" many=1000 >"$WORK/many.json"
python3 bench/synth_runs.py "$WORK/http.json" --timeline 3600 hour=1 >"$WORK/hour.json"
for f in groups many hour; do "$DYNO" import "$WORK/$f.json" 2>/dev/null; done
HOUR=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["id"])' "$WORK/hour.json")

size_of() {
  local bytes
  bytes=$(stat -c %s "$1")
  printf '%-44s %8.2f MB  (target < 2 MB)\n' "$2" "$(echo "$bytes / 1000000" | bc -l)"
}

echo
time_it "compare: 100 runs against 100" 0.5 "$DYNO" compare a=@tag:a b=@tag:b --no-save
time_it "report: 1,000 stored runs" 1 "$DYNO" report --tag many -o -
cp "$WORK/out" "$WORK/many.html"
time_it "report: one HTTP run of 3,600 s" 1 "$DYNO" report "$HOUR" -o -
cp "$WORK/out" "$WORK/hour.html"
size_of "$WORK/many.html" "report size: 1,000 stored runs"
size_of "$WORK/hour.html" "report size: one HTTP run of 3,600 s"
