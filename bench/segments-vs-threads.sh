#!/usr/bin/env bash
# One run split into N segments (N dyno processes, --segment I/N) against
# the same run as one process with N threads, on one nginx worker on
# loopback: does splitting cost throughput, and what does the start barrier
# add?
#
# nginx runs one worker pinned to CPU 0; the clients share CPU 1 (when
# there are at least 2 CPUs). Each round runs the one process, then the N
# segments (each from its own address, 127.0.0.2 …, meeting in a store file
# or the PostgreSQL store given as STORE=postgres://…), interleaved round by
# round. Printed: the merged req/s of the segments against the one
# process's, per round and their median ratio (issue 15's goal: the same
# within noise), and the barrier's cost: from the last segment's arrival
# to the latest actual start (goal: under 100 ms).
#
# Usage: bench/segments-vs-threads.sh [ROUNDS] [SECONDS] [CONNECTIONS] [SEGMENTS]
#        (default 3 rounds of 5 s, 30 connections, 3 segments)
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs: nginx; installs it when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-30}
N=${4:-3}

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
need_tools nginx nginx-light nginx
bench_nginx ""
export DYNO_HOME="$WORK/home"
STORE=${STORE:-$WORK/segments.db}
URL="http://127.0.0.1:$PORT/hello.html"

echo "nginx: 1 worker on CPU $SERVER_CPU; clients on CPU $CLIENT_CPU; -c $CONNS, ${SECS}s, $N segments against 1 process with -t $N; store $(echo "$STORE" | sed 's#//[^@]*@#//…@#')"
: > "$WORK/results"
for round in $(seq "$ROUNDS"); do
  pin_client "$DYNO" http "$URL" -c "$CONNS" -t "$N" -d "${SECS}s" --no-save --json > "$WORK/one.json"
  group="bench-$$-$round"
  for i in $(seq 0 $((N - 1))); do
    pin_client "$DYNO" --store "$STORE" http "$URL" -c "$CONNS" -t "$N" -d "${SECS}s" \
      --segment "$i/$N" --group "$group" -B "127.0.0.$((i + 2))" --json > "$WORK/seg$i.json" 2> "$WORK/seg$i.err" &
  done
  wait
  "$DYNO" --store "$STORE" merge "$group" --json > "$WORK/merged.json"
  python3 - "$round" "$WORK" "$N" >> "$WORK/results" <<'PY'
import json, sys
rnd, work, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def m(run, name):
    return next(x["value"] for x in run["metrics"] if x["name"] == name and not x.get("labels"))
one = json.load(open(f"{work}/one.json"))
merged = json.load(open(f"{work}/merged.json"))
if merged["settings"]["group"]["incomplete"]:
    sys.exit(f"round {rnd}: the merged run is incomplete: {merged['warnings']}")
segs = [json.load(open(f"{work}/seg{i}.json"))["settings"]["segment"] for i in range(n)]
# The last segment to arrive waited least: its wait is what the barrier
# added; then how late the latest segment actually started.
wait = min(s["barrier_wait_ns"] for s in segs)
late = max(s["started_at_ns"] - s["start_at_ns"] for s in segs)
spread = max(s["started_at_ns"] for s in segs) - min(s["started_at_ns"] for s in segs)
print(rnd, m(one, "requests_per_sec"), m(merged, "requests_per_sec"), wait, late, spread)
PY
done
python3 - "$WORK/results" "$N" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
n = sys.argv[2]
print(f'{"round":>5} {"1 process req/s":>16} {n + " segments req/s":>17} {"ratio":>7} {"barrier ms":>11} {"start spread ms":>16}')
ratios, added = [], []
for rnd, one, seg, wait, late, spread in rows:
    r = float(seg) / float(one)
    b = (int(wait) + max(int(late), 0)) / 1e6
    ratios.append(r)
    added.append(b)
    print(f'{rnd:>5} {float(one):16.0f} {float(seg):17.0f} {r:7.3f} {b:11.1f} {int(spread) / 1e6:16.2f}')
print(f'segments/one process: req/s {statistics.median(ratios):.3f}x (rounds {min(ratios):.3f}-{max(ratios):.3f}; goal: the same within noise); '
      f'barrier {statistics.median(added):.1f} ms (max {max(added):.1f}; goal < 100 ms)')
PY
