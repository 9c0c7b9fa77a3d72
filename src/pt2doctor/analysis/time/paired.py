"""Compiled against eager, paired in the running program (``run --profile``: the probes time
a few calls of each compiled callable alternately compiled and under ``force_eager``, on the
same inputs, torchcompat/paired.py). Medians and their median absolute deviations, never
means: a call the machine preempted is one slow sample among ten, and it is counted and named.

The verdict is "slower compiled" only when the median says so beyond 5% *and* most pairs
agree (a sign test: at least 8 of 10 pairs slower compiled); a spread too wide to tell is said
as such, never turned into a finding.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from pt2doctor.analysis.findings.model import Finding, Subject

SLOWER_RATIO = 1.05
"""Compiled median above eager's by this much, at least, before it is called slower."""
PAIRS_AGREE = 0.8
"""The share of pairs that must be slower compiled."""
NOISY_SPREAD = 0.25
"""A median absolute deviation above this share of the median: too noisy to tell."""
PREEMPTED = 3.0
"""A call this many times its side's median: the machine did something else meanwhile."""
MIN_PAIRS = 5


@dataclass(frozen=True, slots=True)
class Paired:
    """One compiled callable's paired calls."""

    name: str
    file: str | None
    line: int | None
    compiled_ms: float
    """Median of the compiled calls."""
    eager_ms: float
    compiled_spread: float
    """Median absolute deviation of the compiled calls, ms."""
    eager_spread: float
    pairs: int
    slower_pairs: int
    """Pairs whose compiled call took longer than its eager one."""
    preempted: int
    """Calls far above their side's median (a loaded machine)."""

    @property
    def ratio(self) -> float:
        return self.compiled_ms / self.eager_ms if self.eager_ms > 0 else float("inf")

    @property
    def noisy(self) -> bool:
        return (self.compiled_spread > NOISY_SPREAD * self.compiled_ms
                or self.eager_spread > NOISY_SPREAD * self.eager_ms)  # fmt: skip

    @property
    def slower(self) -> bool:
        agree = self.slower_pairs >= PAIRS_AGREE * self.pairs
        return self.pairs >= MIN_PAIRS and self.ratio >= SLOWER_RATIO and agree

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "file": self.file, "line": self.line,
            "compiled_ms": round(self.compiled_ms, 6), "eager_ms": round(self.eager_ms, 6),
            "compiled_mad_ms": round(self.compiled_spread, 6),
            "eager_mad_ms": round(self.eager_spread, 6),
            "speedup": round(1 / self.ratio, 4) if self.ratio else None,
            "pairs": self.pairs, "slower_pairs": self.slower_pairs,
            "preempted": self.preempted, "noisy": self.noisy,
        }  # fmt: skip


def _mad(values: list[float], median: float) -> float:
    return statistics.median(abs(value - median) for value in values)


def paired_results(events: list[dict[str, Any]]) -> list[Paired]:
    """Each ``paired_calls`` event of the probes as a :class:`Paired` (events without both
    sides are left out)."""
    found = []
    for event in events:
        compiled = [float(v) for v in event.get("compiled_ms") or []]
        eager = [float(v) for v in event.get("eager_ms") or []]
        pairs = min(len(compiled), len(eager))
        if not pairs:
            continue
        c, e = statistics.median(compiled), statistics.median(eager)
        preempted = sum(v > PREEMPTED * c for v in compiled) + sum(v > PREEMPTED * e for v in eager)
        slower = sum(a > b for a, b in zip(compiled, eager, strict=False))
        line = event.get("line")
        found.append(Paired(
            str(event.get("name") or event.get("function") or "?"), event.get("file"),
            int(line) if isinstance(line, int) else None, c, e, _mad(compiled, c),
            _mad(eager, e), pairs, slower, preempted,
        ))  # fmt: skip
    return found


SLOWER_ADVICE = (
    "On work this small, what a compiled call costs before and after its kernels (guards, "
    "the wrapper, one launch per kernel) is more than what fusion saves. Serve it eagerly: "
    'drop torch.compile for it, or run it under torch.compiler.set_stance("force_eager"); '
    "or give each call more work (batch requests, so the fixed cost is paid once for many); "
    'on CUDA, mode="reduce-overhead" (CUDA graphs) removes most of the per-call cost.'
)


def compiled_vs_eager_findings(events: list[dict[str, Any]]) -> list[Finding]:
    """``compiled_slower_than_eager``: a compiled callable whose paired calls ran slower
    compiled than eager, with both measured numbers; what it saves per call is their
    difference."""
    findings = []
    for paired in paired_results(events):
        if not paired.slower:
            continue
        where = f" ({paired.file}:{paired.line})" if paired.file else ""
        title = (
            f"{paired.name}{where} is slower compiled than eager here: "
            f"{paired.compiled_ms:.3g} ms against {paired.eager_ms:.3g} ms per call "
            f"(median of {paired.pairs} paired calls, {paired.ratio:.2f}x)"
        )
        evidence = [
            f"{paired.pairs} pairs after warmup, each a compiled then an eager call on the same "
            f"inputs: compiled slower in {paired.slower_pairs} of {paired.pairs}",
            f"median absolute deviation: compiled {paired.compiled_spread:.3g} ms, eager "
            f"{paired.eager_spread:.3g} ms",
        ]
        if paired.preempted:
            evidence.append(f"{paired.preempted} call(s) over {PREEMPTED:g}x their median "
                            "(the machine was busy): the medians leave them out")  # fmt: skip
        subject = (
            Subject("lines", paired.name, paired.file, paired.line, None)
            if paired.file else Subject("program", paired.name)
        )  # fmt: skip
        findings.append(Finding(
            "warning", "compiled_slower_than_eager", title, SLOWER_ADVICE, evidence, subject,
            saves_ms=round(paired.compiled_ms - paired.eager_ms, 6),
            facts={"compiled_ms": round(paired.compiled_ms, 6),
                   "eager_ms": round(paired.eager_ms, 6), "pairs": paired.pairs},
        ))  # fmt: skip
    return findings
