"""The versioned report.json: a public contract (CI jobs read it). Extend it, never rename.

See docs/report-schema.md. ``build_report`` runs the analyses on a Run and returns the plain
dict every renderer (terminal, JSON, later HTML/Markdown) formats.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from pt2doctor import __version__
from pt2doctor.analysis import (
    FailedGuard,
    Finding,
    GraphBreakSite,
    Ledger,
    compile_ledger,
    find_findings,
    graph_break_sites,
)
from pt2doctor.analysis.findings import sort_findings
from pt2doctor.analysis.heat import Heat, break_heat, compile_heat
from pt2doctor.analysis.ledger import CompileEntry, FailureEntry, FrameEntry
from pt2doctor.analysis.rank_findings import rank_findings
from pt2doctor.analysis.ranks import DEFAULT_COLLECTIVE_TIMEOUT_S, cross_rank_analysis
from pt2doctor.analysis.run_findings import run_findings, run_section
from pt2doctor.report.rank_schema import ranks_section
from pt2doctor.trace.types import Run, SourceLine

SCHEMA_VERSION = 1


def _source(line: SourceLine | None) -> dict[str, Any] | None:
    return None if line is None else line.as_dict()


def _failed_guard(guard: FailedGuard) -> dict[str, Any]:
    return {
        "text": guard.text,
        "category": guard.category,
        "source": _source(guard.source),
        "against": guard.against,
        "origin": guard.origin,
        "now_dynamic": guard.now_dynamic,
    }


def _frame(frame: FrameEntry) -> dict[str, Any]:
    return {
        "stream": frame.stream,
        "frame_id": frame.frame_id,
        "function": frame.function,
        "file": frame.file,
        "line": frame.line,
        "compiles": len(frame.compiles),
        "compile_ids": [entry.compile_id for entry in frame.compiles],
        "variants": frame.variants,
        "limit_hit": frame.limit_hit,
        "skipped": frame.skipped,
        "skip_reason": frame.skip_reason,
        "is_resume": frame.is_resume,
        "recompiles": [
            {
                "compile_id": entry.compile_id,
                "failed_guards": [_failed_guard(g) for g in entry.failed_guards],
            }
            for entry in frame.recompiles
        ],
    }


def _compile(entry: CompileEntry) -> dict[str, Any]:
    record = entry.record
    return {
        "compile_id": entry.compile_id,
        "stream": record.stream,
        "rank": record.rank,
        "frame_id": record.compile_id.frame_id,
        "function": entry.function,
        "file": record.file,
        "line": record.line,
        "cause": entry.cause,
        "resumes_after": (
            None
            if entry.resumes_after is None
            else {"function": entry.resumes_after[0], "line": entry.resumes_after[1]}
        ),
        "attempts": record.attempts,
        "restarts": record.restart_reasons,
        "start_time": record.start_time,
        "compile_time_s": record.compile_time_s,
        "phases": {key: round(value, 6) for key, value in sorted(entry.phases.items())},
        "cache": dict(sorted(record.cache.items())),
        "graph_count": record.graph_count,
        "graph_op_count": record.graph_op_count,
        "failed": record.fail_type is not None,
        "fail_type": record.fail_type,
        "dynamic_symbols": [
            {"symbol": symbol, "source": source, "value": value}
            for symbol, (source, value) in record.symbols.items()
        ],
        "specializations": record.specializations,
    }


def _graph_break(site: GraphBreakSite) -> dict[str, Any]:
    return {
        "site": site.site.as_dict(),
        "category": site.category,
        "reason": site.reason,
        "gb_type": site.gb_type,
        "gb_id": site.gb_id,
        "hints": site.hints,
        "user_stack": [frame.as_dict() for frame in site.user_stack],
        "compile_ids": site.compile_ids,
        "streams": site.streams,
        "occurrences": len(site.compile_ids),
        "hits": site.hits,
        "hot": site.hot,
        "frame_skipped": site.frame_skipped,
        "advice": site.advice,
    }


def _failure(failure: FailureEntry) -> dict[str, Any]:
    return {
        "compile_id": failure.compile_id,
        "stream": failure.stream,
        "kind": failure.kind,
        "fail_type": failure.fail_type,
        "fail_reason": failure.fail_reason,
        "function": failure.function,
        "user_frame": _source(failure.user_frame),
        "raised_in": _source(failure.raised_in),
    }


def _finding(finding: Finding) -> dict[str, Any]:
    return {
        "severity": finding.severity,
        "code": finding.code,
        "title": finding.title,
        "advice": finding.advice,
        "evidence": finding.evidence,
    }


def _summary(run: Run, ledger: Ledger, sites: list[GraphBreakSite]) -> dict[str, Any]:
    caches: dict[str, Counter[str]] = {}
    for entry in ledger.compiles:
        for cache, outcome in entry.record.cache.items():
            caches.setdefault(cache, Counter())[outcome] += 1
    times = [e.record.compile_time_s for e in ledger.compiles if e.record.compile_time_s]
    return {
        "frames": len(ledger.frames),
        "compiles": len(ledger.compiles),
        "compile_ids": run.compile_id_count,
        "graphs": sum(entry.record.graph_count for entry in ledger.compiles),
        "break_sites": len(sites),
        "graph_breaks": sum(len(site.compile_ids) for site in sites),
        "recompiles": sum(1 for entry in ledger.compiles if entry.cause == "recompile"),
        "restarts": sum(len(entry.record.restart_reasons) for entry in ledger.compiles),
        "failures": len(ledger.failures),
        "skipped_frames": sum(1 for frame in ledger.frames if frame.skipped),
        "limit_hits": sum(1 for frame in ledger.frames if frame.limit_hit),
        "total_compile_time_s": round(sum(times), 6),
        "cache": {name: dict(sorted(counts.items())) for name, counts in sorted(caches.items())},
    }


def _compile_with_heat(entry: CompileEntry, heat: Heat | None) -> dict[str, Any]:
    row = _compile(entry)
    item = None if heat is None else heat.compiles.get((entry.record.stream, entry.compile_id))
    row.update(
        calls=None if item is None else item.calls,
        seconds_in_graph=None
        if item is None or item.seconds_in_graph is None
        else round(item.seconds_in_graph, 6),
        t_s=None if item is None or item.t_s is None else round(item.t_s, 6),
        frame_calls=None if item is None else item.frame_calls,
        after_warmup=None if item is None else item.after_warmup,
    )
    return row


def build_report(
    run: Run, collective_timeout_s: float = DEFAULT_COLLECTIVE_TIMEOUT_S
) -> dict[str, Any]:
    """Analyse ``run`` and return the report as plain data (the JSON document).

    ``collective_timeout_s`` is what cross-rank compile skew is compared with (multi-rank
    logs only)."""
    ledger = compile_ledger(run)
    sites = graph_break_sites(ledger)
    heat = None
    if run.probes is not None:
        heat = compile_heat(ledger, run.probes, run.manifest or {})
        if heat.breaks_measured:
            break_heat(sites, run.probes)
    ranks = cross_rank_analysis(run, ledger, sites, collective_timeout_s)
    findings = sort_findings(find_findings(ledger, sites, run.parse_stats) + rank_findings(ranks))
    if run.manifest is not None:
        findings = sort_findings(findings + run_findings(ledger, run.manifest, run.probes, heat))
    environment = dict(run.environment)
    if run.probes is not None:
        environment.update(run.probes.environment)
    report = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "pt2doctor", "version": __version__},
        "inputs": {"paths": run.sources, "streams": run.streams},
        "environment": dict(sorted(environment.items())),
        "summary": _summary(run, ledger, sites),
        "findings": [_finding(f) for f in findings],
        "graph_breaks": [_graph_break(site) for site in sites],
        "frames": [_frame(frame) for frame in ledger.frames],
        "compiles": [_compile_with_heat(entry, heat) for entry in ledger.compiles],
        "failures": [_failure(failure) for failure in ledger.failures],
        "parse_stats": run.parse_stats.as_dict(),
    }
    if run.manifest is not None:
        report["run"] = run_section(run.manifest, run.probes, heat)
    if ranks is not None:
        report["ranks"] = ranks_section(ranks, ledger, heat)
    return report


def dumps_report(report: dict[str, Any]) -> bytes:
    """report.json bytes: sorted keys, indented, newline-terminated."""
    return orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
