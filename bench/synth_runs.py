#!/usr/bin/env python3
"""Makes many stored-run look-alikes from one real dyno Run record, for
measuring how dyno compare and dyno report cope with large stores.

Usage: synth_runs.py TEMPLATE.json [--timeline SECONDS] GROUP=COUNT[xFACTOR] … > runs.json

Each GROUP gets COUNT copies of the template tagged GROUP, with fresh ids
and start times one hour apart (oldest first), every metric value jittered
by ±2% and, with xFACTOR, multiplied by FACTOR (so `b=100x1.05` is 5% higher
on every metric). Histograms and samples are kept as measured: the copies
are as heavy as real runs. With --timeline, an HTTP run's per-second
timeline (the samples of timeline_requests_per_sec and
timeline_latency_p99_ns) is stretched to SECONDS by repeating its measured
seconds, as an hour-long run would store it. The output is a JSON array for
`dyno import`.
"""
import json
import random
import sys
import time

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(ms: int, rng: random.Random) -> str:
    head = "".join(CROCKFORD[(ms >> (5 * i)) & 31] for i in reversed(range(10)))
    return head + "".join(rng.choice(CROCKFORD) for _ in range(16))


def main() -> None:
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    template = json.load(open(sys.argv[1]))
    args = sys.argv[2:]
    if args[:1] == ["--timeline"]:
        seconds = int(args[1])
        args = args[2:]
        for m in template["metrics"]:
            if m["name"].endswith(("timeline_requests_per_sec", "timeline_latency_p99_ns")):
                measured = m["samples"]
                m["samples"] = [measured[i % len(measured)] for i in range(seconds)]
    groups = []
    for arg in args:
        name, _, rest = arg.partition("=")
        count, _, factor = rest.partition("x")
        groups.append((name, int(count), float(factor or 1.0)))
    rng = random.Random(1)
    total = sum(n for _, n, _ in groups)
    start = int(time.time() * 1000) - total * 3_600_000
    runs = []
    for name, count, factor in groups:
        for _ in range(count):
            run = json.loads(json.dumps(template))
            ms = start + len(runs) * 3_600_000
            run["id"] = ulid(ms, rng)
            run["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ms / 1000))
            run["tags"] = [name]
            for m in run["metrics"]:
                m["value"] *= factor * rng.uniform(0.98, 1.02)
            runs.append(run)
    json.dump(runs, sys.stdout)


if __name__ == "__main__":
    main()
