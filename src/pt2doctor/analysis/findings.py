"""Findings: what the user should act on, by severity, each with evidence and advice."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from pt2doctor.analysis.advice import (
    COMPILE_ERROR_ADVICE,
    LARGE_GRAPH_ADVICE,
    LIMIT_HIT_ADVICE,
    RECOMPILE_ADVICE,
    SKIPPED_FRAME_ADVICE,
)
from pt2doctor.analysis.breaks import GraphBreakSite
from pt2doctor.analysis.ledger import RESUME_NAME, FailureEntry, FrameEntry, Ledger
from pt2doctor.analysis.user_side import custom_op_advice
from pt2doctor.trace.records import ParseStats
from pt2doctor.trace.types import SourceLine

SEVERITIES = ("error", "warning", "info")
# Above this many ops a Dynamo graph is usually an unrolled Python loop.
LARGE_GRAPH_OPS = 2000


@dataclass(slots=True)
class Finding:
    severity: str
    code: str
    title: str
    advice: str
    evidence: list[str] = field(default_factory=list)


def frame_label(function: str | None, file: str | None, line: int | None) -> str:
    """``fn (file:line)``; a resume function reads as the part of ``fn`` after a break."""
    resume = RESUME_NAME.match(function or "")
    if resume is not None:
        return f"{resume.group(1)} after its graph break at line {resume.group(2)} ({file})"
    return f"{function} ({file}:{line})"


def _where(frame: FrameEntry) -> str:
    return frame_label(frame.function, frame.file, frame.line)


def _recompile_finding(frame: FrameEntry) -> Finding | None:
    recompiles = frame.recompiles
    if not recompiles:
        return None
    causes = Counter(
        guard.category for entry in recompiles for guard in entry.failed_guards[:1]
    ) or Counter({"other": len(recompiles)})
    all_causes = sorted({g.category for e in recompiles for g in e.failed_guards})
    # Static first, then one recompile that made the changing value dynamic: automatic dynamic
    # shapes working as designed.
    guards = [g for e in recompiles for g in e.failed_guards]
    benign = (
        len(recompiles) == 1
        and bool(guards)
        and all(g.now_dynamic or g.category == "stride" for g in guards)
    )
    summary = ", ".join(f"{cause} x{count}" for cause, count in causes.most_common())
    advice = " ".join(RECOMPILE_ADVICE.get(c, RECOMPILE_ADVICE["other"]) for c in all_causes)
    evidence = [
        f"{entry.compile_id}: {guard.text}" + (" (now dynamic)" if guard.now_dynamic else "")
        for entry in recompiles
        for guard in entry.failed_guards
    ][:12]
    return Finding(
        severity="info" if benign else "warning",
        code="recompiles",
        title=(
            f"{_where(frame)} recompiled {len(recompiles)} time(s), "
            f"{frame.variants} variant(s): {summary}"
        ),
        advice=advice,
        evidence=evidence,
    )


def _frame_findings(frame: FrameEntry) -> list[Finding]:
    findings = []
    ids = [entry.compile_id for entry in frame.compiles]
    if frame.limit_hit:
        findings.append(
            Finding(
                "error",
                "recompile_limit_hit",
                f"{_where(frame)} hit the recompile limit",
                LIMIT_HIT_ADVICE,
                ids,
            )
        )
    if frame.skipped:
        reason = (frame.skip_reason or "").strip().splitlines()
        findings.append(
            Finding(
                "error",
                "frame_skipped",
                f"{_where(frame)} runs eagerly: Dynamo skipped the whole frame",
                SKIPPED_FRAME_ADVICE,
                ids + reason[:1],
            )
        )
    recompiles = _recompile_finding(frame)
    if recompiles is not None:
        findings.append(recompiles)
    for entry in frame.compiles:
        ops = entry.record.graph_op_count
        if ops is not None and ops > LARGE_GRAPH_OPS:
            findings.append(
                Finding(
                    "info",
                    "large_graph",
                    f"{_where(frame)}: graph of {ops} ops",
                    LARGE_GRAPH_ADVICE,
                    [entry.compile_id],
                )
            )
    return findings


def _break_finding(site: GraphBreakSite) -> Finding:
    where = f"{site.site.file}:{site.site.line} in {site.site.function}"
    heat = "" if site.hits is None else f", ran {site.hits} times"
    # Heat known: a break that ran at most once (startup) is not worth a rewrite.
    severity = "info" if site.hot is False else "warning"
    evidence = [f"compile ids: {', '.join(site.compile_ids)}"]
    if site.site.code:
        evidence.insert(0, site.site.code)
    return Finding(
        severity=severity,
        code="graph_break",
        title=f"Graph break at {where} ({site.category}{heat}): {site.gb_type}",
        advice=site.advice,
        evidence=evidence,
    )


def raised_in_label(frame: SourceLine | None) -> str | None:
    """``raised in channels_last_prep_pass (passes.py:12)``, or None."""
    if frame is None or frame.file is None:
        return None
    return f"raised in {frame.function} ({os.path.basename(frame.file)}:{frame.line})"


def _compile_failure(failure: FailureEntry) -> Finding:
    """A compile that raised: the first line of the error, where in the user's code it was
    raised (a user pass, a custom kernel), and custom-op advice when the error names one."""
    reason = failure.fail_reason.strip()
    evidence = [failure.compile_id, reason.splitlines()[0] if reason else failure.fail_type]
    raised = raised_in_label(failure.raised_in)
    if raised:
        evidence.append(raised)
    advice = custom_op_advice(reason)
    return Finding(
        "error",
        "compile_failure",
        f"Compile {failure.compile_id} of {failure.function} failed: {failure.fail_type}",
        f"{advice} {COMPILE_ERROR_ADVICE}" if advice else COMPILE_ERROR_ADVICE,
        evidence,
    )


def find_findings(ledger: Ledger, sites: list[GraphBreakSite], stats: ParseStats) -> list[Finding]:
    """All findings, errors first (pure function of the analyses)."""
    findings: list[Finding] = []
    for failure in ledger.failures:
        if failure.kind == "compile_error":
            findings.append(_compile_failure(failure))
    for frame in ledger.frames:
        findings += _frame_findings(frame)
    findings += [_break_finding(site) for site in sites]
    if stats.problems:
        findings.append(
            Finding(
                "warning",
                "parse_problems",
                f"The log is damaged: {stats.problems} unreadable line(s) or record(s)",
                "Everything readable is reported; see parse_stats. Re-capture the log if counts "
                "look incomplete.",
                [
                    f"{key}: {value}"
                    for key, value in stats.as_dict().items()
                    if key
                    in ("non_trace_lines", "bad_envelopes", "md5_mismatches", "truncated_records")
                    and value
                ],
            )
        )
    return sort_findings(findings)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, then info (stable within a severity)."""
    return sorted(findings, key=lambda f: SEVERITIES.index(f.severity))
