#!/usr/bin/env bash
# What watching the target costs the load generator (issue 30's budget: at
# most 1% more client CPU per request with --watch-pid and --watch at 1 s).
#
# One nginx worker on one CPU serves the 92-byte page; dyno on the other
# CPU loads it for SECONDS, ROUNDS times plain and ROUNDS times watching
# the worker (--watch-pid) and a real node_exporter (--watch URL) every
# second, the two in alternating order. Each run's client CPU (user +
# system of the whole dyno process, watcher threads included, from
# bench/runstat.py) is divided by its answered requests.
#
# The watching threads also count their own CPU time (watch_client_cpu_ns
# in the run): its share of the whole client's CPU is the same cost seen
# from inside, free of the run-to-run noise of an A/B pair.
#
# Also a cross-check: the server CPU per request dyno attributes to the
# watched worker against the worker's own /proc counters read before and
# after (the watched figure covers the measured window, the /proc one the
# whole command, so it reads a little lower).
#
# Usage: bench/watch-overhead.sh [ROUNDS=5] [SECONDS=10] [CONNECTIONS=8]
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs nginx and prometheus-node-exporter (Debian packages), python3.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
SECS=${2:-10}
CONNS=${3:-8}

# shellcheck source=bench/nginx-lib.sh
. bench/nginx-lib.sh
bench_nginx ""
WORKER=$(pgrep -P "$(cat "$WORK/nginx.pid")" | head -1)
NE_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The exporter lives on the target's CPU, as it would on the target.
taskset -c "$SERVER_CPU" prometheus-node-exporter --web.listen-address="127.0.0.1:$NE_PORT" >"$WORK/ne.log" 2>&1 &
kill_at_exit $!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$NE_PORT/metrics" >/dev/null && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT/hello.html"
WATCH=(--watch-pid "$WORKER" --watch "http://127.0.0.1:$NE_PORT/metrics" --watch-interval 1s)

# run NAME [FLAGS…]: one run; appends "cpu_s requests server_ns truth_ns
# watch_cpu_s" to $WORK/NAME.
run() {
  local name=$1; shift
  local before after
  before=$(nginx_ticks)
  pin_client python3 bench/runstat.py "$DYNO" http "$URL" -d "${SECS}s" -c "$CONNS" --json --no-save "$@" \
    >"$WORK/out.json" 2>"$WORK/stat"
  after=$(nginx_ticks)
  python3 - "$WORK/out.json" "$WORK/stat" "$before" "$after" "$(getconf CLK_TCK)" >>"$WORK/$name" <<'PY'
import json, re, sys
run = json.load(open(sys.argv[1]))
m = {x["name"]: x for x in run["metrics"] if not x.get("labels", {}).get("watched")}
stat = open(sys.argv[2]).read()
u, s = (float(v) for v in re.search(r"user_s=(\S+) sys_s=(\S+)", stat).groups())
answered = m["responses"]["value"]
watched = [x["value"] for x in run["metrics"] if x["name"] == "server_cpu_per_op_ns" and x.get("labels", {}).get("watched") == "nginx"]
truth = (int(sys.argv[4]) - int(sys.argv[3])) / int(sys.argv[5]) * 1e9 / answered
cost = m["watch_client_cpu_ns"]["value"] / 1e9 if "watch_client_cpu_ns" in m else 0.0
print(u + s, answered, watched[0] if watched else "nan", truth, cost)
PY
}

for r in $(seq "$ROUNDS"); do
  if [ $((r % 2)) -eq 1 ]; then run plain; run watched "${WATCH[@]}"; else run watched "${WATCH[@]}"; run plain; fi
  echo "round $r of $ROUNDS done" >&2
done

python3 - "$WORK/plain" "$WORK/watched" "$SECS" "$CONNS" <<'PY'
import statistics, sys
def rows(p): return [[float(x) for x in l.split()] for l in open(p)]
plain, watched = rows(sys.argv[1]), rows(sys.argv[2])
per = lambda rs: [1e9 * r[0] / r[1] for r in rs]
pp, wp = per(plain), per(watched)
print(f"watch overhead: nginx 92-byte page, {len(plain)} rounds of {sys.argv[3]} s at -c {sys.argv[4]}, one run each way per round")
print(f"  client CPU per request, plain:   median {statistics.median(pp):8.0f} ns  (runs: {' '.join(f'{x:.0f}' for x in pp)})")
print(f"  client CPU per request, watched: median {statistics.median(wp):8.0f} ns  (runs: {' '.join(f'{x:.0f}' for x in wp)})")
ratio = statistics.median(wp) / statistics.median(pp)
print(f"  watched / plain: {ratio:.4f}  ({100 * (ratio - 1):+.2f}% client CPU per request; the budget is +1%)")
# The rounds pair a watched run with a plain one run next to it: the
# median of the paired ratios, and a 95% bootstrap interval of it (10,000
# resamples of the rounds, a fixed seed), say whether the difference is
# more than the run-to-run noise.
import random
paired = sorted(w / p for w, p in zip(wp, pp))
rng = random.Random(30)
boot = sorted(statistics.median(rng.choices(paired, k=len(paired))) for _ in range(10000))
lo, hi = boot[250], boot[9749]
print(f"  paired by round: median {paired[len(paired) // 2] if len(paired) % 2 else statistics.median(paired):.4f}, 95% interval {lo:.4f} to {hi:.4f}"
      + ("  (includes 1: no difference this run can tell)" if lo <= 1 <= hi else ""))
print(f"  req/s, plain {statistics.median(r[1] for r in plain) / float(sys.argv[3]):.0f}, watched {statistics.median(r[1] for r in watched) / float(sys.argv[3]):.0f}")
share = [r[4] / r[0] for r in watched]
print(f"  the watching threads' own CPU (watch_client_cpu_ns) / the whole client's: median {100 * statistics.median(share):.3f}%  (runs: {' '.join(f'{100 * x:.3f}' for x in share)})")
ws = [r[2] for r in watched]
ts = [r[3] for r in watched]
print(f"  nginx worker CPU per request: dyno watched {statistics.median(ws):.0f} ns, its /proc before and after {statistics.median(ts):.0f} ns (ratio {statistics.median(ws) / statistics.median(ts):.3f})")
PY
