#!/usr/bin/env bash
# Two builds of dyno side by side, against the same servers: the guard of
# a change to the load drivers (issue 29: "the same ratios within noise
# before and after"). Each round runs OLD then NEW (then NEW then OLD the
# next round, so drift hits both alike) on:
#
#   http  one nginx worker on CPU 0, the client on CPU 1: the 92-byte page
#         and a 1 MiB file, closed model, 50 connections, one thread;
#   c10k  the page over 10,000 connections, one thread (its peak RSS is
#         the figure to watch);
#   h2    the same page over h2c, 10 connections × 10 streams;
#   h3    one Caddy (GOMAXPROCS=1) on CPU 0: the page and the 1 MiB file
#         over HTTP/3, 2 connections × 8 streams (bench/h3.sh's shape);
#   db    a throwaway PostgreSQL (scripts/pg), pgbench's select-only and
#         tpcb-like, 8 clients on 2 threads, -M prepared;
#   db-rate the open model: select-only at -R RATE (default 2000) a
#         second, the same clients: a wake-up per due time.
#
# Printed per case: each build's median rate, client CPU per request and
# peak RSS (from outside, bench/runstat.py), NEW/OLD for each with the
# spread of the per-round ratios, NEW/OLD of the peak anonymous memory
# (what the client allocated; the peak RSS also counts the pages of its
# own code it touched, which moves with the code's layout), and
# OLD/OLD-style noise: the spread of OLD's own rounds.
#
# Usage: bench/builds-ab.sh OLD NEW [ROUNDS] [SECONDS] [CASES]
#        (default 4 rounds of 4 s, cases "http h2 db"; c10k and db-rate
#        on request)
# Needs: nginx (nginx-light), PostgreSQL's server, caddy for h3; python3.
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=${1:?give the old build: bench/builds-ab.sh OLD NEW}
NEW=${2:?give the new build: bench/builds-ab.sh OLD NEW}
ROUNDS=${3:-4}
SECS=${4:-4}
CASES=${5:-http h2 db}
ulimit -n 30000 2>/dev/null || true

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
bench_workdir

# measure CASE BUILD-NAME BINARY ARGS...: one run; appends
# "CASE BUILD RATE CPU_US_PER_REQUEST PEAK_RSS_KIB PEAK_ANON_KIB".
measure() {
  local case=$1 name=$2; shift 2
  "$@" >"$WORK/out" 2>"$WORK/err"
  python3 - "$WORK/out" "$WORK/err" "$case" "$name" <<'PY' >>"$WORK/results"
import json, re, sys
out, err, case, name = sys.argv[1:]
run = json.load(open(out))
m = {x["name"]: x["value"] for x in run["metrics"] if not x.get("labels")}
rate = m.get("requests_per_sec", m.get("transactions_per_sec"))
done = m.get("responses", m.get("transactions"))
text = open(err).read()
s = re.search(r"user_s=([0-9.]+) sys_s=([0-9.]+) maxrss_kib=([0-9]+)", text)
anon = re.search(r"anon_peak_kib=([0-9]+)", text)
cpu = float(s.group(1)) + float(s.group(2))
print(case, name, rate, cpu / max(done, 1) * 1e6, s.group(3), anon.group(1))
PY
}

rounds() {
  local case=$1; shift
  for round in $(seq "$ROUNDS"); do
    local order="OLD NEW"
    [ $((round % 2)) -eq 0 ] && order="NEW OLD"
    for name in $order; do
      local bin=$OLD
      [ "$name" = NEW ] && bin=$NEW
      measure "$case" "$name" "$@" "$bin"
    done
  done
}

# The command of a case, with the binary last (rounds appends it).
http_case() { pin_client $RUNSTAT "$2" http "http://127.0.0.1:$PORT/$1" -t1 -c50 -d"${SECS}s" --no-save --json; }
c10k_case() { pin_client $RUNSTAT "$1" http "http://127.0.0.1:$PORT/hello.html" -t1 -c10000 -d"${SECS}s" --no-save --json; }
h2_case() { pin_client $RUNSTAT "$1" http "http://127.0.0.1:$PORT/hello.html" --h2 -t1 -c10 -m10 -d"${SECS}s" --no-save --json; }
h3_case() { pin_client $RUNSTAT "$2" http "https://127.0.0.1:$CADDY_PORT/$1" --h3 --insecure -t1 -c2 -m8 -d"${SECS}s" --no-save --json; }
db_case() { $RUNSTAT "$2" db run -b "$1" -M prepared -c 8 -j 2 -T "$SECS" --no-save --json; }
db_rate_case() { $RUNSTAT "$1" db run -b select-only -M prepared -c 8 -j 2 -R "${RATE:-2000}" -T "$SECS" --no-save --json; }

for case in $CASES; do
  case $case in
    http)
      [ -f "$WORK/nginx.pid" ] || start_nginx ""
      for path in hello.html 1m.bin; do
        rounds "http:$path" http_case "$path"
      done
      ;;
    c10k)
      [ -f "$WORK/nginx.pid" ] || start_nginx ""
      rounds "c10k:hello.html" c10k_case
      ;;
    h2)
      kill "$(cat "$WORK/nginx.pid" 2>/dev/null)" 2>/dev/null || true
      sleep 0.5
      start_nginx "http2"
      rounds "h2:hello.html" h2_case
      ;;
    h3)
      if [ -z "${CADDY_PORT:-}" ]; then
        # start_caddy sets PORT, which is nginx's here.
        NGINX_PORT=${PORT:-}
        start_caddy
        CADDY_PORT=$PORT
        PORT=$NGINX_PORT
      fi
      for path in hello.html 1m.bin; do
        rounds "h3:$path" h3_case "$path"
      done
      ;;
    db)
      [ -n "${PG:-}" ] || bench_pg "$NEW"
      for script in select-only tpcb-like; do
        rounds "db:$script" db_case "$script"
      done
      ;;
    db-rate)
      [ -n "${PG:-}" ] || bench_pg "$NEW"
      rounds "db:select-only@${RATE:-2000}" db_rate_case
      ;;
    *) echo "unknown case '$case': give http, c10k, h2, h3, db or db-rate" >&2; exit 2 ;;
  esac
done

ab_report "$WORK/results" "$ROUNDS rounds of ${SECS}s, alternating; client on CPU $CLIENT_CPU for http, h2 and h3" <<'PY'
import statistics
rows = {case: {name: [(float(rate), float(cpu), float(rss) / 1024, float(anon) / 1024)
                      for rate, cpu, rss, anon in runs]
               for name, runs in by.items()} for case, by in rows.items()}
print(f'{"case":18} {"OLD rate":>10} {"NEW rate":>10} {"OLD µs":>8} {"NEW µs":>8} {"OLD MiB":>8} {"NEW MiB":>8} '
      f'{"anon MiB":>15}  NEW/OLD rate (rounds)   NEW/OLD CPU (rounds)   NEW/OLD RSS   NEW/OLD anon   OLD CPU spread')
for case, by in rows.items():
    old, new = by["OLD"], by["NEW"]
    med = lambda xs, i: statistics.median(x[i] for x in xs)
    ratios = lambda i: [n[i] / o[i] for o, n in zip(old, new)]
    rr, rc, rm, ra = ratios(0), ratios(1), ratios(2), ratios(3)
    spread = max(x[1] for x in old) / min(x[1] for x in old) - 1
    print(f'{case:18} {med(old,0):10.0f} {med(new,0):10.0f} {med(old,1):8.2f} {med(new,1):8.2f} '
          f'{med(old,2):8.1f} {med(new,2):8.1f} {med(old,3):7.1f} {med(new,3):7.1f}  '
          f'{statistics.median(rr):.3f} ({min(rr):.3f}–{max(rr):.3f})    '
          f'{statistics.median(rc):.3f} ({min(rc):.3f}–{max(rc):.3f})    '
          f'{statistics.median(rm):.3f}         {statistics.median(ra):.3f}          ±{100*spread/2:.1f}%')
PY
