#!/usr/bin/env bash
# dyno's own speed over its commits (issue 48): builds each REV (release,
# in a git worktree under target/history, one build directory for all so
# that each build compiles only what changed), then runs BENCH once with
# each build in turn, REPEATS times over (a repeat runs every build once,
# so drift of the machine hits them alike), each run saving its ratios to
# the peer as a `figures` run tagged rev:REV (bench/lib.sh's save_figures)
# in a store of its own. Ends with `dyno changes --by-commit` over that
# store: where, between the commits, dyno's speed beside its peer moved.
#
# Usage: bench/history.sh "BENCH [ARGS]" REPEATS REV…
#   H2_PATHS=hello.html bench/history.sh "bench/h2-vs-h2load.sh 2 2" 5 f8d8f72^ f8d8f72 cd45f09 HEAD
# Give 5 repeats or more: a change between two commits needs about five
# runs a side to pass at dyno changes' α of 0.01 (a permutation test of
# 5 | 5 runs cannot give a p-value below 1/252, of 3 | 3 below 1/20).
# BENCH is a script that saves figures (h2-vs-h2load.sh, http-vs-peers.sh);
# its environment may narrow it (H2_PATHS=hello.html). The store is
# $HISTORY_STORE (default target/history/store.db), kept: a later call adds
# runs to it, and `dyno --store target/history/store.db changes --kind
# figures --by-commit` reads it again.
set -euo pipefail
cd "$(dirname "$0")/.."
BENCH=${1:?give the bench: bench/history.sh "BENCH [ARGS]" REPEATS REV…}
REPEATS=${2:?give how many runs of the bench per commit}
shift 2
[ $# -ge 2 ] || { echo "bench/history.sh: give two commits or more" >&2; exit 2; }
HISTORY=$PWD/target/history
STORE=${HISTORY_STORE:-$HISTORY/store.db}
SRC=$HISTORY/src
mkdir -p "$HISTORY"

# Today's dyno saves the figures (an older one may not know --figures).
cargo build --release --locked --quiet --bin dyno
SAVER=$PWD/target/release/dyno

builds=()
for rev in "$@"; do
  sha=$(git rev-parse --verify --quiet "$rev^{commit}") || {
    echo "bench/history.sh: '$rev' names no commit here" >&2
    exit 2
  }
  short=$(git rev-parse --short=10 "$sha")
  bin=$HISTORY/dyno-$short
  if [ ! -x "$bin" ]; then
    if [ -d "$SRC" ]; then
      git -C "$SRC" checkout --quiet --detach "$sha"
    else
      git worktree add --quiet --detach "$SRC" "$sha"
    fi
    echo "== building $short ($(git log -1 --format=%cs "$sha"))"
    (cd "$SRC" && CARGO_TARGET_DIR=$HISTORY/target cargo build --release --locked --quiet --bin dyno)
    cp "$HISTORY/target/release/dyno" "$bin"
  fi
  builds+=("$short")
done

for repeat in $(seq "$REPEATS"); do
  for short in "${builds[@]}"; do
    echo "== repeat $repeat of $REPEATS: $short"
    # shellcheck disable=SC2086
    if ! DYNO=$HISTORY/dyno-$short BENCH_SAVE=1 BENCH_REV=$short FIGURES_DYNO=$SAVER \
      DYNO_STORE=$STORE $BENCH >"$HISTORY/bench.log" 2>&1; then
      echo "$BENCH failed with the build of $short:" >&2
      tail -5 "$HISTORY/bench.log" >&2
      exit 1
    fi
    grep -E '^(==|dyno/|figures saved)' "$HISTORY/bench.log" || true
  done
done

echo
echo "== dyno changes over $(git rev-parse --short HEAD)'s history (store $STORE)"
"$SAVER" --store "$STORE" changes --kind figures --tag bench --by-commit || true
