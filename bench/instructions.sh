#!/usr/bin/env bash
# Two builds' user-space instructions per request or transaction, counted
# by valgrind's callgrind: the half of the guard that noise cannot move.
# CPU time on this shared 2-core machine swings ±10-20% from round to
# round (bench/builds-ab.sh states its own spread), so a regression of a
# few hundred instructions per transaction hides in it; an instruction
# count does not. What it cannot see is the kernel's share (system calls,
# wake-ups), which bench/builds-ab.sh measures.
#
# Each build runs each case twice, with N and 2N requests (or
# transactions); the difference of the two counts over N is the cost of
# one more request, without start-up and the report. Printed per case:
# OLD's and NEW's instructions per request outside the event loop's wait
# and NEW/OLD, then the wait's own instructions per request (tokio's
# park and the wake-ups it hands out), apart, since how often a client
# parks depends on timing: a faster client finds its answer not there
# yet more often. Even outside the wait the count moves with timing (a
# wake-up's own work is counted there): over five runs on a quiet
# machine the same db1b4fe build gave select-only 3,809-3,940 (±2%), and
# the page moved ±3%; beside other work on the machine, more. A
# difference inside that band is noise; name the functions that grew
# with callgrind_annotate before believing a smaller one.
#
# Cases: db (pgbench's select-only and tpcb-like, -M prepared, 4 clients
# on one thread, against a throwaway PostgreSQL), db-rate (select-only in
# the open model, -R RATE, default 500 a second, N and 2N transactions at
# that rate: the wake-up per due time that the closed model does not
# have), http (the 92-byte page
# from one nginx worker, 10 connections, one thread), http-1m (a 1 MiB
# body, N/10 and 2N/10 requests: the per-byte work of reading a body)
# and h2 (the same page over h2c, 2 connections × 10 streams).
#
# Usage: bench/instructions.sh OLD NEW [CASES] [N]
#        (default cases "db http h2", N 10000; RATE=500 for db-rate)
# Needs: valgrind, nginx (nginx-light), PostgreSQL's server; python3.
# Installs valgrind when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?give the old build: bench/instructions.sh OLD NEW}
NEW=${2:?give the new build: bench/instructions.sh OLD NEW}
CASES=${3:-db http h2}
N=${4:-10000}
case $N in '' | *[!0-9]*) echo "N must be a whole number of requests, not '$N'" >&2; exit 2 ;; esac

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
need_tools valgrind valgrind valgrind
bench_workdir

# count CASE NAME REQUESTS COMMAND...: appends "CASE NAME REQUESTS
# INSTRUCTIONS" for one run of COMMAND under callgrind; a run whose JSON
# record shows errors stops the script, since its count would mislead.
count() {
  local case=$1 name=$2 requests=$3; shift 3
  valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" "$@" >"$WORK/out" 2>"$WORK/err" || {
    echo "$case: $name failed under valgrind:" >&2; tail -5 "$WORK/err" >&2; exit 1
  }
  python3 - "$WORK/out" "$WORK/err" "$case" "$name" "$requests" <<'PY' >>"$WORK/results"
import json, re, sys
out, err, case, name, requests = sys.argv[1:]
m = {x["name"]: x["value"] for x in json.load(open(out))["metrics"] if not x.get("labels")}
done = m.get("responses", m.get("transactions"))
bad = m.get("errors", 0) + m.get("failed_transactions", 0)
if done != int(requests) or bad:
    sys.exit(f"{case} {name}: {done} of {requests} done, {bad} failed; not counted")
total = re.search(r"Collected : (\d+)", open(err).read())
print(case, name, requests, total.group(1), end=" ")
PY
  # The event loop's wait (tokio's park, with the wake-ups it hands out),
  # inclusive: how often a client parks per request depends on timing (a
  # faster client finds its answer not there yet more often), so it is
  # counted apart.
  callgrind_annotate --inclusive=yes --auto=no "$WORK/cg.out" 2>/dev/null |
    awk '/current_thread::Context::park \[/ { gsub(",", "", $1); park += $1 } END { print park + 0 }' >>"$WORK/results"
}

# pair CASE COMMAND-BUILDER: both builds, N and 2N each.
pair() {
  local case=$1 builder=$2
  for name in OLD NEW; do
    local bin=$OLD
    [ "$name" = NEW ] && bin=$NEW
    for n in "$N" $((2 * N)); do
      count "$case" "$name" "$n" $($builder "$bin" "$n")
    done
  done
}

db_cmd() { echo "$1 db run -b $SCRIPT -M prepared -c 1 -j 1 -t $2 --no-save --json"; }
db_rate_cmd() { echo "$1 db run -b select-only -M prepared -c 1 -j 1 -t $2 -R ${RATE:-500} --no-save --json"; }
http_cmd() { echo "$1 http http://127.0.0.1:$PORT/hello.html -t1 -c1 -n $2 --no-save --json"; }
http_1m_cmd() { echo "$1 http http://127.0.0.1:$PORT/1m.bin -t1 -c1 -n $2 --no-save --json"; }
h2_cmd() { echo "$1 http http://127.0.0.1:$PORT/hello.html --h2 -t1 -c2 -m10 -n $2 --no-save --json"; }

for case in $CASES; do
  case $case in
    db)
      [ -n "$PG" ] || bench_pg "$NEW"
      for SCRIPT in select-only tpcb-like; do
        pair "db:$SCRIPT" db_cmd
      done
      ;;
    db-rate)
      [ -n "$PG" ] || bench_pg "$NEW"
      pair "db:select-only@${RATE:-500}" db_rate_cmd
      ;;
    http)
      start_nginx ""
      pair "http:hello.html" http_cmd
      kill "$(cat "$WORK/nginx.pid")"; rm -f "$WORK/nginx.pid"; sleep 0.5
      ;;
    http-1m)
      start_nginx ""
      N=$((N / 10)) pair "http:1m.bin" http_1m_cmd
      kill "$(cat "$WORK/nginx.pid")"; rm -f "$WORK/nginx.pid"; sleep 0.5
      ;;
    h2)
      start_nginx "http2"
      pair "h2:hello.html" h2_cmd
      kill "$(cat "$WORK/nginx.pid")"; rm -f "$WORK/nginx.pid"; sleep 0.5
      ;;
    *) echo "unknown case '$case': give db, db-rate, http, http-1m or h2" >&2; exit 2 ;;
  esac
done

ab_report "$WORK/results" "user-space instructions per request (callgrind; the cost of N=$N more requests over N)" <<'PY'
print("outside the wait: all but the event loop's park; the wait: the park, with the")
print("wake-ups it hands out, which depends on timing as much as on the build")
print(f'{"case":18} {"OLD":>8} {"NEW":>8}  NEW/OLD   {"wait OLD":>8} {"wait NEW":>8}')
for case, by in rows.items():
    per, wait = {}, {}
    for name, lines in by.items():
        runs = {int(n): (int(total), int(park)) for n, total, park in lines}
        (n1, (t1, p1)), (n2, (t2, p2)) = sorted(runs.items())
        per[name] = ((t2 - p2) - (t1 - p1)) / (n2 - n1)
        wait[name] = (p2 - p1) / (n2 - n1)
    print(f'{case:18} {per["OLD"]:8.0f} {per["NEW"]:8.0f}  {per["NEW"] / per["OLD"]:.3f}    '
          f'{wait["OLD"]:8.0f} {wait["NEW"]:8.0f}')
PY
