#!/usr/bin/env bash
# The thesis's BBS experiment on this machine: `dyno serve --app bbs` with
# one thread pinned to CPU 0, `dyno http` with one thread pinned to CPU 1,
# keep-alive, REQUESTS requests over CONNECTIONS connections each:
#   1. /hello of the same server: the HTTP-only ceiling;
#   2. reads: /showBoardMessage?bname=hello (a board of 10 messages);
#   3. writes: /createBoardMessage?bname=hello&…&msg=post {seq} (durable: every
#      post is fsynced before it is answered), a million new messages;
#   4. reads again, on the board the writes made a million long (a page of
#      100 messages now, where the first reads listed 10).
# Then reads of another board of 10 messages at server threads 1 and 2
# (both CPUs shared with the client) through `dyno scale --file`.
# The thesis (Warp + Jungle on a 12-core Xeon, weighttp -c 1000 -t 10):
# a million reads in 28.33 s, a million writes in 32.68 s. Issue 12's goals
# here: reads in under 20 s and writes in under 30 s on one server core, and
# BBS reads at ≥ 50% of /hello's rate.
#
# Usage: bench/bbs.sh [REQUESTS] [CONNECTIONS] [DATA_DIR]
#        (default 1000000, 1000 as the thesis's weighttp, and a new
#        directory under the current one: its file system's fsync is measured)
#        DYNO=path/to/dyno runs that build instead of building this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
C=${2:-1000}
if [ -z "${DYNO:-}" ]; then
  cargo build --release --quiet
fi
dyno=${DYNO:-$PWD/target/release/dyno}
work=$(mktemp -d)
data=${3:-$PWD/.bbs-bench-$$}
export DYNO_HOME=$work/home
server=
cleanup() {
  [ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work" "$data"
}
trap cleanup EXIT

# start THREADS CPUS: a BBS server on those CPUs; sets $server and $addr.
start() {
  rm -f "$work/banner"
  taskset -c "$2" "$dyno" serve --addr 127.0.0.1:0 --threads "$1" --app bbs --data "$data" \
    >"$work/banner" 2>"$work/server.err" &
  server=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$work/banner" 2>/dev/null && break
    sleep 0.05
  done
  addr=$(sed -n 's/.*listening on http:\/\/\([^ ]*\).*/\1/p' "$work/banner")
  [ -n "$addr" ] || { cat "$work/server.err"; exit 1; }
}
stop() { kill -INT "$server"; wait "$server" || true; server=; }

# load NAME CPUS URL: dyno http, N requests; prints and keeps req/s in $rps.
load() {
  taskset -c "$2" "$dyno" http "$3" -n "$N" -c "$C" -t 1 --json --no-save \
    >"$work/$1.json" 2>"$work/$1.err" || { cat "$work/$1.err"; exit 1; }
  rps=$(python3 - "$work/$1.json" "$1" "$N" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
m = {x["name"]: x["value"] for x in run["metrics"] if not x.get("labels")}
n = int(sys.argv[3])
ok = m.get("status_200", 0)
seconds = m["measured_ns"] / 1e9
print(f"{sys.argv[2]:>12}: {n:,} requests in {seconds:6.2f} s, {m['requests_per_sec']:>9,.0f} req/s, "
      f"mean latency {m['latency_ns'] / 1e6:.2f} ms, {int(ok):,} answered 200, {int(m.get('errors', 0))} errors",
      file=sys.stderr)
print(m["requests_per_sec"])
PY
)
}

start 1 0
url=http://$addr
curl -sf "$url/createBoard?bname=hello&author=dyno&msg=first&key=k" >/dev/null
curl -sf "$url/createBoard?bname=quiet&author=dyno&msg=first&key=k" >/dev/null
for i in $(seq 2 10); do
  for b in hello quiet; do
    curl -sf "$url/createBoardMessage?bname=$b&author=dyno&msg=message+$i&key=k" >/dev/null
  done
done
echo "BBS on one server thread (CPU 0), dyno http on one thread (CPU 1), $N requests, $C connections, keep-alive"
load hello 1 "$url/hello"; hello=$rps
load reads 1 "$url/showBoardMessage?bname=hello"; reads=$rps
load writes 1 "$url/createBoardMessage?bname=hello&author=bench&msg=post+{seq}&key=k"; writes=$rps
load reads-1m 1 "$url/showBoardMessage?bname=hello"; reads_big=$rps
total=$(curl -sf "$url/showBoardMessage?bname=hello&limit=1" | head -1)
stop
python3 - "$N" "$hello" "$reads" "$writes" "$reads_big" "$total" <<'PY'
import sys
n, hello, reads, writes, big = int(sys.argv[1]), *map(float, sys.argv[2:6])
print(f"  after the writes: {sys.argv[6]}")
print(f"  reads:  {n / reads:6.2f} s for {n:,} (Warp + Jungle, 12 cores: 28.33 s; goal < 20 s at 1,000,000)")
print(f"  writes: {n / writes:6.2f} s for {n:,} (Warp + Jungle, 12 cores: 32.68 s; goal < 30 s at 1,000,000)")
print(f"  reads / /hello = {reads / hello * 100:.0f}% (goal ≥ 50%); reads of the long board / /hello = {big / hello * 100:.0f}%")
def cost(rate):
    us = 1e6 / rate - 1e6 / hello
    # A load measured faster than /hello: the machine's drift between the
    # two loads is larger than what the database adds.
    return f"{us:.1f} µs" if us > 0 else "less than this run's noise"
print(f"  the database costs {cost(reads)} per read and {cost(writes)} per durable write, on top of HTTP's {1e6 / hello:.1f} µs")
PY

echo
echo "reads of a board of 10 messages at server threads 1 and 2 (server and client share both CPUs)"
printf 'threads,rate\n' >"$work/scale.csv"
for t in 1 2; do
  start "$t" 0,1
  load "reads-t$t" 0,1 "http://$addr/showBoardMessage?bname=quiet"
  printf '%s,%s\n' "$t" "$rps" >>"$work/scale.csv"
  stop
done
"$dyno" scale --file "$work/scale.csv" --no-save | sed -n '1,12p'
