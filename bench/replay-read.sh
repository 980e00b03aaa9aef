#!/usr/bin/env bash
# The access-log reader of `dyno http --replay` (issue 49) on a long log:
# its speed per entry and its peak memory, which must not grow with the
# log's length. Writes a combined-format log of LINES lines (a day's
# traffic with bursts and gaps, every stamp a whole second), then reads
# it, plain and gzip-compressed, with crates/http's replay_read example,
# and prints entries/s and the peak RSS (bench/runstat.py) for 1/10 of
# the lines and for all of them: the two peaks should be the same.
#
# Usage: bench/replay-read.sh [LINES]   (default 10,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
LINES=${1:-10000000}
# shellcheck source=bench/lib.sh
. "$PWD/bench/lib.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cargo build --release --quiet -p dyno-http --example replay_read
READ=$PWD/target/release/examples/replay_read

write_log() { # LINES FILE
  python3 - "$1" >"$2" <<'PY'
import random, sys, time
n = int(sys.argv[1])
rng = random.Random(7)
t = 1_700_000_000
paths = ["/", "/index.html", "/users/{}", "/users/{}/posts", "/api/items?page={}", "/static/app.js"]
out = sys.stdout
line = 0
while line < n:
    # A second of 0 to 400 requests: quiet seconds, busy ones, bursts.
    k = rng.choice([0, 5, 20, 50, 400]) if rng.random() < 0.2 else rng.randint(10, 60)
    stamp = time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(t))
    for _ in range(min(k, n - line)):
        path = rng.choice(paths).format(rng.randint(1, 99999))
        out.write(f'10.0.{rng.randint(0,255)}.{rng.randint(1,254)} - - [{stamp}] "GET {path} HTTP/1.1" 200 {rng.randint(100,9000)} "-" "Mozilla/5.0 (X11; Linux x86_64)"\n')
        line += 1
    t += 1
PY
}

for n in $((LINES / 10)) "$LINES"; do
  write_log "$n" "$WORK/access.log"
  gzip -k -1 "$WORK/access.log"
  for f in access.log access.log.gz; do
    out=$($RUNSTAT "$READ" "$WORK/$f" 2>"$WORK/err")
    rss=$(awk -F'[ =]' '/^runstat:/{printf "%.1f", $7/1024}' "$WORK/err")
    printf '%-9s %12s lines: %s; peak RSS %s MiB\n' "$f" "$n" "$out" "$rss"
  done
  rm -f "$WORK/access.log" "$WORK/access.log.gz"
done
