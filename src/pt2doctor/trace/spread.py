"""Durations kept as a log-bucket histogram: a median and a spread (MAD) per compiled graph
without keeping every call.

The probes count each call of a compiled graph into bucket ``floor(ln(seconds) * 20)``: a
bucket spans 5%, so a median read back is within 2.5% of the calls' true median, and one
preempted call moves the median by at most one bucket instead of inflating a mean (a mean over
a few hundred calls with two 100 ms stalls read a 6 ms call as 7 ms).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

BUCKETS_PER_E = 20
_SMALLEST_S = 1e-9


def spread_bucket(seconds: float) -> int:
    """The bucket one call of ``seconds`` is counted in."""
    return math.floor(math.log(max(seconds, _SMALLEST_S)) * BUCKETS_PER_E)


def bucket_seconds(bucket: int) -> float:
    """The middle of a bucket, in seconds (geometric)."""
    return math.exp((bucket + 0.5) / BUCKETS_PER_E)


def _weighted_median(values: list[tuple[float, int]]) -> float:
    values = sorted(values)
    half = sum(count for _, count in values) / 2
    seen = 0
    for value, count in values:
        seen += count
        if seen >= half:
            return value
    return values[-1][0]


def median_mad(buckets: Mapping[int, int]) -> tuple[float, float] | None:
    """(median, median absolute deviation) in seconds of the calls counted in ``buckets``;
    None when it counts no call."""
    counted = [(bucket_seconds(b), n) for b, n in buckets.items() if n > 0]
    if not counted:
        return None
    median = _weighted_median(counted)
    return median, _weighted_median([(abs(value - median), n) for value, n in counted])
