#!/usr/bin/env bash
# Where dyno's HTTP/2 client spends its CPU, beside what h2load spends in
# total, against the same nginx as bench/h2-vs-h2load.sh (one worker on
# CPU 0, clients on CPU 1, h2c, -c/-m alike), for the 92-byte page and a
# 1 MiB file.
#
# For each path: h2load's CPU per request (user and kernel, from
# bench/runstat.py); dyno's the same way; then dyno once more under
# `perf record` (cpu-clock samples with DWARF call stacks), split by
# bench/perf-shares.py into the kernel, HPACK (httlib-hpack), dyno's
# HTTP/2 session, tokio and dyno's own engine, in µs per request; and
# h2load once more under `perf record` (kernel call stacks), split the same
# way where it can be: its kernel time, and within it, as within dyno's,
# the server's send done on the client's CPU (a client's read whose ACK
# opened its window, with what loopback did with it at once: nginx's queued
# data sent, and received into the client's socket).
# Last, issue 32's CPU goal as arithmetic: 0.8 × h2load's CPU per request,
# less what dyno spends in the kernel, is what user space may take.
#
# Usage: bench/h2-profile.sh [SECONDS] [CONNECTIONS] [STREAMS]
#        (default 5 s, 10 connections, 10 streams each)
# Needs: nginx, h2load (nghttp2-client), perf (linux-perf); installs them
# when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-5}
CONNS=${2:-10}
STREAMS=${3:-10}
# One sample per millisecond of dyno's CPU.
PERIOD_NS=1000000

need() { command -v "$1" >/dev/null 2>&1; }
if ! need nginx || ! need h2load || ! need perf; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx-light nghttp2-client linux-perf >/dev/null
  else
    echo "install nginx, nghttp2-client (h2load) and linux-perf (perf) first" >&2; exit 2
  fi
fi
cargo build --profile profiling --quiet
DYNO=$PWD/target/profiling/dyno
RUNSTAT="python3 $PWD/bench/runstat.py"

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
WORK=$(mktemp -d)
trap 'kill $(cat "$WORK/nginx.pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$WORK"' EXIT
start_nginx http2 "http2_max_concurrent_streams 1024;"

# dyno's answers in its --json run $1; a run with errors or non-200
# answers stops the script, since its cost per request would mislead.
responses() {
  python3 - "$1" <<'PY'
import json, sys
m = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))["metrics"]}
if m.get("status_200", 0) != m["responses"] or m["errors"]:
    sys.exit(f"dyno saw errors or non-200 answers: {m}"[:300])
print(int(m["responses"]))
PY
}
# "TOTAL_US USER_US KERNEL_US" per request from a runstat line in $1 and a
# request count $2.
per_request() {
  awk -F'[ =]' -v n="$2" '/^runstat:/{printf "%.2f %.2f %.2f", ($3+$5)/n*1e6, $3/n*1e6, $5/n*1e6}' "$1"
}

echo "nginx (h2c): 1 worker on CPU $SERVER_CPU; clients on CPU $CLIENT_CPU; -c $CONNS -m $STREAMS, ${SECS}s a run"
for path in hello.html 1m.bin; do
  url="http://127.0.0.1:$PORT/$path"
  pin_client $RUNSTAT h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$SECS" "$url" >"$WORK/h2load.out" 2>"$WORK/h2load.err" || true
  h2n=$(awk '/^requests:/{print $8}' "$WORK/h2load.out")
  [ "${h2n:-0}" -gt 0 ] || { echo "h2load answered nothing: $(tail -3 "$WORK/h2load.out")" >&2; exit 1; }
  read -r h2_total h2_user h2_kernel <<<"$(per_request "$WORK/h2load.err" "${h2n:-0}")"

  pin_client $RUNSTAT "$DYNO" http "$url" --h2 -t1 -c"$CONNS" -m"$STREAMS" -d"${SECS}s" --no-save --json >"$WORK/dyno.json" 2>"$WORK/dyno.err"
  dn=$(responses "$WORK/dyno.json")
  read -r d_total d_user d_kernel <<<"$(per_request "$WORK/dyno.err" "$dn")"

  perf record -q -e cpu-clock -c "$PERIOD_NS" --call-graph dwarf,16384 -o "$WORK/perf.data" -- \
    taskset -c "$CLIENT_CPU" "$DYNO" http "$url" --h2 -t1 -c"$CONNS" -m"$STREAMS" -d"${SECS}s" --no-save --json \
    >"$WORK/profiled.json" 2>/dev/null
  perf script -i "$WORK/perf.data" 2>/dev/null >"$WORK/perf.txt"
  perf record -q -e cpu-clock -c "$PERIOD_NS" --call-graph fp -o "$WORK/h2perf.data" -- \
    taskset -c "$CLIENT_CPU" h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$SECS" "$url" >"$WORK/h2prof.out" 2>/dev/null || true
  perf script -i "$WORK/h2perf.data" 2>/dev/null >"$WORK/h2perf.txt"
  h2pn=$(awk '/^requests:/{print $8}' "$WORK/h2prof.out")


  echo
  echo "== /$path"
  printf '%-22s %10s %10s %10s\n' "CPU µs per request" total user kernel
  printf '%-22s %10s %10s %10s\n' h2load "$h2_total" "$h2_user" "$h2_kernel"
  printf '%-22s %10s %10s %10s\n' dyno "$d_total" "$d_user" "$d_kernel"
  echo "dyno under perf, by where the time went:"
  pn=$(responses "$WORK/profiled.json")
  python3 bench/perf-shares.py "$WORK/perf.txt" "$PERIOD_NS" "$pn" | tee "$WORK/shares"
  echo "h2load under perf (no symbols for its user space: all of it 'unattributed'):"
  python3 bench/perf-shares.py "$WORK/h2perf.txt" "$PERIOD_NS" "${h2pn:-0}" | grep -v '^shares:'

  python3 - "$h2_total" "$d_kernel" "$(grep '^shares:' "$WORK/shares")" <<'PY'
import sys
h2load, kernel = float(sys.argv[1]), float(sys.argv[2])
shares = dict(kv.split("=") for kv in sys.argv[3].split()[1:])
goal = 0.8 * h2load
user = sum(float(v) for k, v in shares.items() if k not in ("kernel", "servers_send"))
# The kernel time of the plain run: sampling with call stacks adds to the
# kernel time of the profiled one.
print(f"goal: CPU <= 0.8 x h2load's = {goal:.2f} µs/req. dyno's kernel time {kernel:.2f} "
      f"(plain run, {kernel / h2load:.3f}x h2load's whole CPU) leaves {goal - kernel:.2f} µs "
      f"for user space, which takes {user:.2f} (perf)")
PY
done
