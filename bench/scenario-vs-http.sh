#!/usr/bin/env bash
# What a scenario costs against plain `dyno http` (issue 31's budget: a
# one-step scenario at >= 0.9x plain's req/s and <= 1.1x its client CPU
# per request).
#
# One nginx worker on one CPU serves the 92-byte page; dyno on the other
# CPU loads it for SECONDS, ROUNDS times each way, the ways in rotating
# order:
#   plain    dyno http URL
#   step     dyno http --scenario (one step, the same GET: sent as compiled)
#   checked  the same step with a status check and `contains` on the body
#            (the answer's bytes are kept and read)
#   flow     two steps, the second's URL filled from a regex extraction of
#            the first's answer (a value carried between requests)
# Each run's client CPU (user + system of the whole process, from
# bench/runstat.py) is divided by its answered requests; the ratios are
# of the medians, measured in one run of this script.
#
# Usage: bench/scenario-vs-http.sh [ROUNDS=5] [SECONDS=5] [CONNECTIONS=8]
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs nginx (Debian package) and python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-5}
CONNS=${3:-8}

# shellcheck source=bench/nginx-lib.sh
. bench/nginx-lib.sh
bench_nginx ""
URL="http://127.0.0.1:$PORT"

# scenario NAME [LINE…]: $WORK/NAME.toml, the flow "page" whose first step
# GETs the page, then the LINEs.
scenario() {
  local name=$1; shift
  printf '%s\n' '[[flow]]' 'name = "page"' '[[flow.step]]' 'url = "/hello.html"' "$@" >"$WORK/$name.toml"
}
scenario step
scenario checked 'check = { status = 200, contains = "xxxx" }'
# shellcheck disable=SC2016
scenario flow 'extract = [{ regex = "(x{4})", as = "part" }]' '[[flow.step]]' 'url = "/hello.html?${part}"'

# run NAME [FLAGS…]: one run; appends "cpu_s answered req_per_s" to $WORK/NAME.
run() {
  local name=$1; shift
  pin_client python3 bench/runstat.py "$DYNO" http "$@" -d "${SECS}s" -c "$CONNS" -t 1 --json --no-save \
    >"$WORK/out.json" 2>"$WORK/stat"
  python3 - "$WORK/out.json" "$WORK/stat" >>"$WORK/$name" <<'PY'
import json, re, sys
run = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for x in run["metrics"] if not x.get("labels")}
u, s = (float(v) for v in re.search(r"user_s=(\S+) sys_s=(\S+)", open(sys.argv[2]).read()).groups())
assert m["errors"] == 0, f"{m['errors']} errors"
print(u + s, m["responses"], m["requests_per_sec"])
PY
}

WAYS=(plain step checked flow)
flags() {
  case $1 in
    plain) echo "$URL/hello.html" ;;
    *) echo "--scenario $WORK/$1.toml $URL" ;;
  esac
}
for r in $(seq "$ROUNDS"); do
  for i in 0 1 2 3; do
    way=${WAYS[$(( (i + r) % 4 ))]}
    # shellcheck disable=SC2046
    run "$way" $(flags "$way")
  done
  echo "round $r of $ROUNDS done" >&2
done

python3 - "$WORK" "$ROUNDS" "$SECS" "$CONNS" <<'PY'
import statistics, sys, os
work, rounds, secs, conns = sys.argv[1:]
def rows(name): return [[float(x) for x in l.split()] for l in open(os.path.join(work, name))]
base = rows("plain")
b_rate = statistics.median(r[2] for r in base)
b_cpu = statistics.median(1e9 * r[0] / r[1] for r in base)
print(f"scenario vs plain dyno http: nginx 92-byte page, {rounds} rounds of {secs} s at -c {conns} -t 1, client and server on one CPU each")
print(f"  {'way':8} {'req/s (median)':>15} {'x plain':>8} {'CPU ns/req':>11} {'x plain':>8}")
for name in ("plain", "step", "checked", "flow"):
    rs = rows(name)
    rate = statistics.median(r[2] for r in rs)
    cpu = statistics.median(1e9 * r[0] / r[1] for r in rs)
    print(f"  {name:8} {rate:15.0f} {rate / b_rate:8.3f} {cpu:11.0f} {cpu / b_cpu:8.3f}")
PY
