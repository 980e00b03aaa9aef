#!/usr/bin/env bash
# Side-by-side disk engines: dyno disk against fio's equivalent jobs
# (ioengine=io_uring, direct=1, time_based, same block size, iodepth and
# numjobs, random offsets over the same file size) for each test of the cdm8
# preset, read and write, the tools taking turns test by test and round by
# round (interleaved) so drift of the machine hits both alike.
#
# Each dyno run is one timed pass (--runs 1, no warm-up) so both tools
# report one interval of the same length. Printed per test and operation:
# each tool's median MB/s over rounds (10^6 bytes/s), dyno/fio, and CPU time
# per I/O (dyno: its worker threads' rusage; fio: usr_cpu + sys_cpu of the
# job times its runtime). Targets (issue 5): MB/s within ±5% of fio's,
# CPU per I/O ≤ fio's.
#
# Usage: bench/disk-vs-fio.sh [ROUNDS] [SECONDS] [SIZE] [DIR]
#   defaults: 3 rounds, 5 s per pass, a 1g file in a temporary directory
#   under the current directory (tmpfs has no direct I/O: use a real disk).
# Needs: fio (Debian package); installs it when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
SIZE=${3:-1g}
DIR=${4:-$PWD}

if ! command -v fio >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fio >/dev/null
  else
    echo "install fio first" >&2; exit 2
  fi
fi
cargo build --release --quiet
DYNO=$PWD/target/release/dyno
WORK=$(mktemp -d -p "$DIR" dyno-bench-disk.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
echo "dyno $($DYNO --version | cut -d' ' -f2-) vs $(fio --version); $ROUNDS rounds, ${SECS}s per pass, $SIZE file in $WORK"
echo "file system: $(df -T "$WORK" | awk 'NR==2{print $2" on "$1}')"

# fio lays its file out once; dyno makes (and fills) its own each run.
FIOFILE=$WORK/fio.dat
fio --name=layout --filename="$FIOFILE" --size="$SIZE" --rw=write --bs=1m \
  --direct=1 --ioengine=io_uring --output-format=terse > /dev/null

# test spec -> fio's rw mode and parameters
TESTS="seq:1m:q8:t1 seq:1m:q1:t1 rnd:4k:q32:t1 rnd:4k:q1:t1"
: > "$WORK/results"
for round in $(seq "$ROUNDS"); do
  for spec in $TESTS; do
    IFS=: read -r pattern bs qd th <<< "$spec"
    qd=${qd#q}; th=${th#t}
    for op in read write; do
      if [ "$pattern" = seq ]; then rw=$op; else rw=rand$op; fi
      fio --name=job --filename="$FIOFILE" --size="$SIZE" --rw="$rw" --bs="$bs" \
        --iodepth="$qd" --numjobs="$th" \
        --ioengine=io_uring --direct=1 --time_based --ramp_time=1 --runtime="$SECS" \
        --group_reporting --output-format=json > "$WORK/fio.json"
      python3 - "$WORK/fio.json" "$spec" "$op" >> "$WORK/results" <<'PY'
import json, sys
job = json.load(open(sys.argv[1]))["jobs"][0]
side = job[sys.argv[3]]
runtime_s = side["runtime"] / 1000
cpu_s = (job["usr_cpu"] + job["sys_cpu"]) / 100 * runtime_s
ios = side["total_ios"]
print(f"fio {sys.argv[2]} {sys.argv[3]} {side['bw_bytes'] / 1e6:.2f} {cpu_s / max(ios, 1) * 1e9:.0f}")
PY
    done
    "$DYNO" disk "$WORK" --test "$spec" --size "$SIZE" --runs 1 --warmup 1s \
      -d "${SECS}s" --interval 0 --no-save --json > "$WORK/dyno.json"
    python3 - "$WORK/dyno.json" "$spec" >> "$WORK/results" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
for op in ("read", "write"):
    get = lambda name: next(m["value"] for m in run["metrics"]
                            if m["name"] == name and m.get("labels", {}).get("op") == op)
    print(f"dyno {sys.argv[2]} {op} {get('throughput_bytes_per_sec') / 1e6:.2f} {get('cpu_ns_per_io'):.0f}")
PY
  done
done

python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, spec, op, mbs, cpu = line.split()
    rows.setdefault((spec, op), {}).setdefault(tool, []).append((float(mbs), float(cpu)))
print(f"{'test':<16}{'op':<7}{'fio MB/s':>10}{'dyno MB/s':>11}{'dyno/fio':>10}{'fio ns/IO':>11}{'dyno ns/IO':>12}{'CPU ratio':>11}")
for (spec, op), tools in rows.items():
    f = tools["fio"]; d = tools["dyno"]
    fm = statistics.median(x[0] for x in f); dm = statistics.median(x[0] for x in d)
    fc = statistics.median(x[1] for x in f); dc = statistics.median(x[1] for x in d)
    print(f"{spec:<16}{op:<7}{fm:>10.2f}{dm:>11.2f}{dm / fm:>9.3f}x{fc:>11.0f}{dc:>12.0f}{dc / fc:>10.3f}x")
PY
