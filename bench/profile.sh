#!/usr/bin/env bash
# Where each client's CPU goes, dyno's beside its peer's, request by
# request: HTTP/1.1 beside wrk, HTTP/2 (h2c) beside h2load, each against
# one nginx worker on CPU 0 with the clients on CPU 1 (the 92-byte page and
# a 1 MiB file); PostgreSQL beside pgbench (select-only and tpcb-like,
# -M prepared, against a throwaway cluster of scale 10). Both clients get
# the same flags: one thread, -c connections (and -m streams over h2).
#
# For each case: both clients' CPU per request, user and kernel, from
# plain runs (bench/runstat.py); then each once more under `perf record`
# (cpu-clock samples; DWARF call stacks for dyno, frame pointers for the
# peer), split by bench/perf-shares.py into
#   kernel:  the ACK a read sends, with what loopback does with it on
#            the client's CPU (over HTTP/2 with large answers: the
#            server's queued data sent and received), waking the server
#            (a send delivers at once on loopback and Unix sockets, and
#            wakes the server on the client's CPU), the rest of the send,
#            the rest of the receive, events (epoll, poll), the rest;
#   user:    protocol (HTTP/1.1 parsing, HTTP/2 framing, the PostgreSQL
#            wire; libpq and nghttp2 for the peers), hpack, the runtime
#            (tokio; libev for h2load), the engine (the rest of the
#            client's own code), libc, unattributed.
# Last, the CPU goal of issue 46 as arithmetic: 0.8 × the peer's CPU per
# request, less dyno's kernel time, is what user space may take.
#
# Usage: bench/profile.sh CASE [SECONDS] [CONNECTIONS] [STREAMS]
#        CASE: h1, h2 or db; default 5 s, 10 connections (db: clients),
#        10 streams each (h2)
# Needs: perf (linux-perf); nginx and wrk or h2load (nghttp2-client), or
# PostgreSQL and pgbench; installs them when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
CASE=${1:?give the case: bench/profile.sh h1|h2|db [SECONDS] [CONNECTIONS] [STREAMS]}
SECS=${2:-5}
CONNS=${3:-10}
STREAMS=${4:-10}
for n in "$SECS" "$CONNS" "$STREAMS"; do
  case $n in '' | *[!0-9]* | 0) echo "SECONDS, CONNECTIONS and STREAMS are whole numbers above 0, not '$n'" >&2; exit 2 ;; esac
done
case $CASE in
  h1) PEER=wrk packages="nginx-light wrk" ;;
  h2) PEER=h2load packages="nginx-light nghttp2-client" ;;
  db) PEER=pgbench packages="postgresql" ;;
  *) echo "CASE is h1, h2 or db, not '$CASE'" >&2; exit 2 ;;
esac
# One sample per millisecond of a client's CPU.
PERIOD_NS=1000000

if ! command -v "$PEER" >/dev/null 2>&1 || ! command -v perf >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $packages linux-perf >/dev/null
  else
    echo "install $PEER and linux-perf (perf) first" >&2; exit 2
  fi
fi
cargo build --profile profiling --quiet
DYNO=$PWD/target/profiling/dyno
RUNSTAT="python3 $PWD/bench/runstat.py"

# shellcheck source=bench/nginx-lib.sh
. "$PWD/bench/nginx-lib.sh"
bench_workdir
case $CASE in
  h1) start_nginx "" ; targets="hello.html 1m.bin" ;;
  h2) start_nginx http2 "http2_max_concurrent_streams 1024;" ; targets="hello.html 1m.bin" ;;
  db) bench_pg "$DYNO" ; targets="select-only tpcb-like" ;;
esac

# peer TARGET: the peer's command line for one target.
peer() {
  case $CASE in
    h1) echo wrk -t1 -c"$CONNS" -d"${SECS}s" "http://127.0.0.1:$PORT/$1" ;;
    h2) echo h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$SECS" "http://127.0.0.1:$PORT/$1" ;;
    db) echo pgbench -n -M prepared -b "$1" -c "$CONNS" -j 1 -T "$SECS" ;;
  esac
}
# ours TARGET: dyno's, with the same flags.
ours() {
  case $CASE in
    h1) echo "$DYNO" http "http://127.0.0.1:$PORT/$1" -t1 -c"$CONNS" -d"${SECS}s" --no-save --json ;;
    h2) echo "$DYNO" http "http://127.0.0.1:$PORT/$1" --h2 -t1 -c"$CONNS" -m"$STREAMS" -d"${SECS}s" --no-save --json ;;
    db) echo "$DYNO" db run -M prepared -b "$1" -c "$CONNS" -j 1 -T "$SECS" --no-save --json ;;
  esac
}
# done_by TOOL OUTPUT: the requests (or transactions) a run's output says
# it completed; a dyno run with errors stops the script, since its cost
# per request would mislead.
done_by() {
  case $1 in
    wrk) awk '/requests in/{print $1}' "$2" ;;
    h2load) awk '/^requests:/{print $8}' "$2" ;;
    pgbench) awk -F': ' '/number of transactions actually processed/{print $2}' "$2" | cut -d/ -f1 ;;
    dyno) python3 - "$2" <<'PY'
import json, sys
m = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))["metrics"] if not x.get("labels")}
done = m.get("responses", m.get("transactions", 0))
bad = m.get("errors", 0) + m.get("failed_transactions", 0) + done - m.get("status_200", done)
if bad:
    sys.exit(f"dyno saw {bad} errors or non-200 answers; not counted")
print(int(done))
PY
    ;;
  esac
}
# per_request RUNSTAT_FILE N: "TOTAL USER KERNEL" µs per request.
per_request() {
  awk -F'[ =]' -v n="$2" '/^runstat:/{printf "%.2f %.2f %.2f", ($3+$5)/n*1e6, $3/n*1e6, $5/n*1e6}' "$1"
}
# measure TOOL TARGET: a plain run, then one under perf; sets
# TOTAL USER KERNEL, and leaves the split in $WORK/TOOL.shares.
measure() {
  local tool=$1 target=$2 cmd n pn graph=fp
  if [ "$tool" = dyno ]; then cmd=$(ours "$target"); graph=dwarf,16384; else cmd=$(peer "$target"); fi
  # shellcheck disable=SC2086
  (cd "$WORK" && pin_client $RUNSTAT $cmd >"$WORK/$tool.out" 2>"$WORK/$tool.err") || true
  n=$(done_by "$tool" "$WORK/$tool.out")
  [ "${n:-0}" -gt 0 ] || { echo "$tool completed nothing: $(tail -3 "$WORK/$tool.out" "$WORK/$tool.err")" >&2; exit 1; }
  read -r TOTAL USER KERNEL <<<"$(per_request "$WORK/$tool.err" "$n")"
  # shellcheck disable=SC2086
  (cd "$WORK" && perf record -q -e cpu-clock -c "$PERIOD_NS" --call-graph "$graph" -o "$WORK/perf.data" -- \
    taskset -c "$CLIENT_CPU" $cmd >"$WORK/$tool.prof" 2>/dev/null) || true
  pn=$(done_by "$tool" "$WORK/$tool.prof")
  perf script -i "$WORK/perf.data" 2>/dev/null >"$WORK/perf.txt"
  python3 bench/perf-shares.py "$WORK/perf.txt" "$PERIOD_NS" "${pn:-0}" "$tool" >"$WORK/$tool.shares"
}

where=$([ "$CASE" = db ] && echo "PostgreSQL 15, scale 10" || echo "nginx: 1 worker on CPU $SERVER_CPU")
echo "$CASE: $where; clients on CPU $CLIENT_CPU; $(peer TARGET | cut -d' ' -f2-)"
for target in $targets; do
  measure "$PEER" "$target"; p_total=$TOTAL p_user=$USER p_kernel=$KERNEL
  measure dyno "$target"; d_total=$TOTAL d_user=$USER d_kernel=$KERNEL
  echo
  echo "== $target"
  printf '%-26s %10s %10s %10s\n' "CPU µs per request" total user kernel
  printf '%-26s %10s %10s %10s\n' "$PEER" "$p_total" "$p_user" "$p_kernel"
  printf '%-26s %10s %10s %10s\n' dyno "$d_total" "$d_user" "$d_kernel"
  echo "under perf, µs per request by where it went ($PEER | dyno):"
  paste -d'|' <(grep -v '^shares:' "$WORK/$PEER.shares") <(grep -v '^shares:' "$WORK/dyno.shares" | cut -c17-)
  python3 - "$p_total" "$d_kernel" "$(grep '^shares:' "$WORK/dyno.shares")" "$PEER" <<'PY'
import sys
peer, kernel, line, name = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
shares = dict(kv.split("=") for kv in line.split()[1:])
goal = 0.8 * peer
user = sum(float(v) for k, v in shares.items() if not k.startswith("k_"))
# The kernel time of the plain run: sampling with call stacks adds to the
# kernel time of the profiled one.
print(f"goal: CPU <= 0.8 x {name}'s = {goal:.2f} µs/req. dyno's kernel time {kernel:.2f} "
      f"(plain run, {kernel / peer:.3f}x {name}'s whole CPU) leaves {goal - kernel:.2f} µs "
      f"for user space, which takes {user:.2f} (perf)")
PY
done
