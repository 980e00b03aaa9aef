#!/usr/bin/env bash
# pgbench and dyno db run against the same PostgreSQL server, side by side.
#
# A throwaway cluster (scripts/pg) holds pgbench's tables at scale SCALE
# (made by dyno db init). For select-only and tpcb-like, in each protocol
# asked for, pgbench and dyno take turns round by round (interleaved, so
# drift of the machine hits both alike) with the same clients, threads and
# duration. Printed per script: tps of each and dyno's ratio, the client's
# CPU time per transaction of each (both measured from outside, by
# bench/runstat.py) and the ratio, and the latency percentiles both report
# (pgbench's from its per-transaction log, -l, since its report has only
# an average), and the user-space share of each tool's CPU (the rest is
# the kernel's: sends, waits, context switches). Issue 13's goals: tps within ±5% of pgbench's, client CPU per
# transaction ≤ 0.8× pgbench's.
#
# Besides the two built-ins, with -M extended or prepared: tpcb-like with
# its statements pipelined (pgbench's own script between \startpipeline and
# \endpipeline against dyno's --pipeline: one round trip a transaction for
# both), and the open model (select-only at -R RATE for both: the achieved
# rate, and latency counted from the schedule).
#
# Usage: bench/db-vs-pgbench.sh [ROUNDS] [SECONDS] [CLIENTS] [THREADS] [PROTOCOLS] [SCALE] [RATE]
#        (default 3 rounds of 10 s, 8 clients on 2 threads, "simple prepared",
#        scale 10, 2000 tps)
# Needs: PostgreSQL's server and pgbench (Debian's postgresql), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-10}
CLIENTS=${3:-8}
THREADS=${4:-2}
PROTOCOLS=${5:-simple prepared}
SCALE=${6:-10}
RATE=${7:-2000}

command -v pgbench >/dev/null || { echo "install PostgreSQL first: apt-get install postgresql" >&2; exit 2; }
# DYNO=path/to/dyno runs that build instead of this checkout's (to
# compare two builds of dyno against the same peer, one after the other).
if [ -z "${DYNO:-}" ]; then
  cargo build --release --quiet
  DYNO=$PWD/target/release/dyno
fi
RUNSTAT="python3 $PWD/bench/runstat.py"

WORK=$(mktemp -d)
PG=$(scripts/pg start)
trap 'scripts/pg stop "$PG"; rm -rf "$WORK"' EXIT
# shellcheck disable=SC1091
. "$PG/env"
export DYNO_HOME=$WORK/home
chmod 777 "$WORK"

"$DYNO" db init --scale "$SCALE" >/dev/null
echo "PostgreSQL $(psql -X -tAc 'SHOW server_version'), scale $SCALE, $CLIENTS clients on $THREADS threads, $SECS s a run, $ROUNDS rounds, $(nproc) CPUs shared by server and clients"

# tpcb-like as pgbench has it, its statements in one pipeline.
cat >"$WORK/tpcb-pipelined.sql" <<'SQL'
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
\startpipeline
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
\endpipeline
SQL

for protocol in $PROTOCOLS; do
  cases="select-only tpcb-like"
  [ "$protocol" = simple ] || cases="$cases tpcb-pipelined select-only@$RATE"
  for script in $cases; do
    # What each tool is given for this case.
    case $script in
      tpcb-pipelined) pg_args=(-f "$WORK/tpcb-pipelined.sql") dyno_args=(-b tpcb-like --pipeline) ;;
      select-only@*) pg_args=(-b select-only -R "$RATE") dyno_args=(-b select-only -R "$RATE") ;;
      *) pg_args=(-b "$script") dyno_args=(-b "$script") ;;
    esac
    for round in $(seq "$ROUNDS"); do
      # pgbench, logging every transaction's latency (µs) to compute its
      # percentiles; run in $WORK so its log lands there.
      rm -f "$WORK"/pgbench_log.*
      (cd "$WORK" && $RUNSTAT pgbench -n "${pg_args[@]}" -M "$protocol" -c "$CLIENTS" -j "$THREADS" -T "$SECS" -l \
        >"$WORK/pgbench.out" 2>"$WORK/pgbench.err")
      cat "$WORK"/pgbench_log.* >"$WORK/pgbench.log"
      python3 - "$WORK" "$script" "$protocol" "$round" pgbench <<'PY' >>"$WORK/results"
import re, sys
work, script, protocol, rnd, tool = sys.argv[1:]
out = open(f"{work}/pgbench.out").read()
tps = float(re.search(r"tps = ([0-9.]+) \(without initial connection time\)", out).group(1))
tx = int(re.search(r"number of transactions actually processed: (\d+)", out).group(1))
err = open(f"{work}/pgbench.err").read()
m = re.search(r"user_s=([0-9.]+) sys_s=([0-9.]+)", err)
cpu = float(m.group(1)) + float(m.group(2))
user = float(m.group(1)) / max(cpu, 1e-9)
lat = sorted(int(line.split()[2]) * 1000 for line in open(f"{work}/pgbench.log") if line.strip())
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else 0
print(script, protocol, rnd, tool, tps, cpu / max(tx, 1) * 1e9, q(0.5), q(0.99), q(0.999), lat[-1] if lat else 0, user)
PY
      $RUNSTAT "$DYNO" db run "${dyno_args[@]}" -M "$protocol" -c "$CLIENTS" -j "$THREADS" -T "$SECS" --no-save --json \
        >"$WORK/dyno.json" 2>"$WORK/dyno.err"
      python3 - "$WORK" "$script" "$protocol" "$round" dyno <<'PY' >>"$WORK/results"
import json, re, sys
work, script, protocol, rnd, tool = sys.argv[1:]
run = json.load(open(f"{work}/dyno.json"))
metric = {m["name"]: m for m in run["metrics"] if not m.get("labels")}
tx = metric["transactions"]["value"]
err = open(f"{work}/dyno.err").read()
m = re.search(r"user_s=([0-9.]+) sys_s=([0-9.]+)", err)
cpu = float(m.group(1)) + float(m.group(2))
user = float(m.group(1)) / max(cpu, 1e-9)
h = metric["latency_ns"]["histogram"]
pct = {float(p["quantile"]) if "quantile" in p else float(p["percentile"]) / 100: p["value"] for p in h.get("percentiles", [])}
def q(x):
    best = min(pct, key=lambda k: abs(k - x)) if pct else None
    return pct[best] if best is not None else 0
print(script, protocol, rnd, tool, metric["transactions_per_sec"]["value"], cpu / max(tx, 1) * 1e9, q(0.5), q(0.99), q(0.999), h.get("max", 0), user)
PY
    done
  done
done

python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def med(xs): return statistics.median(xs)
keys = []
for r in rows:
    if (r[0], r[1]) not in keys: keys.append((r[0], r[1]))
ms = lambda ns: f"{float(ns) / 1e6:.2f}"
for script, protocol in keys:
    sel = [r for r in rows if r[0] == script and r[1] == protocol]
    print(f"\n{script}, -M {protocol}")
    print(f"  {'tool':8}{'tps':>10}{'CPU/tx µs':>11}{'user %':>8}{'p50 ms':>9}{'p99 ms':>9}{'p99.9 ms':>10}{'max ms':>9}")
    fig = {}
    for tool in ("pgbench", "dyno"):
        t = [r for r in sel if r[3] == tool]
        tps = med([float(r[4]) for r in t]); cpu = med([float(r[5]) for r in t])
        fig[tool] = (tps, cpu)
        user = 100 * med([float(r[10]) for r in t])
        print(f"  {tool:8}{tps:10.0f}{cpu / 1e3:11.2f}{user:8.0f}{ms(med([float(r[6]) for r in t])):>9}{ms(med([float(r[7]) for r in t])):>9}{ms(med([float(r[8]) for r in t])):>10}{ms(med([float(r[9]) for r in t])):>9}")
    # Ratios within each round, then their median: drift between rounds
    # does not move them.
    rounds = sorted({r[2] for r in sel})
    tps_r = [float(next(r[4] for r in sel if r[2] == n and r[3] == "dyno")) / float(next(r[4] for r in sel if r[2] == n and r[3] == "pgbench")) for n in rounds]
    cpu_r = [float(next(r[5] for r in sel if r[2] == n and r[3] == "dyno")) / float(next(r[5] for r in sel if r[2] == n and r[3] == "pgbench")) for n in rounds]
    if "@" in script:
        rate = float(script.split("@")[1])
        print("  open model: achieved / requested rate " + ", ".join(
            f"{tool} {fig[tool][0] / rate:.4f}" for tool in ("pgbench", "dyno")) + " (goal: dyno within 1%)")
    print(f"  dyno/pgbench: tps {med(tps_r):.3f}× (rounds {min(tps_r):.3f}–{max(tps_r):.3f}; goal 0.95–1.05), "
          f"client CPU per transaction {med(cpu_r):.3f}× (rounds {min(cpu_r):.3f}–{max(cpu_r):.3f}; goal ≤ 0.8)")
PY
