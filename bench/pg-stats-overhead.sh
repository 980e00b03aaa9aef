#!/usr/bin/env bash
# What `--pg-stats` costs a `dyno db run` (issue 30's budget for watching:
# at most 1% more client CPU per transaction), and what its probe costs
# the server, as the transactions per second it leaves.
#
# A throwaway cluster (scripts/pg) holds pgbench's tables at scale SCALE.
# select-only runs ROUNDS times plain and ROUNDS times with --pg-stats
# (its probe reads pg_stat_database, the bgwriter, checkpointer and WAL
# views every --watch-interval, and pg_stat_activity five times as
# often), the two in alternating order. Each run's client CPU (user +
# system of the whole dyno process, the probe's thread included, from
# bench/runstat.py) is divided by its transactions. The probe's own
# thread also counts its CPU (watch_client_cpu_ns, when the run has it):
# its share of the client's CPU is the same cost seen from inside, free of
# the run-to-run noise of an A/B pair.
#
# Usage: bench/pg-stats-overhead.sh [ROUNDS=5] [SECONDS=10] [CLIENTS=8] [INTERVAL=1s] [SCALE=1]
# Needs: PostgreSQL's server (Debian's postgresql), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-10}
CLIENTS=${3:-8}
INTERVAL=${4:-1s}
SCALE=${5:-1}

cargo build --release --quiet
DYNO=$PWD/target/release/dyno
WORK=$(mktemp -d)
PG=$(scripts/pg start)
trap 'scripts/pg stop "$PG" >/dev/null; rm -rf "$WORK"' EXIT
# shellcheck disable=SC1091
. "$PG/env"
export DYNO_HOME=$WORK/home
"$DYNO" db init --scale "$SCALE" >/dev/null

# run NAME [FLAGS…]: one run; appends "cpu_s transactions tps probe_cpu_s" to $WORK/NAME.
run() {
  local name=$1; shift
  python3 bench/runstat.py "$DYNO" db run -S -c "$CLIENTS" -j 2 -T "$SECS" --json --no-save "$@" \
    >"$WORK/out.json" 2>"$WORK/stat"
  python3 - "$WORK/out.json" "$WORK/stat" >>"$WORK/$name" <<'PY'
import json, re, sys
run = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for x in run["metrics"] if not x.get("labels")}
u, s = (float(v) for v in re.search(r"user_s=(\S+) sys_s=(\S+)", open(sys.argv[2]).read()).groups())
tx = m["transactions"]
print(u + s, tx, m["transactions_per_sec"], m.get("watch_client_cpu_ns", 0.0) / 1e9)
PY
}

for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then
    run plain; run watched --pg-stats --watch-interval "$INTERVAL"
  else
    run watched --pg-stats --watch-interval "$INTERVAL"; run plain
  fi
  echo "round $r of $ROUNDS done" >&2
done

python3 - "$WORK/plain" "$WORK/watched" "$SECS" "$CLIENTS" "$INTERVAL" <<'PY'
import statistics, sys
def rows(p): return [[float(x) for x in l.split()] for l in open(p)]
plain, watched = rows(sys.argv[1]), rows(sys.argv[2])
per = lambda rs: [1e9 * r[0] / r[1] for r in rs]
tps = lambda rs: [r[2] for r in rs]
pp, wp = statistics.median(per(plain)), statistics.median(per(watched))
pt, wt = statistics.median(tps(plain)), statistics.median(tps(watched))
share = [100.0 * r[3] / r[0] for r in watched if r[0] > 0]
print(f"--pg-stats overhead: select-only, {len(plain)} rounds of {sys.argv[3]} s at -c {sys.argv[4]} -j 2, --watch-interval {sys.argv[5]}, one run each way per round")
print(f"  client CPU per transaction: plain {pp:.0f} ns, watched {wp:.0f} ns, ratio {wp / pp:.3f}")
print(f"  tps:                        plain {pt:.0f}, watched {wt:.0f}, ratio {wt / pt:.3f}")
if any(share):
    print(f"  the probe's own thread: median {statistics.median(share):.2f}% of the client's CPU")
PY
