#!/usr/bin/env bash
# `dyno http --replay` against nginx (issue 49): what replaying a log costs
# the client, and whether the replay keeps the log's timing.
#
# 1. CPU per request, replay vs plain: a combined-format log of LINES lines
#    over a few static files nginx serves (every answer a 200), its stamps
#    1,000 to a second and replayed at --speed 1000, so that the run goes
#    as fast as nginx and the client allow, not at the log's pace; then
#    plain `dyno http --url-file` with the same URLs (the log's paths repeat
#    a sequence of 1,000, the URL file holds it, -n LINES: the same
#    requests in the same order), closed model; and, to tell reading the
#    log from the open model's own cost, the same plain run at --rate
#    1,000,000 (the replay's requested rate, far past what nginx answers).
#    All on 16 connections, one thread, the client pinned to one CPU and
#    nginx's one worker to another; the client's CPU time (user + sys,
#    bench/runstat.py) over the requests answered, ROUNDS interleaved
#    rounds, and the ratios within each round (target for replay/plain
#    <= 1.10). Also the replay's peak RSS for the whole log and for its
#    first tenth, replayed in the same rounds: the two should be about the
#    same (the log is read as it is sent, never held whole; what grows
#    does so with the run's seconds, per-second histograms, as in the
#    plain runs beside it).
# 2. Timing honesty: nginx logs ('$msec "$request" $status') a known
#    workload of bursts and gaps sent by `dyno http --rate-plan`; that log
#    is replayed at speeds 1 and 4 against another server of the same
#    nginx, which logs the same way. Printed: whether the two logs hold the
#    same multiset of request lines, their per-second profiles side by side
#    (the replay's stamps from its first, times the speed; the original's
#    from its first) with the total absolute difference in percent of the
#    requests (target <= 1%), and dyno's send lag p50/p99 (target p99 < 1 ms).
#
# Usage: bench/replay.sh [LINES] [ROUNDS]   (default 1,000,000 and 3)
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs: nginx (nginx-light). Installs it when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-1000000}
ROUNDS=${2:-3}
CONNS=16
PLAN='50@1s,400@1s,20@2s,300@1s'

# shellcheck source=bench/nginx-lib.sh disable=SC1091
. "$PWD/bench/nginx-lib.sh"
need_tools "nginx" "nginx-light" "nginx"
ulimit -n 30000 2>/dev/null || true

# Part 2's servers beside part 1's (which logs nothing): the original, and
# one replay target per speed, each logging to its own file in $WORK.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ORIG_PORT=$(free_port); R1_PORT=$(free_port); R4_PORT=$(free_port)
# shellcheck disable=SC2016 # nginx's variables, not the shell's
TIMED='$msec "$request" $status'
timed_server() { # PORT LOG
  echo "server { listen 127.0.0.1:$1; root $WORK/www; access_log $WORK/$2 timed; }"
}
dyno_build
bench_workdir
start_nginx "" "log_format timed '$TIMED'; $(timed_server "$ORIG_PORT" orig.log) $(timed_server "$R1_PORT" replay-1.log) $(timed_server "$R4_PORT" replay-4.log)"
for f in index a b c d e; do echo "<html><body>$f</body></html>" >"$WORK/www/$f.html"; done
chmod -R a+rX "$WORK/www"

# The paths the logs hold: all exist, "/" is index.html.
PATHS='/ /index.html /hello.html /a.html /b.html /c.html /d.html /e.html /a.html?page=2 /b.html?q=x'

# write_log LINES LOG URLS: a combined-format log of LINES requests over
# $PATHS, 1,000 stamped with each second, whose paths repeat a random
# sequence of 1,000; and that sequence as URLs of part 1's server, one per
# line, so that `--url-file URLS -n LINES` (round-robin) sends the log's
# requests in the log's order without loading a file of LINES URLs first
# (that costs the plain run about 2 µs and 0.8 KiB per URL).
write_log() {
  python3 - "$1" "$2" "$3" "http://127.0.0.1:$PORT" "$PATHS" <<'PY'
import random, sys, time
n, log, urls, base, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split()
rng = random.Random(49)
cycle = [rng.choice(paths) for _ in range(1000)]
with open(urls, "w") as uf:
    uf.writelines(base + path + "\n" for path in cycle)
t = 1_700_000_000
with open(log, "w") as lf:
    for i in range(n):
        if i % 1000 == 0:
            stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t + i // 1000))
        lf.write(f'10.0.{rng.randint(0,255)}.{rng.randint(1,254)} - - [{stamp}] "GET {cycle[i % 1000]} HTTP/1.1" 200 {rng.randint(30,400)} "-" "Mozilla/5.0 (X11; Linux x86_64)"\n')
PY
}

# check_run JSON WANT: prints "RESPONSES SEND_LAG_P50_NS SEND_LAG_P99_NS"
# from a run's JSON, or exits when not all WANT requests were answered 200.
check_run() {
  python3 - "$1" "$2" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
m = {x["name"]: x for x in run["metrics"] if not x.get("labels")}
value = lambda name: int(m[name]["value"]) if name in m else 0
if value("responses") != want or value("status_200") != want:
    sys.exit(f"{sys.argv[1]}: {value('responses')} answers, {value('status_200')} of them 200, of {want} requests")
lag = {p["percentile"]: p["value"] for p in m.get("send_lag_ns", {}).get("histogram", {}).get("percentiles", [])}
print(value("responses"), int(lag.get(50.0, 0)), int(lag.get(99.0, 0)))
PY
}

# Each runner prints "CPU_SECONDS MAXRSS_KIB RESPONSES".
# ($RUNSTAT is a command and its argument: split on purpose.)
# shellcheck disable=SC2086
run_replay() { # LOG LINES
  # The log is read into the page cache first, outside the measured
  # process: on this VM a file's first read after a while costs ~1 µs a
  # line in the kernel (0.33 s for a 35 MB log that `cat` then reads in
  # 0.02 s), which is the machine's, not the client's.
  cat "$1" >/dev/null
  pin_client $RUNSTAT "$DYNO" http "http://127.0.0.1:$PORT/" --replay "$1" --log-format combined --speed 1000 \
    -t1 -c"$CONNS" --no-save --json >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  local answered
  answered=$(check_run "$WORK/out" "$2") || exit 1
  echo "$(cpu_of "$WORK/err") ${answered%% *}"
}
# shellcheck disable=SC2086
run_plain() { # URLS LINES [--rate R]
  cat "$1" >/dev/null
  pin_client $RUNSTAT "$DYNO" http --url-file "$1" -n "$2" "${@:3}" \
    -t1 -c"$CONNS" --no-save --json >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  local answered
  answered=$(check_run "$WORK/out" "$2") || exit 1
  echo "$(cpu_of "$WORK/err") ${answered%% *}"
}

TENTH=$((LINES / 10))
write_log "$LINES" "$WORK/access.log" "$WORK/urls"
head -n "$TENTH" "$WORK/access.log" >"$WORK/access-tenth.log"

echo "nginx: 1 worker on CPU $SERVER_CPU; client on CPU $CLIENT_CPU, 1 thread, $CONNS connections; $ROUNDS interleaved rounds"
echo
echo "== CPU per request: --replay of $LINES log lines (--speed 1000) vs --url-file -n $LINES"
for round in $(seq "$ROUNDS"); do
  replay=$(run_replay "$WORK/access.log" "$LINES")
  plain=$(run_plain "$WORK/urls" "$LINES")
  open=$(run_plain "$WORK/urls" "$LINES" --rate 1000000)
  tenth=$(run_replay "$WORK/access-tenth.log" "$TENTH")
  printf 'replay %s %s\nplain %s %s\nopen %s %s\ntenth %s %s\n' \
    "$round" "$replay" "$round" "$plain" "$round" "$open" "$round" "$tenth" >>"$WORK/results"
done
python3 - "$WORK/results" "$LINES" "$TENTH" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    kind, rnd, cpu, rss, reqs = line.split()
    rows.setdefault(kind, {})[int(rnd)] = (float(cpu), int(rss), int(reqs))
us = lambda r: r[0] / max(r[2], 1) * 1e6
print(f'CPU µs per request: replay; plain (closed); plain --rate (open); ratios within the round')
print(f'{"round":>5} {"replay":>8} {"plain":>8} {"open":>8} {"replay/plain":>13} {"replay/open":>12}')
ratios, open_ratios = [], []
for rnd in sorted(rows["replay"]):
    a, b, c = rows["replay"][rnd], rows["plain"][rnd], rows["open"][rnd]
    ratios.append(us(a) / us(b))
    open_ratios.append(us(a) / us(c))
    print(f'{rnd:>5} {us(a):8.2f} {us(b):8.2f} {us(c):8.2f} {ratios[-1]:12.3f}x {open_ratios[-1]:11.3f}x')
print(f'median replay/plain CPU per request: {statistics.median(ratios):.3f}x (target <= 1.10); '
      f'replay/open {statistics.median(open_ratios):.3f}x')
rss = lambda kind: max(r[1] for r in rows[kind].values()) / 1024
print(f'peak RSS: replay of {int(sys.argv[2]):,} lines {rss("replay"):.1f} MiB, of {int(sys.argv[3]):,} lines {rss("tenth"):.1f} MiB '
      f'({rss("replay") / rss("tenth"):.2f}x); plain {rss("plain"):.1f} MiB, open {rss("open"):.1f} MiB')
PY

echo
echo "== timing honesty: nginx's log of --rate-plan '$PLAN' (-c 4) replayed at 1x and 4x"
for p in /index.html /a.html /b.html /hello.html '/c.html?x=1'; do echo "http://127.0.0.1:$ORIG_PORT$p"; done >"$WORK/plan-urls"
pin_client "$DYNO" http --url-file "$WORK/plan-urls" --rate-plan "$PLAN" -t1 -c 4 --no-save --json >"$WORK/plan.json" 2>"$WORK/err" \
  || { cat "$WORK/err" >&2; exit 1; }
sleep 0.2
ORIG_LINES=$(wc -l <"$WORK/orig.log")
# The plan's own send lag: what the same machine allows an open model.
plan=$(check_run "$WORK/plan.json" "$ORIG_LINES")
read -r _ p50 p99 <<<"$plan"
echo "the original run: $ORIG_LINES requests logged; --rate-plan's send lag p50 $((p50 / 1000)) µs, p99 $((p99 / 1000)) µs"
for speed in 1 4; do
  if [ "$speed" = 1 ]; then target=$R1_PORT; else target=$R4_PORT; fi
  pin_client "$DYNO" http "http://127.0.0.1:$target/" \
    --replay "$WORK/orig.log" --log-format "$TIMED" --speed "$speed" -t1 -c 4 --no-save --json \
    >"$WORK/replay-$speed.json" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  sleep 0.2
  lag=$(check_run "$WORK/replay-$speed.json" "$ORIG_LINES")
  python3 - "$WORK/orig.log" "$WORK/replay-$speed.log" "$speed" "$lag" <<'PY'
import collections, sys
def read(path):
    rows = []
    for line in open(path):
        stamp, rest = line.split(" ", 1)
        rows.append((float(stamp), rest.rsplit(" ", 1)[0]))
    return rows
orig, rep, speed = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
_, p50, p99 = map(int, sys.argv[4].split())
same = collections.Counter(r for _, r in orig) == collections.Counter(r for _, r in rep)
def profile(rows, scale):
    first = min(t for t, _ in rows)
    bins = collections.Counter(int((t - first) * scale) for t, _ in rows)
    return [bins[s] for s in range(max(bins) + 1)]
a, b = profile(orig, 1.0), profile(rep, speed)
n = max(len(a), len(b))
a, b = a + [0] * (n - len(a)), b + [0] * (n - len(b))
diff = sum(abs(x - y) for x, y in zip(a, b))
print(f"-- speed {speed:g}: {len(orig)} requests logged, {len(rep)} replayed; same multiset of request lines: {'yes' if same else 'no'}")
print(f'   {"second":>6} {"original":>9} {"replay":>7}')
for s in range(n):
    print(f"   {s:>6} {a[s]:>9} {b[s]:>7}")
print(f"   per-second profile: total |difference| {diff} = {100 * diff / max(len(orig), 1):.2f}% of the requests (target <= 1%)")
print(f"   send lag p50 {p50 / 1e3:.1f} µs, p99 {p99 / 1e3:.1f} µs (target p99 < 1 ms)")
PY
done
