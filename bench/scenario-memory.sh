#!/usr/bin/env bash
# What a scenario's size costs in memory: one step per flow, 1 to N flows,
# `-n 100` against `dyno serve`, peak RSS and wall time per size and
# thread count, then the memory each step adds on each worker thread
# (newcomer audit M4: 3.7 MB a step a thread, 22.6 GiB for 20,000 steps).
# Two builds may be given (OLD NEW) to print them side by side.
#
# Usage: bench/scenario-memory.sh DYNO [OLD_DYNO] [SIZES] [THREADS]
#        (default sizes "1 100 1000 10000", threads "1 2")
set -euo pipefail
cd "$(dirname "$0")/.."
NEW=${1:?give the dyno build: bench/scenario-memory.sh target/release/dyno}
OLD=${2:-}
SIZES=${3:-1 100 1000 10000}
THREADS=${4:-1 2}
WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$NEW" serve --addr "127.0.0.1:$PORT" --threads 1 >/dev/null 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
sleep 0.5
for n in $SIZES; do
  python3 - "$n" "$PORT" >"$WORK/s$n.toml" <<'PY'
import sys
n, port = int(sys.argv[1]), sys.argv[2]
print(f'base = "http://127.0.0.1:{port}"')
for i in range(n):
    print(f'[[flow]]\nname = "f{i}"\n[[flow.step]]\nurl = "/hello"')
PY
done
measure() { # BUILD STEPS THREADS -> "KiB seconds"
  /usr/bin/time -f '%M %e' "$1" http --scenario "$WORK/s$2.toml" -n 100 -c 2 -t "$3" --no-save \
    >/dev/null 2>"$WORK/time" || true
  tail -1 "$WORK/time"
}
printf '%-6s %-8s %12s %10s %14s\n' build threads steps "peak MiB" "seconds"
for build in ${OLD:+old} new; do
  bin=$NEW; [ "$build" = old ] && bin=$OLD
  for t in $THREADS; do
    base=""
    for n in $SIZES; do
      read -r kib secs <<<"$(measure "$bin" "$n" "$t")"
      printf '%-6s %-8s %12s %10.1f %14s\n' "$build" "$t" "$n" "$(echo "$kib/1024" | bc -l)" "$secs"
      if [ -z "$base" ]; then base=$kib; base_n=$n; fi
      last=$kib; last_n=$n
    done
    if [ "$last_n" != "$base_n" ]; then
      printf '%-6s %-8s KiB a step a thread: %.1f\n' "$build" "$t" \
        "$(echo "($last-$base)/($last_n-$base_n)/$t" | bc -l)"
    fi
  done
done
