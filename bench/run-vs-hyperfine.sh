#!/usr/bin/env bash
# Side-by-side command timers: dyno run against hyperfine, same commands, no
# shell (-N), same warm-up and run counts, the tools taking turns round by
# round (interleaved) so drift of the machine hits both alike.
#
# Printed per command: each tool's median (over rounds) of its reported mean,
# and dyno's ratio to hyperfine. Targets (issue 4):
#   true        pure spawn-and-wait overhead: dyno's mean <= hyperfine's
#   sleep 0.05  dyno's mean no further from 50 ms than hyperfine's
#
# Usage: bench/run-vs-hyperfine.sh [ROUNDS] [RUNS]
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs: hyperfine (Debian package); installs it when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
RUNS=${2:-200}

# shellcheck source=bench/lib.sh
. "$PWD/bench/lib.sh"
need_tools hyperfine hyperfine hyperfine
dyno_build
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
echo "dyno $($DYNO --version | cut -d' ' -f2-) vs $(hyperfine --version); $ROUNDS rounds, $RUNS runs each (sleep: $((RUNS / 10)))"

mean_of() { # FILE -> mean in seconds of the first result (hyperfine's layout)
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["mean"])' "$1"
}

for cmd in "true" "sleep 0.05"; do
  runs=$RUNS
  [ "$cmd" = "true" ] || runs=$((RUNS / 10))
  : > "$WORK/dyno"; : > "$WORK/hf"
  for round in $(seq "$ROUNDS"); do
    "$DYNO" run -N --warmup 5 --runs "$runs" --no-save "$cmd" \
      --export-hyperfine-json "$WORK/d.json" > /dev/null
    mean_of "$WORK/d.json" >> "$WORK/dyno"
    hyperfine -N --warmup 5 --runs "$runs" --style none "$cmd" \
      --export-json "$WORK/h.json" > /dev/null 2>&1
    mean_of "$WORK/h.json" >> "$WORK/hf"
  done
  python3 - "$cmd" "$WORK/dyno" "$WORK/hf" <<'PY'
import statistics, sys
cmd, d, h = sys.argv[1], sys.argv[2], sys.argv[3]
d = [float(x) for x in open(d)]
h = [float(x) for x in open(h)]
dm, hm = statistics.median(d), statistics.median(h)
fmt = lambda s: f"{s * 1e3:.3f} ms"
print(f"{cmd:<12} dyno {fmt(dm):>11}  hyperfine {fmt(hm):>11}  ratio {dm / hm:.3f}")
if cmd.startswith("sleep"):
    target = float(cmd.split()[1])
    print(f"{'':<12} distance from {target * 1e3:.0f} ms: dyno {fmt(dm - target)}, hyperfine {fmt(hm - target)}")
print(f"{'':<12} per round: dyno {' '.join(fmt(x) for x in d)}")
print(f"{'':<12}            hyperfine {' '.join(fmt(x) for x in h)}")
PY
done
