#!/usr/bin/env python3
# The change points of a published E-divisive implementation, for
# crates/stats/tests/reference.rs to hold dyno's own (crates/stats/src/
# changes.rs) against: Apache Otava 0.8.0 (PyPI `apache-otava`), the
# Apache incubator continuation of DataStax's Hunter.
#
# stdin:  {"series": [[floats], ...], "alpha": 0.01, "min_change": 0.05,
#          "method": "otava"}            (method optional, see below)
# stdout: {"tool": "apache-otava", "version": "0.8.0", "method": "...",
#          "changes": [[indexes], ...]}
#
# Each index is the first value after a change, dyno's convention. Otava's
# ChangePoint.index is already that (the first element of the right-hand
# slice series[τ:κ]; index 0 can never be one), so no conversion is made.
#
# The API used (otava/analysis.py), the one `otava analyze` runs:
#   method "otava" (default) — compute_change_points(series, window_len,
#     max_pvalue, min_magnitude) -> (change_points, weak_change_points):
#     Hunter's (Fleming et al., ICPE 2023) E-divisive in sliding windows of
#     window_len runs (step window_len/2), each split kept when a Student
#     t-test of its two sides gives p <= 10 * max_pvalue ("weak" points);
#     then a merge step drops, the weakest first, every point whose
#     t-test against its neighbouring segments has p >= max_pvalue or
#     whose magnitude is <= min_magnitude.
#   method "orig" — compute_change_points_orig(series, max_pvalue, seed):
#     Matteson & James' E-divisive with a permutation test (100
#     permutations, fixed in Otava), no window, no merge, no magnitude.
#
# Mapping of dyno's settings (changes::Settings) to Otava's:
#   alpha      -> max_pvalue   (dyno splits at p <= alpha; Otava's split
#                               step uses 10 * max_pvalue, its merge
#                               keeps p < max_pvalue)
#   min_change -> min_magnitude (dyno: |mean_after/mean_before - 1| >=
#                               min_change; Otava: max(|r - 1|, |1/r - 1|)
#                               > min_magnitude, so a drop of 4.8% passes
#                               a 5% limit in Otava, not in dyno)
# Not mapped:
#   min_segment  — Otava has none: a side of a split may be one run
#                  (dyno: at least 4 a side, 2 for the newest change).
#   permutations, seed — Otava's default method has no permutation test
#                  (a t-test instead); "orig" uses 100 permutations and a
#                  numpy generator seeded with 0 here.
#   window_len   — dyno has no window (it splits the whole series); left
#                  at Otava's default of 50 runs.
#   dyno's relocation of the last change (to where a step of the mean
#   best fits) has no counterpart.
import json
import sys
from importlib.metadata import version

from otava.analysis import compute_change_points, compute_change_points_orig

WINDOW_LEN = 50  # Otava's default (AnalysisOptions.window_len)


def changes(values, alpha, min_change, method):
    values = [float(v) for v in values]
    if method == "orig":
        points, _ = compute_change_points_orig(values, max_pvalue=alpha, seed=0)
    elif method == "otava":
        points, _ = compute_change_points(
            values, window_len=WINDOW_LEN, max_pvalue=alpha, min_magnitude=min_change
        )
    else:
        raise SystemExit(f"changes-reference.py: unknown method {method!r}")
    return sorted(int(p.index) for p in points)


def main():
    query = json.load(sys.stdin)
    alpha = float(query.get("alpha", 0.01))
    min_change = float(query.get("min_change", 0.05))
    method = query.get("method", "otava")
    found = [changes(s, alpha, min_change, method) for s in query["series"]]
    json.dump(
        {
            "tool": "apache-otava",
            "version": version("apache-otava"),
            "method": method,
            "changes": found,
        },
        sys.stdout,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
