#!/usr/bin/env python3
"""Runs a command and prints its own CPU time and peak RSS on stderr as one
line: `runstat: user_s=… sys_s=… maxrss_kib=… wall_s=… rc=… sleeps=…
anon_peak_kib=…` (sleeps: voluntary context switches, the times it waited
and had to be woken). Used by the bench scripts to compare the client cost
of load generators side by side.

CPU time and sleeps come from wait4, for this child alone: a pyenv shim
runs a few programs before Python starts, 0.05 s of CPU that
RUSAGE_CHILDREN counted. The peaks are sampled every 10 ms from /proc, so
a peak shorter than that may be missed:
- maxrss_kib: VmHWM, the peak RSS of the program's own memory. The
  kernel's ru_maxrss is no use here: Linux keeps a peak across exec, so
  any program started from this interpreter reported its 14 MiB at least.
  It counts the pages of the program's code it touched, so a build whose
  hot code lies over more pages shows a larger peak with the same
  allocations;
- anon_peak_kib: RssAnon (heap, stacks, anonymous maps: what the program
  allocated).
"""
import os
import sys
import threading
import time


def status_kib(pid, fields):
    """The `fields` of /proc/PID/status in KiB (absent: 0), or None once it
    is gone."""
    found = dict.fromkeys(fields, 0)
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in found:
                    found[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return found


start = time.monotonic()
# posix_spawn, not fork: nothing of this interpreter is copied.
pid = os.posix_spawnp(sys.argv[1], sys.argv[1:], os.environ)
peak = {"VmHWM": 0, "RssAnon": 0}
done = threading.Event()


def sample():
    while not done.is_set():
        # posix_spawn returns once the program runs: its status is its own.
        now = status_kib(pid, peak)
        if now is not None:
            for name, kib in now.items():
                peak[name] = max(peak[name], kib)
        done.wait(0.01)


sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
_, status, usage = os.wait4(pid, 0)
rc = os.waitstatus_to_exitcode(status)
done.set()
sampler.join()
wall = time.monotonic() - start
print(
    f"runstat: user_s={usage.ru_utime:.4f} sys_s={usage.ru_stime:.4f} "
    f"maxrss_kib={peak['VmHWM']} wall_s={wall:.3f} rc={rc} "
    f"sleeps={usage.ru_nvcsw} anon_peak_kib={peak['RssAnon']}",
    file=sys.stderr,
)
sys.exit(rc)
