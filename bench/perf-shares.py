#!/usr/bin/env python3
"""Splits a `perf script` dump of an HTTP/2 client (dyno's, or h2load's)
into who spent the CPU, in µs per request. Used by bench/h2-profile.sh.

Usage: perf-shares.py PERF_SCRIPT_TEXT PERIOD_NS REQUESTS

Each sample stands for PERIOD_NS of CPU (perf record -e cpu-clock -c
PERIOD_NS). A sample whose innermost frame is in the kernel counts as
kernel time, whoever made the system call, in one of two parts:

  server's send   a read of the client's (tcp_recvmsg) that sent an ACK
                  opening its window (__tcp_transmit_skb), and what
                  loopback did with it at once on the client's CPU: the
                  ACK taken in by the server's socket, the server's queued
                  data sent, and that data received into the client's
                  socket. The server's sending, done on the client's CPU
  kernel          the rest: the client's own system calls, copies, sleeps

A user-space sample goes to the
innermost frame, walking out from the leaf, that belongs to one of:

  hpack         httlib-hpack and its Huffman coder: header blocks encoded
                and decoded (with the allocations they make)
  http2         dyno's HTTP/2 session (crate::http2): framing, flow
                control, the stream table
  tokio         the runtime: scheduler, timers, I/O driver
  dyno          dyno's own engine: the connection loop, tickets,
                requests, timing, histograms

Frames of the allocator, libc, `bytes`, `http`'s types and `core`/`std`
are passed over, so their cost lands with whoever called them. Samples
with none of these frames (a stack perf could not unwind) are counted as
"unattributed".
"""
import collections
import re
import sys

CATEGORIES = [
    ("hpack", re.compile(r"^<?httlib_(hpack|huffman)::")),
    ("http2", re.compile(r"^<?dyno_http::http2::")),
    ("tokio", re.compile(r"^<?(tokio::|mio::)")),
    ("dyno", re.compile(r"^<?(dyno|hdrhistogram)")),
]
FRAME = re.compile(r"^\s*[0-9a-f]+ (.+?)(\+0x[0-9a-f]+)? \((.*)\)$")


def owner(frames):
    """The category of one sample, from its frames, innermost first."""
    if not frames:
        return "unattributed"
    if "kernel" in frames[0][1]:
        symbols = [symbol for symbol, _ in frames]
        if "__tcp_transmit_skb" in symbols and "tcp_recvmsg" in symbols:
            return "server's send"
        return "kernel"
    for symbol, _ in frames:
        for name, pattern in CATEGORIES:
            if pattern.search(symbol):
                return name
    return "unattributed"


def main():
    path, period_ns, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    counts = collections.Counter()
    for sample in open(path, errors="replace").read().split("\n\n"):
        lines = sample.strip().split("\n")
        if not lines or not lines[0].strip():
            continue
        frames = []
        for line in lines[1:]:
            m = FRAME.match(line)
            if m:
                frames.append((m.group(1), m.group(3)))
        counts[owner(frames)] += 1
    total = sum(counts.values())
    if total == 0 or requests == 0:
        sys.exit("perf-shares: no samples or no requests")
    us = lambda n: n * period_ns / 1000 / requests
    print(f"  {'where':14} {'µs/req':>9} {'share':>6}")
    for name in ["server's send", "kernel", "hpack", "http2", "tokio", "dyno", "unattributed"]:
        print(f"  {name:14} {us(counts[name]):9.2f} {counts[name] * 100 / total:5.1f}%")
    print(f"  {'total':14} {us(total):9.2f}   ({total} samples)")
    # One machine-readable line for the caller.
    key = lambda k: k.replace(" ", "_").replace("'", "")
    print("shares: " + " ".join(f"{key(k)}={us(v):.3f}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
