"""Graph breaks, one row per user site: deduplicated across compiles and recompiles, categorized."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from pt2doctor.analysis.advice import break_advice
from pt2doctor.analysis.ledger import RESUME_NAME, FrameEntry, Ledger
from pt2doctor.trace.messages import explanation_and_hints
from pt2doctor.trace.types import GraphBreakEvent, SourceLine

BreakCategory = Literal[
    "data_dependent_scalar",
    "data_dependent_shape",
    "print_or_logging",
    "python_side_effect",
    "unsupported_builtin_or_c_extension",
    "explicit_disable",
    "io",
    "other",
]
BREAK_CATEGORIES: tuple[BreakCategory, ...] = get_args(BreakCategory)

# First match wins, on Dynamo's break type and explanation (the code line only as a fallback).
_BREAK_PATTERNS: tuple[tuple[str, BreakCategory], ...] = (
    (
        r"graph_break\(\)|compiler\.disable|_dynamo\.disable|disable\(\)d function"
        r"|skip function graph_break",
        "explicit_disable",
    ),
    (
        r"Tensor\.item\(\)|capture_scalar_outputs|data.dependent|tolist\(\)|_local_scalar_dense",
        "data_dependent_scalar",
    ),
    (
        r"dynamic shape operator|capture_dynamic_output_shape_ops|nonzero|output shape depends",
        "data_dependent_shape",
    ),
    (r"`print`|\bprint\b|logging|logger|(?<![\w.])warnings\.warn", "print_or_logging"),
    (r"`open`|\bopen\(|file I/O|\bsocket\b|os\.path|pathlib", "io"),
    (
        r"side.effect|mutat|global variable|STORE_GLOBAL|setattr|nonlocal|generator|"
        r"reconstruct",
        "python_side_effect",
    ),
    (
        r"builtin|C extension|C function|skipped function|marked as skipped|numpy|"
        r"Unsupported (?:function|method|context manager)|call_function|not supported",
        "unsupported_builtin_or_c_extension",
    ),
)
_BREAK_RULES = tuple((re.compile(pattern, re.I), category) for pattern, category in _BREAK_PATTERNS)


@dataclass(slots=True)
class GraphBreakSite:
    """All occurrences of graph breaks at one user source line."""

    site: SourceLine
    category: BreakCategory
    reason: str
    gb_type: str
    hints: list[str]
    user_stack: list[SourceLine]
    compile_ids: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)
    gb_id: str | None = None
    hits: int | None = None
    """How often the break ran; None until runtime heat is measured (``pt2doctor run``)."""
    hot: bool | None = None
    """Ran more than once (not a startup-only break); None when heat is unknown."""
    advice: str = ""
    frame_skipped: bool = False
    """The break made Dynamo skip its whole frame (e.g. a break inside a loop)."""


def categorize_break(event: GraphBreakEvent) -> BreakCategory:
    """One category from the vocabulary for a graph break."""
    text = f"{event.gb_type}\n{event.explanation}"
    for source in (text, event.site.code if event.site and event.site.code else ""):
        for pattern, category in _BREAK_RULES:
            if source and pattern.search(source):
                return category
    return "other"


def _broken_frame(ledger: Ledger, stream: str, function: str, line: int) -> FrameEntry | None:
    """The part of ``function`` that broke at ``line``: the function itself or the resume
    function (``torch_dynamo_resume_in_<function>_at_<n>``) starting closest before it."""
    best: tuple[int, FrameEntry] | None = None
    for frame in ledger.frames:
        resume = RESUME_NAME.match(frame.function or "")
        if frame.stream != stream or (resume.group(1) if resume else frame.function) != function:
            continue
        start = int(resume.group(2)) if resume else (frame.line or 0)
        if start < line and (best is None or start > best[0]):
            best = (start, frame)
    return None if best is None else best[1]


def _resume_events(ledger: Ledger, seen: set[tuple[str, int]]) -> list[GraphBreakEvent]:
    """Breaks known only from resume functions (logs without graph-break records)."""
    events = []
    for frame in ledger.frames:
        for entry in frame.compiles:
            if entry.resumes_after is None or entry.resumes_after in seen:
                continue
            function, line = entry.resumes_after
            seen.add(entry.resumes_after)
            parent = _broken_frame(ledger, frame.stream, function, line)
            restarts = [
                r for e in (parent.compiles if parent else []) for r in e.record.restart_reasons
            ]
            reason = restarts[0] if restarts else "graph break (the log has no break record)"
            compile_id = parent.compiles[0].compile_id if parent and parent.compiles else "?"
            explanation, hints = explanation_and_hints(reason.splitlines())
            events.append(
                GraphBreakEvent(
                    compile_id=compile_id,
                    site=SourceLine(frame.file, line, function),
                    gb_type=reason.splitlines()[0],
                    reason=reason,
                    explanation=explanation,
                    hints=hints,
                )
            )
    return events


def graph_break_sites(ledger: Ledger) -> list[GraphBreakSite]:
    """One :class:`GraphBreakSite` per (file, line, function), in order of first occurrence."""
    skipped = {(f.stream, e.compile_id) for f in ledger.frames if f.skipped for e in f.compiles}
    events = [
        (entry.record.stream, event)
        for entry in ledger.compiles
        for event in entry.record.graph_breaks
    ]
    seen = {
        (frame.function, frame.line)
        for _, event in events
        for frame in event.user_stack
        if frame.function and frame.line is not None
    }
    seen |= {
        (event.site.function, event.site.line)
        for _, event in events
        if event.site and event.site.function and event.site.line is not None
    }
    events += [("", event) for event in _resume_events(ledger, seen)]
    sites: dict[tuple[str | None, int | None, str | None], GraphBreakSite] = {}
    for stream, event in events:
        where = event.site or SourceLine(None, None, None)
        key = (where.file, where.line, where.function)
        site = sites.get(key)
        if site is None:
            category = categorize_break(event)
            site = GraphBreakSite(
                site=where,
                category=category,
                reason=event.reason,
                gb_type=event.gb_type,
                hints=event.hints,
                user_stack=event.user_stack,
                gb_id=event.gb_id,
                advice=break_advice(category, event),
            )
            sites[key] = site
        if event.compile_id not in site.compile_ids:
            site.compile_ids.append(event.compile_id)
        if stream and stream not in site.streams:
            site.streams.append(stream)
        site.frame_skipped = site.frame_skipped or (stream, event.compile_id) in skipped
    return list(sites.values())
