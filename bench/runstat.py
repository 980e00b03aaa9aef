#!/usr/bin/env python3
"""Runs a command and prints its own CPU time and peak RSS on stderr as one
line: `runstat: user_s=… sys_s=… maxrss_kib=… wall_s=… rc=… sleeps=…`
(sleeps: voluntary context switches, the times it waited and had to be
woken). Used by the bench scripts to compare the client cost of load
generators side by side."""
import os
import resource
import subprocess
import sys
import time

start = time.monotonic()
proc = subprocess.run(sys.argv[1:])
wall = time.monotonic() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(
    f"runstat: user_s={usage.ru_utime:.4f} sys_s={usage.ru_stime:.4f} "
    f"maxrss_kib={usage.ru_maxrss} wall_s={wall:.3f} rc={proc.returncode} "
    f"sleeps={usage.ru_nvcsw}",
    file=sys.stderr,
)
sys.exit(proc.returncode)
