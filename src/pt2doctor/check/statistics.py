"""Statistics of steady-state samples: percentiles, throughput, speedup with a bootstrap
confidence interval, and a noise warning. Pure functions over raw samples (the samples
themselves stay in the run directory)."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pt2doctor.trace.spread import NOISY_PREEMPTED, PREEMPTED

BOOTSTRAP_RESAMPLES = 1000
# A spread wider than this (interquartile range over median) makes percentiles unreliable.
NOISY_IQR_RATIO = 0.25
# A speedup interval wider than this fraction of the speedup cannot tell small changes apart.
NOISY_CI_RATIO = 0.10
PREEMPTED_MIN_S = 1e-3
"""A preempted iteration is also this much over its side's median: a time slice, not jitter."""


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True)
class Distribution:
    count: int
    p50: float
    p95: float
    p99: float
    iqr: float
    mean: float
    throughput: float  # calls per second

    def as_dict(self) -> dict[str, Any]:
        return {
            key: (round(value, 9) if isinstance(value, float) else value)
            for key, value in (
                ("count", self.count),
                ("p50_s", self.p50),
                ("p95_s", self.p95),
                ("p99_s", self.p99),
                ("iqr_s", self.iqr),
                ("mean_s", self.mean),
                ("throughput_per_s", self.throughput),
            )
        }


def distribution(samples: Sequence[float]) -> Distribution:
    total = sum(samples)
    return Distribution(
        count=len(samples),
        p50=percentile(samples, 50),
        p95=percentile(samples, 95),
        p99=percentile(samples, 99),
        iqr=percentile(samples, 75) - percentile(samples, 25),
        mean=total / len(samples) if samples else math.nan,
        throughput=len(samples) / total if total > 0 else math.nan,
    )


def speedup_interval(
    eager: Sequence[float], compiled: Sequence[float], seed: int = 0
) -> tuple[float, float, float]:
    """Speedup (total eager time over total compiled time: the traffic mix as drawn) with a
    95% bootstrap interval over paired iterations (each iteration ran both on one input)."""
    pairs = list(zip(eager, compiled, strict=True))
    if not pairs or sum(compiled) <= 0:
        return math.nan, math.nan, math.nan
    rng = random.Random(seed)
    ratios = []
    for _ in range(BOOTSTRAP_RESAMPLES):
        drawn = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        slow = sum(pair[1] for pair in drawn)
        ratios.append(sum(pair[0] for pair in drawn) / slow if slow > 0 else math.nan)
    finite = [ratio for ratio in ratios if math.isfinite(ratio)]
    return sum(eager) / sum(compiled), percentile(finite, 2.5), percentile(finite, 97.5)


def noise_warnings(
    eager: Distribution, compiled: Distribution, interval: tuple[float, float, float]
) -> list[str]:
    """Why these numbers should not be trusted to a few percent, if they should not."""
    warnings = []
    for label, dist in (("eager", eager), ("compiled", compiled)):
        if dist.p50 > 0 and dist.iqr / dist.p50 > NOISY_IQR_RATIO:
            warnings.append(
                f"{label} latency spread is wide (IQR {dist.iqr / dist.p50:.0%} of the median):"
                " the machine is busy or the samples are too few"
            )
    speedup, low, high = interval
    if math.isfinite(speedup) and speedup > 0 and (high - low) / speedup > NOISY_CI_RATIO:
        warnings.append(
            f"speedup interval {low:.2f}-{high:.2f} is wider than {NOISY_CI_RATIO:.0%} of"
            f" {speedup:.2f}: raise --iterations"
        )
    return warnings


def iteration_totals(samples: Iterable[dict[str, Any]]) -> dict[str, list[float]]:
    """Seconds per iteration for eager and compiled (the parts of a training step summed),
    over the iterations where both ran, in iteration order."""
    totals: dict[str, dict[int, float]] = {"eager": {}, "compiled": {}}
    for sample in samples:
        per_kind = totals.get(str(sample.get("kind")))
        if per_kind is None or sample.get("seconds") is None:
            continue
        iteration = int(sample["iteration"])
        per_kind[iteration] = per_kind.get(iteration, 0.0) + float(sample["seconds"])
    both = sorted(set(totals["eager"]) & set(totals["compiled"]))
    return {kind: [values[i] for i in both] for kind, values in totals.items()}


def steady_summary(samples: Sequence[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """Summary of raw steady-state samples ``{iteration, kind: eager|compiled, part, seconds}``
    (part: call for inference; forward, backward, optimizer for training)."""
    totals = iteration_totals(samples)
    eager, compiled = totals["eager"], totals["compiled"]
    if not eager:
        return {"iterations": 0}
    parts: dict[tuple[str, str], list[float]] = {}
    for sample in samples:
        parts.setdefault((sample["kind"], sample["part"]), []).append(float(sample["seconds"]))
    dists = distribution(eager), distribution(compiled)
    preempted = preempted_iterations(eager, compiled)
    left_out = set(preempted)
    kept = [i for i in range(len(eager)) if i not in left_out]
    interval = speedup_interval([eager[i] for i in kept], [compiled[i] for i in kept], seed)
    warnings = noise_warnings(*dists, interval)
    if preempted:
        warnings.insert(0, preempted_warning(eager, compiled, preempted))
    return {
        "iterations": len(eager),
        "eager": dists[0].as_dict(),
        "compiled": dists[1].as_dict(),
        "parts": {
            f"{kind}.{part}": distribution(values).as_dict()
            for (kind, part), values in sorted(parts.items())
        },
        "speedup": _rounded(interval[0]),
        "speedup_ci95": [_rounded(interval[1]), _rounded(interval[2])],
        "noise_warnings": warnings,
        "preempted": preempted,
    }


def preempted_iterations(eager: Sequence[float], compiled: Sequence[float]) -> list[int]:
    """The 0-based steady iterations whose eager or compiled time is over PREEMPTED times its
    side's median (trace/spread.py's rule) and over it by at least PREEMPTED_MIN_S: the
    machine did something else meanwhile (a scheduler's time slice is milliseconds; a 20 us
    call's usual jitter is 3x). Fewer than five iterations tell nothing."""
    if len(eager) < 5:
        return []
    found: set[int] = set()
    for values in (eager, compiled):
        median = statistics.median(values)
        found |= {i for i, value in enumerate(values)
                  if value > PREEMPTED * median and value - median > PREEMPTED_MIN_S}  # fmt: skip
    return sorted(found)


def preempted_warning(
    eager: Sequence[float], compiled: Sequence[float], preempted: Sequence[int]
) -> str:
    """Which iterations were preempted and by how much; what is done with them."""
    sides = [(values, statistics.median(values)) for values in (eager, compiled)]
    worst, median = max(((values[i], mid) for values, mid in sides for i in preempted),
                        key=lambda pair: pair[0] / pair[1] if pair[1] > 0 else pair[0])  # fmt: skip
    shown = ", ".join(str(i) for i in preempted[:8]) + (", …" if len(preempted) > 8 else "")
    many = len(preempted) > NOISY_PREEMPTED * len(eager)
    return (
        f"{len(preempted)} of {len(eager)} steady iterations preempted (iteration {shown}: up "
        f"to {worst * 1e3:.3g} ms against a median of {median * 1e3:.3g} ms): left out of the "
        "speedup, kept in the percentiles"
        + (" (so many that the machine is too busy to time on: run again when it is quiet)"
           if many else "")
    )  # fmt: skip


def _rounded(value: float) -> float | None:
    return round(value, 4) if math.isfinite(value) else None
