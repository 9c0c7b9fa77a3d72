"""One difference between two reports (:class:`Change`), the noise floors a time change must
exceed (:class:`Noise`), and what every diff matches by: the pieces analysis/diff/reports.py
and the diffs of each concern (built/graph_diff.py, coldstart/cache_diff.py, time/diff.py)
share, so none of them imports another."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any


@dataclass(frozen=True)
class Noise:
    """A time change counts when it exceeds both floors."""

    rel: float = 0.25
    compile_s: float = 1.0
    per_call_s: float = 0.0005
    per_call_rel: float = 1.0
    """A time per call, summed by the probes with no spread, compared across two processes:
    two runs of one unchanged program differed by up to 1.9x on a shared 2-core machine (a
    blind-written sampler, 0.0052 → 0.0101 s), so only beyond 2x is it a change."""


@dataclass
class Change:
    """One difference. ``regression``: it makes B worse than A (what --fail-on-regression
    fails on); ``before``/``after`` are the two values (None where absent)."""

    kind: str
    subject: str
    before: Any
    after: Any
    regression: bool
    detail: str = ""


def file_name(path: str | None) -> str:
    """A file's name: the key part that survives another checkout, machine or --redact."""
    return PurePath(path or "").name


def _slower(before: float | None, after: float | None, floor: float, noise: Noise) -> bool:
    if before is None or after is None:
        return False
    return after - before > floor and after > before * (1 + noise.rel)


def _faster(before: float | None, after: float | None, floor: float, noise: Noise) -> bool:
    return _slower(after, before, floor, noise)


def time_change(kind: str, subject: str, before: Any, after: Any, floor: float,
                 noise: Noise) -> list[Change]:  # fmt: skip
    if _slower(before, after, floor, noise):
        return [Change(kind, subject, before, after, True, "slower beyond noise")]
    if _faster(before, after, floor, noise):
        return [Change(kind, subject, before, after, False, "faster beyond noise")]
    return []


def not_comparable(change: Change, why: str) -> Change:
    """``change``, no longer a regression: ``why`` the two values measure different things
    (appended to its detail)."""
    return Change(change.kind, change.subject, change.before, change.after, False,
                  f"{change.detail}; {why}")  # fmt: skip
