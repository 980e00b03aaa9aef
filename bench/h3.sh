#!/usr/bin/env bash
# What HTTP/3 costs a client (issue 50): dyno over HTTP/1.1, HTTP/2 and
# HTTP/3 against one Caddy (Debian's `caddy`, which serves all three over
# TLS on one port), on the 92-byte page and a 1 MiB file; and, when an oha
# built with its HTTP/3 feature is on the PATH (or given as OHA=...), oha
# over HTTP/3 beside dyno's in the same rounds.
#
# Each run: -c CONNS connections (× STREAMS streams for h2 and h3; HTTP/1.1
# has one request at a time per connection, so it gets CONNS × STREAMS
# connections, the same requests under way), one client thread pinned to
# one CPU and Caddy to the other, for SECS seconds. Printed per protocol:
# the rate, the client's CPU time per request (user + sys, bench/runstat.py)
# and its ratio to HTTP/1.1's, medians of ROUNDS interleaved rounds.
#
# oha's own req/s over HTTP/3 is wrong (it waits for QUIC's idle timeout
# after its GOAWAY, so its "Total" is ~30 s long): its rate here is its
# successful responses over the run's SECS, and its CPU per request is its
# CPU time over those responses (the idle wait costs no CPU).
#
# Usage: bench/h3.sh [ROUNDS] [SECS] [CONNS] [STREAMS]   (default 3 5 2 8)
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs: caddy. Installs it when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
CONNS=${3:-2}
STREAMS=${4:-8}
for v in ROUNDS SECS CONNS STREAMS; do
  case ${!v} in '' | *[!0-9]* | 0) echo "$v must be a whole number above 0, not '${!v}'" >&2; exit 2 ;; esac
done

# shellcheck source=bench/nginx-lib.sh disable=SC1091
. "$PWD/bench/nginx-lib.sh"
OHA=${OHA:-$(command -v oha || true)}
dyno_build
bench_workdir
start_caddy
URL="https://127.0.0.1:$PORT"

# run_dyno PROTO PATH: "RATE CPU_SECONDS RESPONSES"
# shellcheck disable=SC2086 # $RUNSTAT is a command and its argument
run_dyno() {
  local flags
  case $1 in
    h1) flags="-c $((CONNS * STREAMS))" ;;
    h2) flags="--h2 -c $CONNS -m $STREAMS" ;;
    h3) flags="--h3 -c $CONNS -m $STREAMS" ;;
  esac
  # shellcheck disable=SC2086
  pin_client $RUNSTAT "$DYNO" http "$URL$2" $flags --insecure -t1 -d "${SECS}s" --no-save --json \
    >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  python3 - "$WORK/out" "$(cpu_of "$WORK/err" | cut -d' ' -f1)" <<'PY'
import json, sys
m = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))["metrics"] if not x.get("labels")}
if m.get("errors", 0):
    sys.exit(f"{m['errors']} errors; not counted")
print(m["requests_per_sec"], sys.argv[2], int(m["responses"]))
PY
}
# run_oha PATH: the same three figures for oha over HTTP/3.
# shellcheck disable=SC2086
run_oha() {
  pin_client $RUNSTAT "$OHA" --http-version 3 --insecure -c "$CONNS" -p "$STREAMS" -z "${SECS}s" \
    --no-tui --output-format json "$URL$1" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; exit 1; }
  python3 - "$WORK/out" "$(cpu_of "$WORK/err" | cut -d' ' -f1)" "$SECS" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
ok = sum(n for code, n in r.get("statusCodeDistribution", {}).items() if code.startswith("2"))
print(ok / float(sys.argv[3]), sys.argv[2], ok)
PY
}

PEERS="h1 h2 h3"
[ -n "$OHA" ] && PEERS="$PEERS oha-h3"
echo "caddy (1 process, GOMAXPROCS=1) on CPU $SERVER_CPU; client on CPU $CLIENT_CPU, 1 thread;"
echo "h2/h3: $CONNS connections x $STREAMS streams, h1: $((CONNS * STREAMS)) connections; ${SECS}s runs, $ROUNDS interleaved rounds"
[ -n "$OHA" ] || echo "(no oha with HTTP/3 on the PATH: give OHA=path to compare with it)"
for path in /hello.html /1m.bin; do
  for round in $(seq "$ROUNDS"); do
    for peer in $PEERS; do
      if [ "$peer" = oha-h3 ]; then row=$(run_oha "$path"); else row=$(run_dyno "$peer" "$path"); fi
      echo "$path $peer $round $row" >>"$WORK/results"
    done
  done
done
python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    path, peer, rnd, rate, cpu, n = line.split()
    rows.setdefault(path, {}).setdefault(peer, []).append((float(rate), float(cpu) / max(int(n), 1) * 1e6))
for path, peers in rows.items():
    print(f"\n{path}")
    print(f'{"client":8} {"req/s":>10} {"CPU µs/req":>11} {"CPU vs h1":>10}')
    base = statistics.median(c for _, c in peers["h1"])
    for peer, runs in peers.items():
        rate = statistics.median(r for r, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{peer:8} {rate:10.0f} {cpu:11.2f} {cpu / base:9.2f}x")
    if "oha-h3" in peers:
        ratio = [d[0] / o[0] for d, o in zip(peers["h3"], peers["oha-h3"])]
        cpu = [d[1] / o[1] for d, o in zip(peers["h3"], peers["oha-h3"])]
        print(f"dyno h3 / oha h3: rate {statistics.median(ratio):.3f}x (target >= 1), "
              f"CPU per request {statistics.median(cpu):.3f}x (target <= 0.8)")
PY
