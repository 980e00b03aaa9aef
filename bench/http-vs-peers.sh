#!/usr/bin/env bash
# Side-by-side HTTP load generators against one nginx worker on loopback.
#
# nginx runs one worker pinned to CPU 0; each generator runs alone, pinned to
# CPU 1 (when there are at least 2 CPUs), with the same connections and
# duration, and the tools take turns round by round (interleaved) so drift of
# the machine hits them alike. Printed: requests/s, client CPU time per
# request and peak RSS for each tool, and dyno's ratio to wrk, per body size.
# A second part checks the open model: dyno at a fixed rate below capacity
# must achieve the requested rate within 1%.
#
# Usage: bench/http-vs-peers.sh [ROUNDS] [SECONDS] [CONNECTIONS]
# DYNO=path/to/dyno runs that build instead of this checkout's (to
# compare two builds of dyno against the same peer, one after the other).
# Needs: nginx wrk ab (apache2-utils); optional h2load (nghttp2-client), oha.
# Installs missing Debian packages when run as root.
# BENCH_SAVE=1 also saves dyno's ratios to wrk (each round's, per body
# size) as a dyno run of kind `figures` tagged rev:COMMIT (bench/lib.sh's
# save_figures), for `dyno changes --kind figures --by-commit`.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-50}

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
need_tools "nginx wrk ab" "nginx-light wrk apache2-utils nghttp2-client" "nginx, wrk and apache2-utils"
bench_nginx ""
ulimit -n 30000 2>/dev/null || true

# Each runner prints "REQS_PER_SEC CPU_SECONDS MAXRSS_KIB REQUESTS".
run_wrk() {
  pin_client $RUNSTAT wrk -t1 -c"$CONNS" -d"${SECS}s" "http://127.0.0.1:$PORT/$1" >"$WORK/out" 2>"$WORK/err"
  local rps reqs; rps=$(awk '/Requests\/sec:/{print $2}' "$WORK/out"); reqs=$(awk '/requests in/{print $1}' "$WORK/out")
  echo "$rps $(cpu_of "$WORK/err") $reqs"
}
run_dyno() {
  pin_client $RUNSTAT "$DYNO" http "http://127.0.0.1:$PORT/$1" -t1 -c"$CONNS" -d"${SECS}s" --no-save --json >"$WORK/out" 2>"$WORK/err"
  python3 - "$WORK/out" "$(cpu_of "$WORK/err")" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for x in run["metrics"]}
if m.get("status_200", 0) != m["responses"]:
    sys.exit(f"dyno saw non-200 answers: {run['metrics']}"[:300])
print(f'{m["requests_per_sec"]:.2f} {sys.argv[2]} {int(m["responses"])}')
PY
}
run_ab() {
  # ab cannot run for a time alone: give it a large count and a time limit.
  pin_client $RUNSTAT ab -k -q -c "$CONNS" -t "$SECS" -n 100000000 "http://127.0.0.1:$PORT/$1" >"$WORK/out" 2>"$WORK/err" || true
  local rps reqs; rps=$(awk '/Requests per second:/{print $4}' "$WORK/out"); reqs=$(awk '/Complete requests:/{print $3}' "$WORK/out")
  echo "${rps:-0} $(cpu_of "$WORK/err") ${reqs:-0}"
}
run_h2load() {
  pin_client $RUNSTAT h2load --h1 -t1 -c"$CONNS" -D"$SECS" "http://127.0.0.1:$PORT/$1" >"$WORK/out" 2>"$WORK/err" || true
  local rps reqs; rps=$(awk '/finished in/{for(i=1;i<=NF;i++) if($i=="req/s,") print $(i-1)}' "$WORK/out"); reqs=$(awk '/^requests:/{print $4}' "$WORK/out")
  echo "${rps:-0} $(cpu_of "$WORK/err") ${reqs:-0}"
}
run_oha() {
  pin_client $RUNSTAT oha --no-tui -c "$CONNS" -z "${SECS}s" --output-format json "http://127.0.0.1:$PORT/$1" >"$WORK/out" 2>"$WORK/err" || true
  python3 - "$WORK/out" "$(cpu_of "$WORK/err")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["summary"]
print(f'{r["requestsPerSec"]:.2f} {sys.argv[2]} {int(r["requestsPerSec"]*r["total"])}')
PY
}

TOOLS="dyno wrk ab"
need h2load && TOOLS="$TOOLS h2load"
need oha && TOOLS="$TOOLS oha"

figures_start
echo "nginx: 1 worker on CPU $SERVER_CPU; clients on CPU $CLIENT_CPU; $CONNS connections, ${SECS}s, $ROUNDS interleaved rounds"
for path in hello.html 1m.bin; do
  : > "$WORK/results"
  for round in $(seq "$ROUNDS"); do
    for tool in $TOOLS; do
      echo "$tool $(run_$tool "$path")" >> "$WORK/results"
    done
  done
  echo
  echo "== /$path"
  python3 - "$WORK/results" "/$path" <<'PY'
import json, os, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, rps, cpu, rss, reqs = line.split()
    rows.setdefault(tool, []).append((float(rps), float(cpu), int(rss), int(float(reqs))))
med = {}
print(f'{"tool":8} {"req/s (median)":>15} {"CPU µs/req":>11} {"peak RSS MiB":>13}')
for tool, rs in rows.items():
    rps = statistics.median(r[0] for r in rs)
    cpu = statistics.median(r[1] / max(r[3], 1) * 1e6 for r in rs)
    rss = max(r[2] for r in rs) / 1024
    med[tool] = (rps, cpu, rss)
    print(f'{tool:8} {rps:15.0f} {cpu:11.2f} {rss:13.1f}')
if "dyno" in med and "wrk" in med and med["wrk"][0] > 0:
    d, w = med["dyno"], med["wrk"]
    print(f'dyno/wrk: req/s {d[0]/w[0]:.3f}x, CPU per request {d[1]/w[1]:.3f}x, peak RSS {d[2]/w[2]:.3f}x')
    if os.environ.get("FIGURES"):
        # Each round's ratio: the tools took turns within it.
        pairs = [(a, b) for a, b in zip(rows["dyno"], rows["wrk"]) if b[0] > 0 and b[1] > 0]
        cpu = lambda r: r[1] / max(r[3], 1)
        with open(os.environ["FIGURES"], "a") as out:
            for name, direction, samples in (
                    ("rate_ratio", "higher_is_better", [a[0] / b[0] for a, b in pairs]),
                    ("cpu_per_request_ratio", "lower_is_better", [cpu(a) / cpu(b) for a, b in pairs])):
                out.write(json.dumps({"name": name, "labels": {"peer": "wrk", "path": sys.argv[2]},
                                      "unit": "ratio", "direction": direction, "samples": samples}) + "\n")
PY
done
save_figures bench/http-vs-peers.sh "{\"rounds\": $ROUNDS, \"seconds\": $SECS, \"connections\": $CONNS}"

echo
echo "== peak RSS at 10,000 open connections (${SECS}s each)"
for tool in dyno wrk; do
  if [ "$tool" = dyno ]; then
    pin_client $RUNSTAT "$DYNO" http "http://127.0.0.1:$PORT/hello.html" -t1 -c10000 -d"${SECS}s" --no-save --json >/dev/null 2>"$WORK/err" || true
  else
    pin_client $RUNSTAT wrk -t1 -c10000 -d"${SECS}s" "http://127.0.0.1:$PORT/hello.html" >/dev/null 2>"$WORK/err" || true
  fi
  echo "$tool $(awk -F'[ =]' '/^runstat:/{printf "%.1f MiB", $7/1024}' "$WORK/err")"
done

echo
echo "== open model: requested vs achieved rate"
CAP=$(run_dyno hello.html | awk '{print $1}')
for frac in 0.25 0.5; do
  RATE=$(python3 -c "print(int($CAP*$frac))")
  pin_client "$DYNO" http "http://127.0.0.1:$PORT/hello.html" -t1 -c"$CONNS" -d"${SECS}s" --rate "$RATE" --no-save --json >"$WORK/out" 2>/dev/null || true
  python3 - "$WORK/out" "$RATE" <<'PY'
import json, sys
m = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))["metrics"]}
want = float(sys.argv[2])
got = m["requests_per_sec"]
print(f'requested {want:.0f} req/s, achieved {got:.0f} req/s ({100*(got/want-1):+.2f}%), late sends {int(m.get("late_sends",0))}, dropped {int(m.get("dropped_sends",0))}')
PY
done
