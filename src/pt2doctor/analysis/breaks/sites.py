"""Graph breaks, one row per user site: deduplicated across compiles and recompiles, categorized."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from pt2doctor.analysis.breaks.advice import (
    PRINT_INLINED_ADVICE,
    WARNINGS_CATEGORY_ADVICE,
    WARNINGS_INLINED_ADVICE,
    OwnFix,
    break_advice,
)
from pt2doctor.analysis.breaks.library_breaks import known_break
from pt2doctor.analysis.paths import short_library_path
from pt2doctor.analysis.recompiles.ledger import RESUME_NAME, FrameEntry, Ledger
from pt2doctor.analysis.source_lines import following_code
from pt2doctor.analysis.text import counted
from pt2doctor.trace.messages import explanation_and_hints, innermost_user, is_user_file
from pt2doctor.trace.patterns import lazy_compile
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
    # 2.13 names warnings.warn after its C implementation: "the Python builtin
    # `_warnings.warn`" (its generic C-extension text says "e.g. _warnings.warn": no match).
    (
        r"`print`|\bprint\b|logging|logger|`_?warnings\.warn`|(?<![\w.])warnings\.warn\("
        r"|reorder a debugging function",
        "print_or_logging",
    ),
    (r"`open`|\bopen\(|file I/O|\bsocket\b|os\.path|pathlib", "io"),
    # `torch.randn(..., generator=gen)`: a torch.Generator argument, not a Python generator.
    (r"\bgenerator\s*=", "unsupported_builtin_or_c_extension"),
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
_BREAK_RULES = tuple(
    (lazy_compile(pattern, re.I), category) for pattern, category in _BREAK_PATTERNS
)


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
    """torch's hints and link, this site's facts, then ``fix`` (see :func:`site_advice`)."""
    fix: str = ""
    """pt2doctor's paragraph for this break's category, specialized to its text and code."""
    frame_skipped: bool = False
    """The break made Dynamo skip its whole frame (e.g. a break inside a loop)."""
    splits_nothing: bool = False
    """The frames that broke here and their resumes all compiled no graph: the break splits no
    ops (e.g. torch's own DistributedDataParallel wrapper, which Dynamo skips on purpose)."""
    known: bool = False
    """A library site whose cause and fix pt2doctor knows: ``fix`` is that site's own."""
    by_design: bool = False
    """PyTorch breaks here on purpose (e.g. around every optimizer step): nothing to fix
    (analysis/breaks/library_breaks.py)."""
    also_in_library: list[SourceLine] = field(default_factory=list)
    """Breaks in library code reached from this very line (``log.debug(..., x.item())``:
    the .item() here, then the Logger call's own break in logging/__init__.py), folded into
    this site: one line to change, not a second site in the user's table."""


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
            if parent is not None and any(e.record.graph_breaks for e in parent.compiles):
                # Its break is on record, at the line it happened (a call's inner line: the
                # caller's line in a resumed frame's stack can be off by one).
                continue
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


def _enclosing_def(file: str, line: int) -> int | None:
    """The first line (its first decorator's, or its ``def``) of the innermost function of
    ``file`` that holds ``line``: a code object's ``co_firstlineno``; None when unreadable."""
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    found: int | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and (
            node.lineno <= line <= (node.end_lineno or node.lineno)
        ):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if found is None or first > found:
                found = first
    return found


def inlined(site: SourceLine | None, frame: SourceLine) -> bool:
    """The break is in a function the compiled frame calls (Dynamo inlined it), not in the
    compiled frame's own code: another file or function, or a line of another def."""
    if site is None or site.line is None or frame.line is None or not site.file:
        return False
    if site.file != frame.file or site.function != frame.function or site.line < frame.line:
        return True
    first = _enclosing_def(site.file, site.line)
    return first is not None and first != frame.line


def graph_break_sites(ledger: Ledger) -> list[GraphBreakSite]:
    """One :class:`GraphBreakSite` per (file, line, function), in order of first occurrence."""
    skipped = {(f.stream, e.compile_id) for f in ledger.frames if f.skipped for e in f.compiles}
    events = [
        (entry.record.stream, event)
        for entry in ledger.compiles
        for event in entry.record.graph_breaks
    ]
    frames = {
        (entry.record.stream, entry.compile_id): SourceLine(
            entry.record.file, entry.record.line, entry.record.function
        )
        for entry in ledger.compiles
    }
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
    broke: dict[tuple[str | None, int | None, str | None], set[tuple[str, str]]] = {}
    telling = _telling_events(events)
    for stream, event in events:
        where = event.site or SourceLine(None, None, None)
        key = (where.file, where.line, where.function)
        site = sites.get(key)
        if site is None:
            # the site is told by the record that says what broke; every record counts below
            told_stream, told = telling.get(key, (stream, event))
            category = categorize_break(told)
            known = known_break(where.file, where.function, told)
            site = GraphBreakSite(
                site=where,
                category=category,
                reason=told.reason,
                gb_type=told.gb_type,
                hints=told.hints,
                user_stack=told.user_stack,
                gb_id=told.gb_id,
                fix=known.fix
                if known
                else break_advice(
                    category,
                    told,
                    inlined(
                        told.site,
                        frames.get((told_stream, told.compile_id), SourceLine(None, None, None)),
                    ),
                    following_code(told.site) if category == "data_dependent_scalar" else None,
                ),
                known=known is not None,
                by_design=bool(known and known.by_design),
            )
            sites[key] = site
        broke.setdefault(key, set()).add((stream, event.compile_id))
        if event.compile_id not in site.compile_ids:
            site.compile_ids.append(event.compile_id)
        if stream and stream not in site.streams:
            site.streams.append(stream)
        site.frame_skipped = site.frame_skipped or (stream, event.compile_id) in skipped
    for key, site in sites.items():
        site.splits_nothing = _splits_nothing(site, broke[key], ledger)
    for key in _fold_into_user_lines(sites):
        del sites[key]
    for site in sites.values():
        site.advice = site_advice(site)
    return list(sites.values())


_IN_LOOP = "gb7000"
"""torch's "graph break in loop": a frame with a loop that broke is skipped; the break that
made it has its own record at the same line, in the frame Dynamo tried next."""


def _telling_events(
    events: list[tuple[str, GraphBreakEvent]],
) -> dict[tuple[str | None, int | None, str | None], tuple[str, GraphBreakEvent]]:
    """Per site, the event that says what broke: one with a registry id that is not the loop
    wrapper (``Data-dependent branching``, gb0170), else any that is not the loop wrapper
    (``Could not guard on data-dependent expression``), else the first."""
    found: dict[tuple[str | None, int | None, str | None], tuple[int, str, GraphBreakEvent]] = {}
    for stream, event in events:
        where = event.site or SourceLine(None, None, None)
        key = (where.file, where.line, where.function)
        loop = event.gb_id == _IN_LOOP or event.gb_type == "graph break in loop"
        rank = 2 if loop else (0 if event.gb_id else 1)
        if key not in found or rank < found[key][0]:
            found[key] = (rank, stream, event)
    return {key: (stream, event) for key, (_, stream, event) in found.items()}


def _fold_into_user_lines(
    sites: dict[tuple[str | None, int | None, str | None], GraphBreakSite],
) -> list[tuple[str | None, int | None, str | None]]:
    """Library sites (not a known one) reached from a user line that breaks on its own: their
    compiles join that line's site, which names them (``also_in_library``). Returns the keys
    folded."""
    by_line = {(s.site.file, s.site.line): s for s in sites.values() if user_caller(s) is None}
    folded = []
    for key, site in sites.items():
        caller = user_caller(site)
        host = by_line.get((caller.file, caller.line)) if caller and not site.known else None
        if host is None or host is site:
            continue
        host.also_in_library.append(site.site)
        host.compile_ids += [c for c in site.compile_ids if c not in host.compile_ids]
        host.streams += [s for s in site.streams if s not in host.streams]
        host.frame_skipped = host.frame_skipped or site.frame_skipped
        host.splits_nothing = host.splits_nothing and site.splits_nothing
        folded.append(key)
    return folded


def _splits_nothing(site: GraphBreakSite, broke: set[tuple[str, str]], ledger: Ledger) -> bool:
    """Dynamo finished every frame that broke at ``site`` and at least one resume after it, and
    none of them produced a graph (a skipped frame is not this: its ops run eagerly)."""
    if site.frame_skipped or site.site.function is None:
        return False
    here = (site.site.function, site.site.line)
    around = [e for e in ledger.compiles if (e.record.stream, e.compile_id) in broke]
    resumes = [e for e in ledger.compiles if e.resumes_after == here]
    return bool(around and resumes) and all(
        e.record.has_metrics and e.record.graph_count == 0 for e in around + resumes
    )


# Hints that are not advice for this site: torch's request for a bug report, and the note that
# a loop break may follow an earlier one (the site's facts say "inside a loop" instead).
_NOT_ADVICE = lazy_compile(
    r"report (?:an issue|a bug)|file an issue|caused by an earlier graph", re.I
)
_LINK = lazy_compile(r"https://\S+/gb/gb\d+\.html")
# Paragraphs that found reorderable_logging_functions wrong here (torch's hint suggests it).
_NOT_REORDERABLE = frozenset({PRINT_INLINED_ADVICE, WARNINGS_INLINED_ADVICE,
                              WARNINGS_CATEGORY_ADVICE})  # fmt: skip
_MISNAMED_SETTING = lazy_compile(r"\btorch\._dynamo\.(trace_autograd_ops)\b")
_LOOP_SKIP = lazy_compile(r"frame skipped: (\S+) \((.+?) line (\d+)\)")
_CODE_SHOWN = 72


def _torch_says(site: GraphBreakSite) -> str:
    """torch's own registry hints and link for the break, first (``torch (gb0124): ...``)."""
    hints = [hint.rstrip(". ") for hint in site.hints if not _NOT_ADVICE.search(hint)]
    # torch 2.13's gb0123 hint names a setting that does not exist (no ".config").
    hints = [_MISNAMED_SETTING.sub(r"torch._dynamo.config.\1", hint) for hint in hints]
    # The hint that would drop the call silently, or fail (the advice says it does not apply).
    if site.fix in _NOT_REORDERABLE or "reorderable_logging_functions does not apply" in site.fix:
        hints = [hint for hint in hints if "reorderable_logging_functions" not in hint]
    if "capture_scalar_outputs does not" in site.fix:  # the advice found it does not help here
        hints = [hint for hint in hints if "capture_scalar_outputs" not in hint]
    if isinstance(site.fix, OwnFix):  # the advice found torch's hints do not apply here
        hints = []
    links = _LINK.findall(site.reason)
    # The break's own page (a loop break's text also links the loop's gb7000 page).
    link = (
        next((url for url in links if f"/{site.gb_id}.html" in url), None) if site.gb_id else None
    )
    link = link or next(iter(links), None)
    if not hints and link is None:
        return ""
    label = f"torch ({site.gb_id})" if site.gb_id else "torch"
    text = f"{label}: {'. '.join(hints)}." if hints else f"{label}:"
    return f"{text} {link}" if link else text


def _heat_fact(site: GraphBreakSite) -> str:
    if site.hits is None:
        return "heat not measured (`pt2doctor run` counts it)"
    if site.hot:
        return f"ran {site.hits} times (hot)"
    return (f"ran {counted(site.hits, 'time')} here (cold: where the real workload also runs "
            "it only at startup, it is not worth a rewrite)")  # fmt: skip


def user_caller(site: GraphBreakSite) -> SourceLine | None:
    """For a break in library code (torch, an installed package, the standard library): the
    innermost frame of the user's own code that led to it; None for a break in the user's code."""
    if site.site.file is None or is_user_file(site.site.file):
        return None
    return innermost_user(site.user_stack)


def _site_facts(site: GraphBreakSite) -> str:
    """What this site is and does: its code, its heat, and a loop that makes a frame eager."""
    code = site.site.statement
    if len(code) > _CODE_SHOWN:
        code = code[: _CODE_SHOWN - 1] + "…"
    loop = _LOOP_SKIP.search(site.reason)
    # In a frame Dynamo skipped, the break never runs compiled: no heat to state.
    heat = "" if site.hits is None and site.frame_skipped else f" {_heat_fact(site)}"
    facts = f"Here `{code}`{heat}" if code else f"Here the break{heat}"
    caller = user_caller(site)
    if caller is not None:
        facts += (
            f"{';' if heat else ','} in library code, reached from your {caller.function} "
            f"({os.path.basename(str(caller.file))}:{caller.line})"
        )
    if site.also_in_library:
        names = ", ".join(
            f"{lib.function} ({short_library_path(lib.file)}:{lib.line})"
            for lib in site.also_in_library
        )
        facts += (
            f"{';' if heat or caller else ','} it also breaks in the library code it calls: {names}"
        )
    if loop is not None:
        facts += (
            f"{'; it' if heat else ''} is reached inside a for/while loop of {loop.group(1)} "
            f"(defined at line {loop.group(3)}), so Dynamo runs that whole function eagerly"
        )
    return facts + "."


SPLITS_NOTHING = (
    "It splits no graph: the frames on both sides of it compiled no ops, so no fusion is lost "
    "here and there is nothing to fix (torch's hints for this break do not apply)."
)


SPLITS_NOTHING_KNOWN = (
    "It splits no graph by itself (the frames on both sides of it compiled no ops), and the "
    "fix for this call goes with the calls around it:"
)


def site_advice(site: GraphBreakSite) -> str:
    """The advice of one site: torch's hints and link, the site's facts, pt2doctor's fix (for
    a break that splits nothing: the facts and that).
    Called again once heat is known (:func:`pt2doctor.analysis.breaks.heat.break_heat`)."""
    if site.splits_nothing and site.known and not site.by_design:
        # a library call whose known fix moves it out with its siblings (GradScaler's step
        # after its backward): nothing is split here, and the fix still includes this call
        return f"{_site_facts(site)} {SPLITS_NOTHING_KNOWN} {site.fix}"
    if site.splits_nothing:
        return f"{_site_facts(site)} {SPLITS_NOTHING}"
    if site.by_design:  # torch's hints (e.g. "remove the graph_break() call") do not apply
        return f"{_site_facts(site)} {site.fix}"
    return " ".join(part for part in (_torch_says(site), _site_facts(site), site.fix) if part)
