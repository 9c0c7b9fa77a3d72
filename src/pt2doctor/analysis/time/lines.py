"""Whose line ran the eager time: the profile window's stack samples (capture/sampler.py) laid
on the trace, each sample that fell inside an eager ATen op the time split counts (outside
every Inductor graph call, ``ProfileView.eager_spans``), and outside the time torch's
profiler already labels (an optimizer step, data loading), counted for the innermost line of
the user's own code on its stack.

The sampler's clock and the trace's are paired by the window's marks: each ``pt2doctor: call``
mark is an event in the trace and a ``perf_counter_ns`` in window.json (``marks_ns``); their
median difference maps a sample onto the trace. A line's time is its share of those samples
times the eager op time the trace measured, so the samples divide a measured time and never
stand for one.
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pt2doctor.analysis.paths import library_path, short_library_path
from pt2doctor.analysis.time.owners import OWNER_PREFIXES
from pt2doctor.analysis.time.profile import ProfileView
from pt2doctor.rundir import PROFILE_PERIOD_MARK
from pt2doctor.trace.chrome import ChromeTrace

_OWN_PACKAGE = str(Path(__file__).resolve().parents[2]) + "/"
MIN_SAMPLES = 5
"""Eager-op samples below this name no line: too few to split a time by."""


@dataclass(frozen=True, slots=True)
class EagerLine:
    """One user line's share of the window's eager ATen op time."""

    file: str
    line: int
    function: str
    samples: int
    share: float
    """Of the samples that fell inside an eager ATen op."""


@dataclass(frozen=True, slots=True)
class SkippedFrame:
    """A frame Dynamo skipped (it runs eagerly), and the share of the window's eager op time
    that its own body ran: the samples whose innermost user line is in it (a function it
    calls is a frame of its own, which Dynamo compiles or skips apart)."""

    where: str
    """As the report names the frame: ``Block.mlp (file:line)``."""
    file: str
    function: str
    line: int
    """Its ``def`` line."""
    share: float = 0.0
    """Of the samples that fell inside an eager ATen op; 0.0 when no sample was in it."""


def owning_frame(
    file: str | None, function: str | None, line: int, frames: Sequence[SkippedFrame]
) -> int | None:
    """The index in ``frames`` of the frame a line is of: in its file and function, at or
    after its ``def`` (of two frames of one name in one file, the nearer ``def`` above the
    line); None when it is in none."""
    owners = [(frame.line, i) for i, frame in enumerate(frames)
              if (frame.file, frame.function) == (file, function) and frame.line <= line]  # fmt: skip
    return max(owners)[1] if owners else None


def skipped_frame_shares(lines: list[EagerLine], frames: list[SkippedFrame]) -> list[SkippedFrame]:
    """``frames`` with the share of the eager op samples their own lines hold, the most
    first (a line is a frame's by :func:`owning_frame`)."""
    shares = [0.0] * len(frames)
    for item in lines:
        owner = owning_frame(item.file, item.function, item.line, frames)
        if owner is not None:
            shares[owner] += item.share
    found = [SkippedFrame(f.where, f.file, f.function, f.line, shares[i])
             for i, f in enumerate(frames)]  # fmt: skip
    return sorted(found, key=lambda frame: -frame.share)


def _users(file: str) -> bool:
    """A file of the user's own code: not a library's, the standard library's, pt2doctor's,
    nor generated (``<string>``, ``<frozen ...>``)."""
    return not (
        file.startswith("<")
        or file.startswith(_OWN_PACKAGE)
        or library_path(file) is not None
        or short_library_path(file) != file
    )


class _Spans:
    """Disjoint time spans, merged, for membership by bisection."""

    def __init__(self, spans: list[tuple[float, float]]) -> None:
        merged: list[tuple[float, float]] = []
        for begin, end in sorted(spans):
            if merged and begin <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((begin, end))
        self.starts = [begin for begin, _ in merged]
        self.ends = [end for _, end in merged]

    def __contains__(self, at: float) -> bool:
        i = bisect.bisect_right(self.starts, at) - 1
        return i >= 0 and at < self.ends[i]


def eager_lines(
    trace: ChromeTrace, window: dict[str, Any], view: ProfileView
) -> tuple[list[EagerLine], int]:
    """The user's lines that ran the window's eager ATen ops (``view.eager_spans``, in the
    parts of the window counted), the most samples first, and the samples that fell inside
    one ([] when the window kept no samples, or too few)."""
    samples, marks = window.get("samples") or {}, window.get("marks_ns") or []
    at_ns, stacks = samples.get("at_ns") or [], samples.get("stacks") or []
    which = samples.get("stack") or []
    if not at_ns or len(marks) < 2 or not view.eager_spans:
        return [], 0
    hot, mark_ts = _period_marks(trace)
    offsets = [ts - ns / 1e3 for ts, ns in zip(mark_ts, marks[1:], strict=False)]
    if hot is None or not offsets:
        return [], 0
    offset = statistics.median(offsets)
    labelled = [(trace.ts[i], trace.ts[i] + trace.dur[i]) for i, name_id in enumerate(trace.name)
                if trace.thread[i] == hot and trace.names[name_id].startswith(OWNER_PREFIXES)]  # fmt: skip
    excluded, in_ops = _Spans(labelled), _Spans(view.eager_spans)
    counted = _Spans(view.ranges or [view.window])
    by_line: dict[tuple[str, int, str], int] = {}
    total = 0
    for at, index in zip(at_ns, which, strict=False):
        ts = at / 1e3 + offset
        if ts not in counted or ts in excluded or ts not in in_ops:
            continue
        total += 1
        frame = next((f for f in stacks[index] if _users(str(f[0]))), None)
        if frame is not None:
            key = (str(frame[0]), int(frame[1]), str(frame[2]))
            by_line[key] = by_line.get(key, 0) + 1
    if total < MIN_SAMPLES:
        return [], total
    found = [EagerLine(file, line, function, n, n / total)
             for (file, line, function), n in by_line.items()]  # fmt: skip
    return sorted(found, key=lambda item: (-item.samples, item.file, item.line)), total


def _period_marks(trace: ChromeTrace) -> tuple[int | None, list[float]]:
    """The thread of the window's period marks, and their times in order."""
    marks = [(trace.ts[i], trace.thread[i]) for i, name_id in enumerate(trace.name)
             if trace.names[name_id] == PROFILE_PERIOD_MARK]  # fmt: skip
    if not marks:
        return None, []
    marks.sort()
    hot = marks[0][1]
    return hot, [ts for ts, thread in marks if thread == hot]
