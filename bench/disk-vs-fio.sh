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
# dyno/fio is printed twice: the ratio of the two medians, and the median of
# the ratios within each round (the two tools' runs of a round are seconds
# apart, so the second cancels slow drift of a shared disk).
#
# Usage: bench/disk-vs-fio.sh [ROUNDS] [SECONDS] [SIZE] [DIR] [TESTS]
#   defaults: 3 rounds, 5 s per pass, a 1g file in a temporary directory
#   under the current directory (tmpfs has no direct I/O: use a real disk),
#   the cdm8 tests "seq:1m:q8:t1 seq:1m:q1:t1 rnd:4k:q32:t1 rnd:4k:q1:t1".
#   DIR=ramdisk: an ext4 file system on a loop device backed by a file in
#   /dev/shm (root only), made for the run and removed after: a "device"
#   with no other tenants, so the comparison shows the engines' own costs
#   (the loop driver's copying runs in kernel threads neither tool counts).
#   TESTS: e.g. "rnd:4k:q32:t16" for the nvme preset's multi-thread row.
# DYNO=path/to/dyno runs that build instead of this checkout's.
# Needs: fio (Debian package); installs it when run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-3}
SECS=${2:-5}
SIZE=${3:-1g}
DIR=${4:-$PWD}
TESTS=${5:-"seq:1m:q8:t1 seq:1m:q1:t1 rnd:4k:q32:t1 rnd:4k:q1:t1"}

# shellcheck source=bench/lib.sh
. "$PWD/bench/lib.sh"
need_tools fio fio fio
dyno_build
RAMDISK=
cleanup() {
  rm -rf "${WORK:-}"
  if [ -n "$RAMDISK" ]; then
    umount "$RAMDISK/mnt" 2>/dev/null || true
    [ -n "${LOOPDEV:-}" ] && losetup -d "$LOOPDEV" 2>/dev/null || true
    rm -rf "$RAMDISK"
  fi
}
trap cleanup EXIT
if [ "$DIR" = ramdisk ]; then
  RAMDISK=$(mktemp -d -p /dev/shm dyno-bench-ramdisk.XXXXXX)
  # Room for fio's file, dyno's file and dyno's free-space margin.
  truncate -s "$(( $(numfmt --from=iec "${SIZE^^}") * 2 + (512 << 20) ))" "$RAMDISK/backing"
  LOOPDEV=$(losetup --find --show "$RAMDISK/backing")
  mkfs.ext4 -q -E nodiscard "$LOOPDEV"
  mkdir "$RAMDISK/mnt"
  mount "$LOOPDEV" "$RAMDISK/mnt"
  DIR=$RAMDISK/mnt
fi
WORK=$(mktemp -d -p "$DIR" dyno-bench-disk.XXXXXX)
echo "dyno $($DYNO --version | cut -d' ' -f2-) vs $(fio --version); $ROUNDS rounds, ${SECS}s per pass, $SIZE file in $WORK"
echo "file system: $(df -T "$WORK" | awk 'NR==2{print $2" on "$1}')"

# dyno makes and fills its own file for each test; fio gets a freshly laid
# out file for each test too, so both measure a file written seconds
# before (a host's cache under a VM's disk favours a recently written file).
FIOFILE=$WORK/fio.dat
layout() {
  rm -f "$FIOFILE"
  fio --name=layout --filename="$FIOFILE" --size="$SIZE" --rw=write --bs=1m \
    --direct=1 --ioengine=io_uring --output-format=terse > /dev/null
}

: > "$WORK/results"
for round in $(seq "$ROUNDS"); do
  for spec in $TESTS; do
    IFS=: read -r pattern bs qd th <<< "$spec"
    qd=${qd#q}; th=${th#t}
    # dyno gives each thread of a sequential test its own region; so does fio.
    SEQ_REGIONS=()
    if [ "$pattern" = seq ] && [ "$th" -gt 1 ]; then
      region=$(( $(numfmt --from=iec "${SIZE^^}") / th ))
      SEQ_REGIONS=(--size="$region" --offset_increment="$region")
    fi
    layout
    for op in read write; do
      if [ "$pattern" = seq ]; then rw=$op; else rw=rand$op; fi
      fio --name=job --filename="$FIOFILE" --size="$SIZE" --rw="$rw" --bs="$bs" \
        --iodepth="$qd" --numjobs="$th" \
        --ioengine=io_uring --direct=1 --time_based --ramp_time=1 --runtime="$SECS" \
        "${SEQ_REGIONS[@]}" --output-format=json > "$WORK/fio.json"
      python3 - "$WORK/fio.json" "$spec" "$op" "$round" >> "$WORK/results" <<'PY'
import json, sys
# One entry per job (no group_reporting): bytes, I/Os and CPU summed.
jobs = json.load(open(sys.argv[1]))["jobs"]
op = sys.argv[3]
bw = sum(j[op]["bw_bytes"] for j in jobs)
ios = sum(j[op]["total_ios"] for j in jobs)
cpu_s = sum((j["usr_cpu"] + j["sys_cpu"]) / 100 * j[op]["runtime"] / 1000 for j in jobs)
print(f"fio {sys.argv[4]} {sys.argv[2]} {op} {bw / 1e6:.2f} {cpu_s / max(ios, 1) * 1e9:.0f}")
PY
    done
    "$DYNO" disk "$WORK" --test "$spec" --size "$SIZE" --runs 1 --warmup 1s \
      -d "${SECS}s" --interval 0 --no-save --json > "$WORK/dyno.json"
    python3 - "$WORK/dyno.json" "$spec" "$round" >> "$WORK/results" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
for op in ("read", "write"):
    get = lambda name: next(m["value"] for m in run["metrics"]
                            if m["name"] == name and m.get("labels", {}).get("op") == op)
    print(f"dyno {sys.argv[3]} {sys.argv[2]} {op} {get('throughput_bytes_per_sec') / 1e6:.2f} {get('cpu_ns_per_io'):.0f}")
PY
  done
done

python3 - "$WORK/results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    tool, rnd, spec, op, mbs, cpu = line.split()
    rows.setdefault((spec, op), {}).setdefault(tool, {})[rnd] = (float(mbs), float(cpu))
# "fio spread": (max - min) / median of fio's own MB/s over the rounds, the
# noise floor any dyno/fio ratio sits on.
print(f"{'test':<15}{'op':<6}{'fio MB/s':>10}{'fio spread':>11}{'dyno MB/s':>11}{'dyno/fio':>10}"
      f"{'per round':>11}{'fio ns/IO':>11}{'dyno ns/IO':>12}{'CPU ratio':>11}{'per round':>11}")
med = statistics.median
for (spec, op), tools in rows.items():
    f = tools["fio"]; d = tools["dyno"]
    fmbs = [x[0] for x in f.values()]
    fm = med(fmbs); dm = med(x[0] for x in d.values())
    fc = med(x[1] for x in f.values()); dc = med(x[1] for x in d.values())
    both = [r for r in f if r in d]
    rmb = med(d[r][0] / f[r][0] for r in both)
    rcpu = med(d[r][1] / f[r][1] for r in both)
    spread = (max(fmbs) - min(fmbs)) / fm * 100
    print(f"{spec:<15}{op:<6}{fm:>10.2f}{spread:>10.0f}%{dm:>11.2f}{dm / fm:>9.3f}x{rmb:>10.3f}x"
          f"{fc:>11.0f}{dc:>12.0f}{dc / fc:>10.3f}x{rcpu:>10.3f}x")
PY
