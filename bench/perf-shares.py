#!/usr/bin/env python3
"""Splits a `perf script` dump of one load client (dyno, or its peer: wrk,
h2load, pgbench) by where its CPU went, in µs per request. Used by
bench/profile.sh.

Usage: perf-shares.py PERF_SCRIPT_TEXT PERIOD_NS REQUESTS [CLIENT]

Each sample stands for PERIOD_NS of CPU (perf record -e cpu-clock -c
PERIOD_NS). A sample whose innermost frame is in the kernel is kernel
time, in the first of these parts its call stack belongs to:

  read's ACK     a read (tcp_recvmsg) that sends an ACK (__tcp_transmit_skb),
                 with what loopback does with it at once on the client's
                 CPU: the server's socket takes it in and, when it opens
                 the window, sends the server's queued data, which the
                 client's socket receives. Over HTTP/2 with large answers
                 this is the server's sending done on the client's CPU
  wake server    waking a sleeping task (sock_def_readable, try_to_wake_up):
                 on loopback and over Unix sockets a send delivers into
                 the server's socket at once and wakes the server from its
                 wait, on the client's CPU
  send           the rest of a send (write, sendto, sendmsg, writev): the
                 copy, TCP's work, the loopback delivery
  receive        the rest of a read (read, recvfrom, recvmsg, readv)
  events         waiting for and arming events (epoll_wait, epoll_ctl,
                 poll, ppoll), and sleeping in the scheduler
  kernel other   the rest: timers, page faults, other system calls

A user-space sample goes to the innermost frame, walking out from the
leaf, that belongs to one of:

  protocol      the wire: dyno's HTTP/1.1 parsing and HTTP/2 framing, its
                PostgreSQL messages (tokio-postgres, postgres-protocol);
                the peers' libpq and libnghttp2
  hpack         HTTP/2 header compression (httlib-hpack; nghttp2's is
                inside libnghttp2, so in protocol)
  runtime       the event loop: tokio and mio; libev for h2load
  engine        the client's own code: dyno's engine (connections,
                timing, histograms, the script interpreter), or the peer's
                executable
  libc          C library frames with no owner found in the stack (the
                peers' stacks, unwound by frame pointers, often stop there)

Frames of the allocator, `bytes`, `http`'s types and `core`/`std` are
passed over, so their cost lands with whoever called them. Samples with
none of these frames (a stack perf could not unwind) are "unattributed".
"""
import collections
import os
import re
import sys

def calls(*names):
    """A test of a sample's symbols: does it hold any of `names`?"""
    return lambda symbols: any(n in symbols for n in names)


# Kernel and libc names both: a system call's entry and exit are sampled
# with only the user-space caller's frame above them.
KERNEL = [
    ("read's ACK", lambda s: "__tcp_transmit_skb" in s
        and ("tcp_recvmsg" in s or "tcp_recvmsg_locked" in s)),
    ("wake server", calls("try_to_wake_up", "sock_def_readable", "ep_poll_callback",
                          "__wake_up_common", "__wake_up_sync_key")),
    ("send", calls("ksys_write", "__sys_sendto", "__sys_sendmsg", "do_writev",
                   "sock_write_iter", "tcp_sendmsg", "tcp_sendmsg_locked",
                   "unix_stream_sendmsg", "__x64_sys_write", "__x64_sys_sendto",
                   "write", "writev", "sendto", "sendmsg", "__libc_send",
                   "__libc_write", "__GI___libc_write", "__send")),
    ("receive", calls("ksys_read", "__sys_recvfrom", "__sys_recvmsg", "do_readv",
                      "sock_read_iter", "tcp_recvmsg", "tcp_recvmsg_locked",
                      "unix_stream_recvmsg", "__x64_sys_read", "__x64_sys_recvfrom",
                      "read", "readv", "recvfrom", "recvmsg", "__libc_recv",
                      "__libc_read", "__GI___libc_read", "__recv")),
    ("events", calls("do_epoll_wait", "ep_poll", "do_epoll_ctl", "do_sys_poll",
                     "__x64_sys_epoll_wait", "__x64_sys_epoll_ctl", "__x64_sys_ppoll",
                     "__x64_sys_poll", "do_select", "schedule", "epoll_wait",
                     "epoll_ctl", "ppoll", "poll", "__poll", "__ppoll")),
]
USER = [
    ("hpack", re.compile(r"^<?httlib_(hpack|huffman)::")),
    ("protocol", re.compile(
        r"^<?(dyno_http::(http2|parse)::|httparse::|tokio_postgres::|postgres_protocol::|dyno_db::wire::)")),
    ("runtime", re.compile(r"^<?(tokio::|mio::)")),
    ("engine", re.compile(r"^<?(dyno|hdrhistogram)")),
]
# The peers' frames, by the file they are in.
BY_FILE = [
    ("protocol", re.compile(r"/lib(pq|nghttp2)\.so")),
    ("runtime", re.compile(r"/libev\.so")),
    ("engine", re.compile(r"/(wrk|h2load|pgbench)$")),
    ("libc", re.compile(r"/libc\.so")),
]
ORDER = ["read's ACK", "wake server", "send", "receive", "events", "kernel other",
         "protocol", "hpack", "runtime", "engine", "libc", "unattributed"]
FRAME = re.compile(r"^\s*[0-9a-f]+ (.+?)(\+0x[0-9a-f]+)? \((.*)\)$")


def owner(frames):
    """The part of one sample, from its frames, innermost first."""
    if not frames:
        return "unattributed"
    if "kernel" in frames[0][1]:
        symbols = {symbol for symbol, _ in frames}
        for name, test in KERNEL:
            if test(symbols):
                return name
        return "kernel other"
    for symbol, _ in frames:
        for name, pattern in USER:
            if pattern.search(symbol):
                return name
    for _, where in frames:
        for name, pattern in BY_FILE:
            if pattern.search(os.path.realpath(where) if where.startswith("/") else where):
                return name
    return "unattributed"


def main():
    path, period_ns, requests = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    client = sys.argv[4] if len(sys.argv) > 4 else "client"
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
    print(f"  {'where':14} {client[:9]:>9} {'share':>6}")
    for name in ORDER:
        print(f"  {name:14} {us(counts[name]):9.2f} {counts[name] * 100 / total:5.1f}%")
    print(f"  {'total':14} {us(total):9.2f} {total:6}")
    # One machine-readable line for the caller; kernel parts start "k_".
    key = lambda k: ("k_" if ORDER.index(k) < 6 else "") + re.sub(r"[^a-z_]", "", k.lower().replace(" ", "_"))
    print("shares: " + " ".join(f"{key(k)}={us(v):.3f}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
