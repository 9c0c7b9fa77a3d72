"""Durations kept as a log-bucket histogram: a median and a spread (MAD) per compiled graph
without keeping every call.

The probes count each call of a compiled graph into bucket ``floor(ln(seconds) * 20)``: a
bucket spans 5%, so a median read back is within 2.5% of the calls' true median, and one
preempted call moves the median by at most one bucket instead of inflating a mean (a mean over
a few hundred calls with two 100 ms stalls read a 6 ms call as 7 ms).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

PREEMPTED = 3.0
"""A call this many times the median call: the machine did something else meanwhile."""
NOISY_SPREAD = 0.25
"""A median absolute deviation above this share of the median: too noisy to tell."""
NOISY_PREEMPTED = 0.25
"""More than this share of the calls preempted: too noisy to tell, whatever is left out."""
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


@dataclass(frozen=True, slots=True)
class CallsNoise:
    """How noisy a run of calls was: their median and MAD, and the calls the machine preempted
    (:func:`calls_noise`)."""

    calls: int
    median_ms: float
    mad_ms: float
    """Median absolute deviation of the calls that were not preempted."""
    preempted: tuple[int, ...]
    """Indices of the preempted calls, in order."""
    slowest: tuple[float, ...]
    """Each preempted call's wall time, ms."""
    off_cpu_ms: tuple[float, ...]
    """Each preempted call's time off the CPU (wall less the thread's CPU time), ms, one per
    preempted call; empty when CPU times were not recorded."""

    @property
    def noisy(self) -> bool:
        """Too noisy to trust a verdict on, even with the preempted calls left out."""
        kept = self.calls - len(self.preempted)
        return (
            kept <= 0
            or len(self.preempted) > NOISY_PREEMPTED * self.calls
            or self.mad_ms > NOISY_SPREAD * self.median_ms
        )

    @property
    def score(self) -> float:
        """Lower is quieter: the preempted share plus the spread's share of the median."""
        spread = self.mad_ms / self.median_ms if self.median_ms > 0 else 1.0
        return len(self.preempted) / max(self.calls, 1) + spread

    def as_json(self) -> dict[str, object]:
        return {
            "calls": self.calls,
            "median_ms": round(self.median_ms, 6),
            "mad_ms": round(self.mad_ms, 6),
            "preempted": list(self.preempted),
            "preempted_ms": [round(v, 3) for v in self.slowest],
            "off_cpu_ms": [round(v, 3) for v in self.off_cpu_ms],
            "noisy": self.noisy,
        }


def calls_noise(walls_ms: Sequence[float], cpus_ms: Sequence[float] = ()) -> CallsNoise | None:
    """The noise of a run of calls from each call's wall time (and, when given, the calling
    thread's CPU time over it). A call is preempted when it took over PREEMPTED times the
    median, or when it spent more than a whole median call off the CPU beyond what the median
    call does (a stopped or descheduled process: the wall clock runs, the thread's does not).
    The median and its MAD are then over the other calls. None for no calls."""
    if not walls_ms:
        return None
    median = statistics.median(walls_ms)
    # CPU times count only as one per call (a window.json cut short has none to pair).
    pairs = len(cpus_ms) == len(walls_ms)
    off = [w - c for w, c in zip(walls_ms, cpus_ms, strict=True)] if pairs else []
    usual_off = statistics.median(off) if off else 0.0
    preempted = tuple(
        i
        for i, wall in enumerate(walls_ms)
        if wall > PREEMPTED * median or (off and off[i] - usual_off > median)
    )
    left_out = set(preempted)
    kept = [w for i, w in enumerate(walls_ms) if i not in left_out] or list(walls_ms)
    kept_median = statistics.median(kept)
    mad = statistics.median(abs(w - kept_median) for w in kept)
    return CallsNoise(
        len(walls_ms),
        kept_median,
        mad,
        preempted,
        tuple(walls_ms[i] for i in preempted),
        tuple(off[i] for i in preempted) if off else (),
    )


def rank_p_smaller(smaller: Sequence[float], larger: Sequence[float]) -> float:
    """The one-sided p-value of the rank-sum (Mann-Whitney U) test that the values of
    ``smaller`` tend to be below those of ``larger``: the chance of ranks so far apart if both
    came from one distribution (normal approximation with ties counted half and a continuity
    correction; 1.0 for an empty side). Two windows of calls timed in two processes: one load
    spike moves a median little and a rank sum less."""
    n, m = len(smaller), len(larger)
    if not n or not m:
        return 1.0
    u = sum(1.0 if a < b else 0.5 if a == b else 0.0 for a in smaller for b in larger)
    mean, sd = n * m / 2, math.sqrt(n * m * (n + m + 1) / 12)
    z = (u - mean - 0.5) / sd  # u above its mean: ``smaller`` is below
    return 0.5 * math.erfc(z / math.sqrt(2))
