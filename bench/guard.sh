#!/usr/bin/env bash
# The guard of a change to an engine (issue 46): builds BASE (a commit,
# tag or branch) beside the working tree, then runs the short form of the
# h1, 10k-connection, h2 and db benches (closed and open model) for both builds in one run,
# interleaved (bench/builds-ab.sh), and prints today ÷ base for the rate,
# the client CPU per request and the peak RSS. Ratios measured in one run
# on one machine are the figures to quote; a ratio inside OLD's own spread
# is noise.
#
# Usage: bench/guard.sh BASE [ROUNDS] [SECONDS] [CASES]
#        (default 4 rounds of 4 s, cases "http c10k h2 db db-rate")
# The base's source goes to target/guard/src (a git worktree), its build
# to target/guard/target (kept, so a second guard against the same base
# builds nothing); the working tree builds as `cargo build --release`
# does. Uncommitted changes are part of "today". With AGAINST=REV, "today"
# is commit REV instead, built in the same worktree (a bisect's step:
# AGAINST=<the middle commit> bench/guard.sh <the good one> 3 3 db).
# Then bench/instructions.sh counts both builds' user-space instructions
# per request under callgrind (db, db-rate, http and h2; INSTRUCTIONS=0
# skips it).
# Needs what bench/builds-ab.sh needs: nginx, PostgreSQL's server, python3;
# and valgrind for the count.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${1:?give the base: bench/guard.sh BASE [ROUNDS] [SECONDS] [CASES]}
ROUNDS=${2:-4}
SECS=${3:-4}
CASES=${4:-http c10k h2 db db-rate}

sha=$(git rev-parse --verify --quiet "$BASE^{commit}") || {
  echo "bench/guard.sh: '$BASE' names no commit here (a sha, tag or branch)" >&2
  exit 2
}
GUARD=$PWD/target/guard
mkdir -p "$GUARD"
SRC=$GUARD/src
if [ -d "$SRC" ]; then
  git -C "$SRC" checkout --quiet --detach "$sha"
else
  git worktree add --quiet --detach "$SRC" "$sha"
fi

echo "== building the base, ${sha:0:10}"
(cd "$SRC" && CARGO_TARGET_DIR=$GUARD/target cargo build --release --locked --quiet --bin dyno)
cp "$GUARD/target/release/dyno" "$GUARD/dyno-base"
if [ -n "${AGAINST:-}" ]; then
  against=$(git rev-parse --verify --quiet "$AGAINST^{commit}") || {
    echo "bench/guard.sh: AGAINST='$AGAINST' names no commit here" >&2
    exit 2
  }
  echo "== building ${against:0:10} as today"
  git -C "$SRC" checkout --quiet --detach "$against"
  (cd "$SRC" && CARGO_TARGET_DIR=$GUARD/target cargo build --release --locked --quiet --bin dyno)
  cp "$GUARD/target/release/dyno" "$GUARD/dyno-today"
else
  echo "== building today ($(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' and uncommitted changes'))"
  cargo build --release --locked --quiet --bin dyno
  cp target/release/dyno "$GUARD/dyno-today"
fi

echo "== OLD is the base ${sha:0:10}, NEW is today"
bench/builds-ab.sh "$GUARD/dyno-base" "$GUARD/dyno-today" "$ROUNDS" "$SECS" "$CASES"

# The user-space half, counted rather than timed (bench/instructions.sh):
# a regression of a few hundred instructions per request, which the
# CPU-time noise above hides, shows here. INSTRUCTIONS=0 skips it.
counted=""
for case in $CASES; do
  case $case in db | db-rate | http | h2) counted="$counted $case" ;; esac
done
if [ "${INSTRUCTIONS:-1}" != 0 ] && [ -n "$counted" ]; then
  echo "== instructions per request, OLD is the base ${sha:0:10}, NEW is today"
  bench/instructions.sh "$GUARD/dyno-base" "$GUARD/dyno-today" "${counted# }" 5000
fi
