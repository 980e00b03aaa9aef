#!/usr/bin/env bash
# HTTP/2 side by side: dyno http --h2 and h2load against one nginx worker
# speaking h2c (HTTP/2 with prior knowledge) on loopback.
#
# nginx runs one worker pinned to CPU 0; each client runs alone, pinned to
# CPU 1 (when there are at least 2 CPUs), with the same connections (-c),
# streams per connection (-m) and duration, and the two take turns round by
# round, so drift of the machine hits both alike. Printed per body size
# (the 92-byte page and a 1 MiB file): requests/s, client CPU time per
# request (measured from outside for both, by bench/runstat.py) and the
# medians of dyno's ratios within each round. Also the user-space share of
# each client's CPU, and what serving it cost the nginx worker per request
# (its CPU time from /proc), and how often the client slept and had to be
# woken per request: on loopback the kernel wakes the client from the
# server's side, so a client's read and sleep pattern changes the server's
# work, and with it the req/s a one-worker server reaches.
# Issue 14's goals: dyno's req/s ≥ h2load's, client CPU per request ≤ 0.8×
# h2load's.
#
# Usage: bench/h2-vs-h2load.sh [ROUNDS] [SECONDS] [CONNECTIONS] [STREAMS]
#        (default 3 rounds of 5 s, 10 connections, 10 streams each)
# DYNO=path/to/dyno runs that build instead of this checkout's (to
# compare two builds of dyno against the same peer, one after the other).
# H2_PATHS="1m.bin" runs only the paths named; H2_ROWS=1 also prints every
# round of each tool (req/s, how busy the client was, its wake-ups and
# nginx's CPU per request): how the rounds spread, not just their median
# (dyno's 1 MiB runs fall into a fast and a slow mode, h2load's do not).
# BENCH_SAVE=1 also saves dyno's ratios to h2load (each round's, per path)
# as a dyno run of kind `figures` tagged rev:COMMIT (bench/lib.sh's
# save_figures), for `dyno changes --kind figures --by-commit`.
# Needs: nginx, h2load (nghttp2-client); installs them when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-10}
STREAMS=${4:-10}

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
need_tools "nginx h2load" "nginx-light nghttp2-client" "nginx and nghttp2-client (h2load)"
# http2 on a plain listener: h2c with prior knowledge. keepalive_requests
# also bounds the requests of an HTTP/2 connection (GOAWAY after them).
bench_nginx http2 "http2_max_concurrent_streams 1024;"

# Each runner prints "REQS_PER_SEC CPU_SECONDS MAXRSS_KIB REQUESTS
# USER_SECONDS SERVER_TICKS".
run_dyno() {
  local before; before=$(nginx_ticks)
  pin_client $RUNSTAT "$DYNO" http "http://127.0.0.1:$PORT/$1" --h2 -t1 -c"$CONNS" -m"$STREAMS" -d"${SECS}s" --no-save --json >"$WORK/out" 2>"$WORK/err"
  local server=$(( $(nginx_ticks) - before ))
  python3 - "$WORK/out" "$(cpu_of "$WORK/err")" <<'PY' | tr '\n' ' '
import json, sys
run = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for x in run["metrics"]}
if m.get("status_200", 0) != m["responses"] or m["errors"]:
    sys.exit(f"dyno saw errors or non-200 answers: {run['metrics']}"[:300])
print(f'{m["requests_per_sec"]:.2f} {sys.argv[2]} {int(m["responses"])}')
PY
  echo "$(user_of "$WORK/err") $server $(sleeps_of "$WORK/err")"
}
run_h2load() {
  local before; before=$(nginx_ticks)
  pin_client $RUNSTAT h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$SECS" "http://127.0.0.1:$PORT/$1" >"$WORK/out" 2>"$WORK/err" || true
  local rps reqs
  rps=$(awk '/finished in/{for(i=1;i<=NF;i++) if($i=="req/s,") print $(i-1)}' "$WORK/out")
  reqs=$(awk '/^requests:/{print $8}' "$WORK/out")
  echo "${rps:-0} $(cpu_of "$WORK/err") ${reqs:-0} $(user_of "$WORK/err") $(( $(nginx_ticks) - before )) $(sleeps_of "$WORK/err")"
}

figures_start
echo "nginx (h2c): 1 worker on CPU $SERVER_CPU; clients on CPU $CLIENT_CPU; -c $CONNS -m $STREAMS, ${SECS}s, $ROUNDS interleaved rounds"
for path in ${H2_PATHS:-hello.html 1m.bin}; do
  : > "$WORK/results"
  for round in $(seq "$ROUNDS"); do
    for tool in dyno h2load; do
      echo "$round $tool $(run_$tool "$path")" >> "$WORK/results"
    done
  done
  echo
  echo "== /$path"
    python3 - "$WORK/results" "$SECS" "/$path" <<'PY'
import json, os, statistics, sys
tick = os.sysconf("SC_CLK_TCK")
rows = {}
for line in open(sys.argv[1]):
    rnd, tool, rps, cpu, rss, reqs, user, server, sleeps = line.split()
    n = max(int(float(reqs)), 1)
    if os.environ.get("H2_ROWS"):
        print(f'round {rnd:>3} {tool:7} {float(rps):10.0f} req/s, client busy {float(cpu) / float(sys.argv[2]) * 100:3.0f}%, '
              f'{int(sleeps) / n:6.2f} wake-ups/req, nginx {int(server) / tick / n * 1e6:7.1f} µs/req')
    rows.setdefault(tool, {})[rnd] = (float(rps), float(cpu) / n * 1e6, int(rss),
                                      float(user) / max(float(cpu), 1e-9), int(server) / tick / n * 1e6,
                                      int(sleeps) / n)
print(f'{"tool":8} {"req/s (median)":>15} {"CPU µs/req":>11} {"user %":>7} {"nginx µs/req":>13} {"sleeps/req":>11} {"peak RSS MiB":>13}')
for tool, rs in rows.items():
    v = list(rs.values())
    print(f'{tool:8} {statistics.median(r[0] for r in v):15.0f} {statistics.median(r[1] for r in v):11.2f} '
          f'{statistics.median(r[3] for r in v) * 100:7.0f} {statistics.median(r[4] for r in v):13.1f} '
          f'{statistics.median(r[5] for r in v):11.3f} {max(r[2] for r in v) / 1024:13.1f}')
d, h = rows["dyno"], rows["h2load"]
rps = [d[k][0] / h[k][0] for k in d if h[k][0] > 0]
cpu = [d[k][1] / h[k][1] for k in d if h[k][1] > 0]
if rps and cpu:
    print(f'dyno/h2load: req/s {statistics.median(rps):.3f}x (rounds {min(rps):.3f}-{max(rps):.3f}; goal >= 1), '
          f'CPU per request {statistics.median(cpu):.3f}x (rounds {min(cpu):.3f}-{max(cpu):.3f}; goal <= 0.8)')
    if os.environ.get("FIGURES"):
        with open(os.environ["FIGURES"], "a") as out:
            for name, direction, samples in (("rate_ratio", "higher_is_better", rps),
                                             ("cpu_per_request_ratio", "lower_is_better", cpu)):
                out.write(json.dumps({"name": name, "labels": {"peer": "h2load", "path": sys.argv[3]},
                                      "unit": "ratio", "direction": direction, "samples": samples}) + "\n")
PY
done
save_figures bench/h2-vs-h2load.sh "{\"rounds\": $ROUNDS, \"seconds\": $SECS, \"connections\": $CONNS, \"streams\": $STREAMS, \"paths\": \"${H2_PATHS:-hello.html 1m.bin}\"}"
