#!/usr/bin/env bash
# Capacity search against a server of known capacity, side by side with
# what a user does by hand today: a wrk2-style sweep of fixed rates, read
# for the highest one whose p99 meets the target, over the same budget.
#
# The server is dyno serve's /cpu/<us> on one thread pinned to CPU 0: it
# serves one such request at a time after <us> microseconds of CPU, so its
# capacity is at most 1,000,000/<us> per second (less its own handling).
# The truth it is held to is measured here too: the closed-model maximum
# (-c 50 for 10 s), the most it can answer at any latency.
#
# Printed: the truth, the search's answer and bracket, the sweep's answer,
# each one's error against the truth and the time it took; then a slow
# target's row: dyno serve's /delay/100 (every answer 100 ms late, on a
# timer), whose truth is what the connections carry (50 connections ÷
# 100 ms = 500 req/s, measured by the closed model), searched under
# p99<=1s, where a step's answers still under way at its end are a tenth
# of a second's worth of its requests.
#
# Usage: bench/capacity.sh [US] [TARGET] [BUDGET_SECONDS] [STEP_SECONDS]
#        defaults 2000 (500 req/s), p99<=20ms, 120, 5
set -euo pipefail
cd "$(dirname "$0")/.."
US=${1:-2000}
TARGET=${2:-p99<=20ms}
BUDGET=${3:-120}
STEP=${4:-5}
cargo build --release --quiet
DYNO=${DYNO:-$PWD/target/release/dyno}
# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
WORK=$(mktemp -d)
export DYNO_HOME=$WORK/home
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c "$SERVER_CPU" "$DYNO" serve --addr "127.0.0.1:$PORT" --threads 1 >"$WORK/serve.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 50); do curl -fs "http://127.0.0.1:$PORT/hello" >/dev/null 2>&1 && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT/cpu/$US"

echo "server: dyno serve /cpu/$US on CPU $SERVER_CPU (at most $((1000000 / US)) req/s); client on CPU $CLIENT_CPU"
pin_client "$DYNO" http "$URL" -c 50 -t 1 -d 10s --no-save --json >"$WORK/closed.json" 2>/dev/null
TRUTH=$(python3 -c "import json,sys; m={x['name']:x['value'] for x in json.load(open(sys.argv[1]))['metrics']}; print(m['requests_per_sec'])" "$WORK/closed.json")
printf 'truth: %.1f req/s at most (closed model, 50 connections, 10 s)\n\n' "$TRUTH"

START=$(date +%s.%N)
pin_client "$DYNO" http "$URL" -c 50 -t 1 --find-max --slo "$TARGET" --step "${STEP}s" \
  --budget "${BUDGET}s" --no-save --json >"$WORK/search.json" 2>"$WORK/search.err"
SEARCH_SECS=$(python3 -c "import time,sys; print(time.time()-float(sys.argv[1]))" "$START")
grep '^step' "$WORK/search.err" || true

# The sweep: as many fixed rates as the same budget holds (each a step of
# the same length and warm-up), evenly from 1/N to 2x the truth's
# neighbourhood a user would guess from the nominal capacity.
N=$(python3 -c "print(max(2, int($BUDGET // ($STEP + 1))))")
TOP=$(( 2 * 1000000 / US ))
: >"$WORK/sweep"
START=$(date +%s.%N)
for i in $(seq "$N"); do
  RATE=$(python3 -c "print(round($TOP * $i / $N))")
  pin_client "$DYNO" http "$URL" -c 50 -t 1 --rate "$RATE" -d "${STEP}s" --warmup 1s --no-save --json \
    >"$WORK/rate.json" 2>/dev/null || true
  python3 - "$WORK/rate.json" "$RATE" >>"$WORK/sweep" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
lat = next(m for m in run["metrics"] if m["name"] == "latency_ns")
p99 = next((p["value"] for p in lat.get("histogram", {}).get("percentiles", []) if abs(p["percentile"] - 99.0) < 1e-9), None)
print(sys.argv[2], p99 if p99 is not None else "nan")
PY
done
SWEEP_SECS=$(python3 -c "import time,sys; print(time.time()-float(sys.argv[1]))" "$START")

python3 - "$WORK/search.json" "$WORK/sweep" "$TRUTH" "$TARGET" "$SEARCH_SECS" "$SWEEP_SECS" <<'PY'
import json, re, sys
search, sweep, truth, target = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
ssecs, wsecs = float(sys.argv[5]), float(sys.argv[6])
limit_ms = float(re.search(r"p99<=([0-9.]+)ms", target).group(1))
cap = json.load(open(search))["settings"]["capacity"]
a = cap["answer"]
print()
fmt = lambda x: "–" if x is None else f"{x:.1f}"
print(f'search: {a["outcome"]}, max {fmt(a.get("max_rate"))} req/s, above {fmt(a.get("above_rate"))} req/s, '
      f'{len(cap["steps"])} steps in {ssecs:.0f} s')
if a.get("max_rate"):
    print(f'search / truth: {a["max_rate"] / truth:.3f}')
best = None
rows = [l.split() for l in open(sweep)]
for rate, p99 in rows:
    ok = p99 != "nan" and float(p99) / 1e6 <= limit_ms
    print(f'  sweep {float(rate):7.0f} req/s: p99 {float(p99)/1e6 if p99 != "nan" else float("nan"):9.2f} ms {"pass" if ok else "fail"}')
    if ok:
        best = max(best or 0, float(rate))
print(f'sweep: max {best} req/s (resolution {float(rows[1][0]) - float(rows[0][0]):.0f} req/s), {len(rows)} rates in {wsecs:.0f} s')
if best:
    print(f'sweep / truth: {best / truth:.3f}')
PY

# The slow target: its capacity is the connections' (each answer waits
# 100 ms on a timer), so the truth is the closed model's rate at the
# same connections.
SLOW="http://127.0.0.1:$PORT/delay/100"
pin_client "$DYNO" http "$SLOW" -c 50 -t 1 -d 10s --no-save --json >"$WORK/slow-closed.json" 2>/dev/null
SLOW_TRUTH=$(python3 -c "import json,sys; m={x['name']:x['value'] for x in json.load(open(sys.argv[1]))['metrics']}; print(m['requests_per_sec'])" "$WORK/slow-closed.json")
START=$(date +%s.%N)
pin_client "$DYNO" http "$SLOW" -c 50 -t 1 --find-max --slo 'p99<=1s' --step "${STEP}s" \
  --budget "${BUDGET}s" --no-save --json >"$WORK/slow.json" 2>"$WORK/slow.err" || true
SLOW_SECS=$(python3 -c "import time,sys; print(time.time()-float(sys.argv[1]))" "$START")
echo
echo "slow target: /delay/100, 50 connections, p99<=1s"
grep '^step' "$WORK/slow.err" || true
python3 - "$WORK/slow.json" "$SLOW_TRUTH" "$SLOW_SECS" <<'PY'
import json, sys
truth, secs = float(sys.argv[2]), float(sys.argv[3])
try:
    cap = json.load(open(sys.argv[1]))["settings"]["capacity"]
except (ValueError, KeyError):
    print(f"slow truth: {truth:.1f} req/s; the search saved no run")
    sys.exit()
a = cap["answer"]
fmt = lambda x: "–" if x is None else f"{x:.1f}"
print(f'slow truth: {truth:.1f} req/s (closed model, 50 connections, 10 s)')
print(f'slow search: {a["outcome"]}, max {fmt(a.get("max_rate"))} req/s, above {fmt(a.get("above_rate"))} req/s, '
      f'{len(cap["steps"])} steps in {secs:.0f} s')
if a.get("max_rate"):
    print(f'slow search / truth: {a["max_rate"] / truth:.3f}')
PY
