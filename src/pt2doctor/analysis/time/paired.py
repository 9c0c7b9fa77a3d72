"""Compiled against eager, paired in the running program (``run --profile``: the probes time
a few calls of each compiled callable alternately compiled and as the program wrote it, on the
program's own inputs, torchcompat/paired.py). Medians and their median absolute deviations,
never means: a call the machine preempted is one slow sample among twenty, and it is counted
and named.

The verdict is "slower compiled" only when the median says so beyond 5% *and* the pairs do:
an exact one-sided sign test (p <= 0.05; 15 of 20 pairs), over the pairs in which neither
call was preempted. Each pair is one vote, whatever its size: a machine's noise only ever
makes a call slower, and a preempted eager call would otherwise weigh as the largest
difference of all (a rank test's weakness here).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from pt2doctor.analysis.findings.model import Finding, Subject
from pt2doctor.trace.spread import NOISY_SPREAD, PREEMPTED

SLOWER_RATIO = 1.05
"""Compiled median above eager's by this much, at least, before it is called slower."""
SIGNIFICANCE = 0.05
"""The one-sided p-value of the sign test at or under which the pairs say slower."""
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
    p_value: float = 1.0
    """The sign test's, one-sided, over the pairs without a preempted call: the chance of so
    many pairs slower compiled if compiled and eager took the same time."""

    @property
    def ratio(self) -> float:
        return self.compiled_ms / self.eager_ms if self.eager_ms > 0 else float("inf")

    @property
    def noisy(self) -> bool:
        return (self.compiled_spread > NOISY_SPREAD * self.compiled_ms
                or self.eager_spread > NOISY_SPREAD * self.eager_ms)  # fmt: skip

    @property
    def slower(self) -> bool:
        agree = self.p_value <= SIGNIFICANCE
        return self.pairs >= MIN_PAIRS and self.ratio >= SLOWER_RATIO and agree

    @property
    def verdict(self) -> str:
        """``slower``; ``cannot tell`` when the calls were too noisy for the pairs to say so
        (a noisy window does not make "not slower" either); else ``not slower``."""
        if self.slower:
            return "slower"
        return "cannot tell" if self.noisy or self.pairs < MIN_PAIRS else "not slower"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "file": self.file, "line": self.line,
            "compiled_ms": round(self.compiled_ms, 6), "eager_ms": round(self.eager_ms, 6),
            "compiled_mad_ms": round(self.compiled_spread, 6),
            "eager_mad_ms": round(self.eager_spread, 6),
            "speedup": round(1 / self.ratio, 4) if self.ratio else None,
            "pairs": self.pairs, "slower_pairs": self.slower_pairs,
            "preempted": self.preempted, "noisy": self.noisy,
            "p_value": round(self.p_value, 4), "verdict": self.verdict,
        }  # fmt: skip


def _mad(values: list[float], median: float) -> float:
    return statistics.median(abs(value - median) for value in values)


def sign_test_p(slower: int, pairs: int) -> float:
    """One-sided exact sign test: the chance of ``slower`` or more of ``pairs`` pairs slower
    compiled if either side were as likely to win each pair."""
    if pairs <= 0:
        return 1.0
    return float(sum(math.comb(pairs, k) for k in range(slower, pairs + 1)) / 2**pairs)


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
        kept = [(a, b) for a, b in zip(compiled, eager, strict=False)
                if a <= PREEMPTED * c and b <= PREEMPTED * e]  # fmt: skip
        slower = sum(a > b for a, b in kept)
        ties = sum(a == b for a, b in kept)
        line = event.get("line")
        found.append(Paired(
            str(event.get("name") or event.get("function") or "?"), event.get("file"),
            int(line) if isinstance(line, int) else None, c, e, _mad(compiled, c),
            _mad(eager, e), pairs, slower, preempted, sign_test_p(slower, len(kept) - ties),
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
            f"inputs: compiled slower in {paired.slower_pairs} of {paired.pairs} (sign test, "
            f"one-sided, preempted pairs left out: p = {paired.p_value:.2g})",
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
