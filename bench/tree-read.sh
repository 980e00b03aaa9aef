#!/usr/bin/env bash
# The thesis's parallel-read experiment on dyno's tree database, beside the
# figures Jungle published for it (Haskell, 12-core Xeon X5650): 1,000 tasks
# that each count every node of a tree of depth 8 and about 800,000 nodes,
# a writer adding a node before each task's version, on 1 and 2 threads (or
# the THREADS given). Jungle: 59.77 s on 1 thread, 1.79× on 2, parallel
# fraction 98.96% at 12. Issue 12's goals here: under 10 s on one thread,
# speedup ≥ 1.98× at 2 (p ≥ 0.99).
#
# Usage: bench/tree-read.sh [THREADS] [REPETITIONS]   (default 1,2 and 3)
# DYNO=path/to/dyno runs that build instead of this checkout's.
set -euo pipefail
cd "$(dirname "$0")/.."
THREADS=${1:-1,2}
REPS=${2:-3}
# shellcheck source=bench/lib.sh
. bench/lib.sh
tree_run tree-read --threads "$THREADS" --repetitions "$REPS"
tree_report "(Jungle 98.96% at 12 threads; goal ≥ 99%)" <<'PY'
s = run["settings"]
print(f"tree-read: {s['tasks']} tasks over {s['nodes']} nodes, depth {s['depth']}, {s['repetitions']} repetitions")
by = lambda name: {m["labels"].get("n"): m for m in run["metrics"] if m["name"] == name}
times, speedups = by("time_ns"), by("speedup")
for n in sorted(times, key=int):
    t = times[n]["value"] / 1e9
    line = f"  N={n:>2}: {t:7.3f} s  speedup {speedups[n]['value']:.2f}×"
    if n == "1":
        line += f"   (Jungle 59.77 s: {59.77 / t:.1f}× faster; goal < 10 s)"
    if n == "2":
        line += "   (Jungle 1.79×; goal ≥ 1.98×)"
    print(line)
PY
