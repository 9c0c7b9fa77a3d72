"""The versioned report.json: a public contract (CI jobs read it). Extend it, never rename.

See docs/report-schema.md. ``build_report`` runs the analyses on a Run and returns the plain
dict every renderer (terminal, JSON, later HTML/Markdown) formats.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from pt2doctor import __version__
from pt2doctor.analysis import (
    FailedGuard,
    Finding,
    GraphBreakSite,
    Ledger,
)
from pt2doctor.analysis.built.fusion import Fusion, fusion_view
from pt2doctor.analysis.built.graph_size import (
    graph_size,
)
from pt2doctor.analysis.built.kernels import KernelMap, kernel_map
from pt2doctor.analysis.findings.plan import PlanItem as PlanStep
from pt2doctor.analysis.findings.plan import plan
from pt2doctor.analysis.findings.verdicts import Outcome
from pt2doctor.analysis.pipeline import RunAnalysis, analyse_run
from pt2doctor.analysis.ranks.divergence import DEFAULT_COLLECTIVE_TIMEOUT_S
from pt2doctor.analysis.recompiles.changes import SourceChange
from pt2doctor.analysis.recompiles.fixes import recompile_fixes
from pt2doctor.analysis.recompiles.frame_names import frame_name
from pt2doctor.analysis.recompiles.ledger import CompileEntry, FailureEntry, FrameEntry
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    RecompileExplanation,
)
from pt2doctor.analysis.recompiles.sources import user_expr
from pt2doctor.report import types
from pt2doctor.report.document import SCHEMA_VERSION
from pt2doctor.report.rank_schema import ranks_section
from pt2doctor.report.types import (
    Compile,
    Failure,
    Frame,
    GraphBreak,
    PlanItem,
    Recompile,
    RunReport,
    Source,
    Summary,
)
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.spread import median_mad
from pt2doctor.trace.types import CompileRecord, ExportTrace, Run, ShapeEvent, SourceLine

if TYPE_CHECKING:  # heat exists only for a run directory's probes
    from pt2doctor.analysis.breaks.heat import Heat

NOTHING_TO_TRY = (
    "--try-fixes re-ran nothing: no fix in this report is one pt2doctor can apply itself (a "
    "config value, input marks, a torch.compile setting); the fixes shown are changes to the "
    "code, to apply and re-run"
)
NOT_PAIRED = (
    "compiled and eager were not paired: the paired times without the profiler (and "
    "compiled_slower_than_eager) come from a compiled callable's calls after the profile "
    "window, in blocks of compiled and eager calls, and the program ended before one block "
    "of each; give it more steps after warmup"
)
_LIMIT = lazy_compile(r"recompile.limit|cache_size_limit|recompile_limit", re.I)


def _source(line: SourceLine | None) -> Source | None:
    return None if line is None else _source_of(line)


def _source_of(line: SourceLine) -> Source:
    return Source(file=line.file, line=line.line, function=line.function, code=line.code)


def _failed_guard(guard: FailedGuard) -> types.FailedGuard:
    tensor = guard.key[:1] == ("tensor",) and len(guard.key) == 4
    return {
        "text": guard.text,
        "category": guard.category,
        "source": _source(guard.source),
        "against": guard.against,
        "origin": guard.origin,
        "now_dynamic": guard.now_dynamic,
        "tensor": user_expr(guard.key[1]).text if tensor else None,
        "field": guard.key[2] if tensor else None,
    }


def _recompile(entry: CompileEntry, explained: RecompileExplanation | None) -> Recompile:
    return {
        "compile_id": entry.compile_id,
        "failed_guards": [_failed_guard(g) for g in entry.failed_guards],
        "compared_with": None if explained is None else explained.compared_with,
        "changes": [] if explained is None else [_change(c) for c in explained.changes],
    }


def _change(change: SourceChange) -> types.Change:
    return {
        "source": change.source,
        "kind": change.kind,
        "old": change.old,
        "new": change.new,
        "count": change.count,
        "unit": change.unit or None,
        "folded": change.folded,
        "dynamic": change.dynamic,
        "hint": change.hint,
        "installed_at": _source(change.installed_at),
        "specialized_at": _source(change.specialized_at),
    }


def _frame(frame: FrameEntry, explanation: FrameExplanation) -> Frame:
    explained = {item.compile_id: item for item in explanation.recompiles}
    refused = frame.refused
    name = frame_name(frame)
    return {
        "stream": frame.stream,
        "frame_id": frame.frame_id,
        "function": frame.function,
        "display_name": name.display,
        "name": name.name,
        "through": name.through,
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
            _recompile(entry, explained.get(entry.compile_id)) for entry in frame.recompiles
        ],
        "refused": None if refused is None else _recompile(refused, explanation.refused),
        "variants_table": [row.as_dict() for row in explanation.variants],
        "outlook": explanation.outlook.as_dict(),
        "fixes": recompile_fixes(explanation) if frame.recompiles or refused else [],
        "compiled_at": _compiled_at(explanation.compile_call),
    }


def _compiled_at(call: dict[str, Any] | None) -> dict[str, Any] | None:
    if not call or not call.get("file"):
        return None
    return {"file": call["file"], "line": call.get("line"), "name": call.get("name")}


def _compile(entry: CompileEntry, found: KernelMap | None) -> Compile:
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
        "refused": _refused(record),
        "fail_type": record.fail_type,
        "dynamic_symbols": [
            {"symbol": symbol, "source": source, "value": value}
            for symbol, (source, value) in record.symbols.items()
        ],
        "specializations": record.specializations,
        "kernels": _kernels(found),
        "kernel_map": None if found is None else _kernel_map_info(found, record),
        "graph": _graph_size(entry),
        **(
            {"cudagraph_skip_reason": record.cudagraph_skip_reason}
            if record.cudagraph_skip_reason
            else {}
        ),
    }


def _fusion(found: Fusion) -> types.FusionInfo:
    """``compiles[].fusion``: the refused fusions that left kernels apart."""

    def side(name: str, kernel: str | None, line: Any) -> types.FusionSide:
        where: types.UserLine | None = (
            None if line is None else {"file": line.file, "line": line.line, "code": line.code}
        )
        return {"name": name, "kernel": kernel, "line": where}

    return {
        "available": found.available,
        "fused": found.fused,
        "rejected": [
            {
                "a": r.a,
                "b": r.b,
                "reason": r.reason,
                "count": r.times,
                "a_side": side(r.a, r.a_kernel, r.a_line),
                "b_side": side(r.b, r.b_kernel, r.b_line),
            }
            for r in found.rejected
        ],
        "more": found.more,
        "note": found.note,
    }


def _compile_fusion(run: Run, entry: CompileEntry) -> Fusion:
    record = entry.record
    logged = None if run.fusion is None else run.fusion.get((record.rank, entry.compile_id))
    cache_hit = "hit" in (record.cache.get("fx_graph"), record.cache.get("aotautograd"))
    return fusion_view(logged, record.built, kept=run.fusion is not None, cache_hit=cache_hit)


def _graph_size(entry: CompileEntry) -> types.GraphSize | None:
    """``compiles[].graph``: the Dynamo graph's ops by user line (null without a graph)."""
    size = graph_size(entry)
    if size is None:
        return None
    by_line: list[types.GraphLineOps] = [
        {"file": line.file, "line": line.line, "code": line.code, "ops": line.ops}
        for line in size.by_line
    ]
    return {"ops": size.ops, "by_line": by_line}


CACHED_LINES = (
    "Inductor took this graph from its FX graph cache: the provenance, and so the user lines, "
    "are those of the compile that filled the cache, and lines edited since then are not "
    "updated (the cache key holds the graph, not the line numbers); `pt2doctor run --kernels` "
    "compiles afresh"
)


def _kernel_map_info(found: KernelMap, record: CompileRecord) -> types.KernelMapInfo:
    info: types.KernelMapInfo = {"source": found.source, "partial": found.partial}
    if found.source == "provenance" and "hit" in record.cache.values():
        info["cached_lines"] = CACHED_LINES
    return info


def _kernels(found: KernelMap | None) -> list[types.Kernel]:
    """``compiles[].kernels``: what the compiler launched ([] when the trace does not say)."""
    return [
        {
            "name": k.name,
            "kind": k.kind,
            "ops": list(k.ops),
            "user_lines": [{"file": u.file, "line": u.line, "code": u.code} for u in k.user_lines],
        }
        for k in ([] if found is None else found.kernels)
    ]


def _refused(record: CompileRecord) -> bool:
    """Dynamo refused this compile: its frame had reached the recompile limit."""
    return record.fail_type is not None and bool(_LIMIT.search(record.fail_reason or ""))


def _graph_break(site: GraphBreakSite) -> GraphBreak:
    return {
        "site": _source_of(site.site),
        "category": site.category,
        "reason": site.reason,
        "gb_type": site.gb_type,
        "gb_id": site.gb_id,
        "hints": site.hints,
        "user_stack": [_source_of(frame) for frame in site.user_stack],
        "compile_ids": site.compile_ids,
        "streams": site.streams,
        "occurrences": len(site.compile_ids),
        "hits": site.hits,
        "hot": site.hot,
        "frame_skipped": site.frame_skipped,
        "splits_nothing": site.splits_nothing,
        "by_design": site.by_design,
        "also_in_library": [_source_of(lib) for lib in site.also_in_library],
        "advice": site.advice,
    }


def _failure(failure: FailureEntry) -> Failure:
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


def finding_row(finding: Finding) -> types.Finding:
    """One finding as report.json writes it (every report kind that has findings)."""
    row: types.Finding = {
        "severity": finding.severity,
        "code": finding.code,
        "title": finding.title,
        "advice": finding.advice,
        "evidence": finding.evidence,
        "subject": finding.subject.as_json(),  # type: ignore[typeddict-item]
    }
    if finding.facts:
        row["facts"] = dict(finding.facts)
    if finding.saves_ms is not None:
        row["saves_ms"] = finding.saves_ms
    elif finding.saves_unmeasured is not None:
        row["saves_unmeasured"] = finding.saves_unmeasured
    if finding.cause is not None:
        row["cause"] = finding.cause
    trials = [fix.application.as_json() for fix in finding.fixes if fix.application is not None]
    if trials:
        row["tryable"] = trials
    if finding.tries:
        row["tries"] = finding.tries
        row["tried"] = finding.tries[-1]
    if finding.not_tried:
        row["not_tried"] = finding.not_tried
    return row


def _plan_item(item: PlanStep) -> PlanItem:
    row: PlanItem = {
        "step": item.step,
        "code": item.code,
        "title": item.title,
        "saves_ms": item.saves_ms,
    }
    if item.saves_unmeasured is not None:
        row["saves_unmeasured"] = item.saves_unmeasured
    if item.tried is not None:
        row["tried"] = item.tried
    return row


def _summary(run: Run, ledger: Ledger, sites: list[GraphBreakSite], counts: Outcome) -> Summary:
    caches: dict[str, Counter[str]] = {}
    for entry in ledger.compiles:
        for cache, outcome in entry.record.cache.items():
            caches.setdefault(cache, Counter())[outcome] += 1
    times = [e.record.compile_time_s for e in ledger.compiles if e.record.compile_time_s]
    return {
        "frames": len(ledger.frames),
        "compiles": counts.compiles,
        "compile_ids": run.compile_id_count,
        "graphs": sum(entry.record.graph_count for entry in ledger.compiles),
        "break_sites": len(sites),
        "graph_breaks": counts.graph_breaks,
        "recompiles": counts.recompiles,
        "refused": sum(1 for frame in ledger.frames if frame.refused is not None),
        "restarts": sum(len(entry.record.restart_reasons) for entry in ledger.compiles),
        "failures": len(ledger.failures),
        "skipped_frames": sum(1 for frame in ledger.frames if frame.skipped),
        "limit_hits": counts.limit_hits,
        "total_compile_time_s": round(sum(times), 6),
        "cache": {name: dict(sorted(counts.items())) for name, counts in sorted(caches.items())},
    }


def _compile_with_heat(
    entry: CompileEntry, heat: Heat | None, found: KernelMap | None, fusion: Fusion
) -> Compile:
    row = _compile(entry, found)
    row["fusion"] = _fusion(fusion)
    item = None if heat is None else heat.compiles.get((entry.record.stream, entry.compile_id))
    row["calls"] = None if item is None else item.calls
    row["seconds_in_graph"] = (
        None if item is None or item.seconds_in_graph is None else round(item.seconds_in_graph, 6)
    )
    middle = None if item is None else median_mad(item.spread)
    row["seconds_per_call_median"] = None if middle is None else round(middle[0], 9)
    row["seconds_per_call_mad"] = None if middle is None else round(middle[1], 9)
    row["t_s"] = None if item is None or item.t_s is None else round(item.t_s, 6)
    row["frame_calls"] = None if item is None else item.frame_calls
    row["after_warmup"] = None if item is None else item.after_warmup
    return row


def build_report(run: Run, collective_timeout_s: float = DEFAULT_COLLECTIVE_TIMEOUT_S) -> RunReport:
    """Analyse ``run`` (analysis/pipeline.py) and return the report as plain data (the JSON
    document). ``collective_timeout_s`` is what cross-rank compile skew is compared with
    (multi-rank logs only)."""
    return assemble_report(analyse_run(run, collective_timeout_s))


def assemble_report(analysis: RunAnalysis) -> RunReport:
    """report.json's content, written from a finished analysis: nothing here computes or
    changes a finding."""
    run, ledger, sites, heat, cold = (
        analysis.run, analysis.ledger, analysis.sites, analysis.heat, analysis.cold
    )  # fmt: skip
    findings = analysis.findings
    report: RunReport = {
        "schema_version": SCHEMA_VERSION,
        "kind": "run",
        "tool": {"name": "pt2doctor", "version": __version__},
        "inputs": {"paths": run.sources, "streams": run.streams},
        "environment": dict(sorted(analysis.environment.items())),
        "summary": _summary(run, ledger, sites, analysis.outcome),
        "plan": [_plan_item(item) for item in plan(findings)],
        "findings": [finding_row(f) for f in findings],
        "graph_breaks": [_graph_break(site) for site in sites],
        "frames": [_frame(f, e) for f, e in zip(ledger.frames, analysis.explanations, strict=True)],
        "compiles": [
            _compile_with_heat(entry, heat, found, _compile_fusion(run, entry))
            for entry, found in zip(ledger.compiles, analysis.kernel_maps, strict=True)
        ],
        "cold_start": cold.section,
        "failures": [_failure(failure) for failure in ledger.failures],
        "parse_stats": run.parse_stats.as_dict(),
    }
    aot = kernel_map(run.aot_built)
    if aot is not None:  # AOTInductor's build: its wrapper code and provenance have no compile
        report["aot_inductor"] = {"kernels": _kernels(aot), "source": aot.source,
                                  "partial": aot.partial}  # fmt: skip
    if run.export is not None:
        report["export"] = _export(run.export)
    if run.manifest is not None:
        from pt2doctor.analysis.findings.run_findings import run_section

        report["run"] = run_section(run.manifest, run.probes, heat)
        if run.tries_asked and not run.tries:
            report["run"]["try_fixes"] = NOTHING_TO_TRY
    if analysis.ranks is not None:
        report["ranks"] = ranks_section(analysis.ranks, ledger, heat)
    if analysis.profile is not None:
        from pt2doctor.report.profile_schema import profile_section

        report["profile"] = profile_section(analysis.profile)
        if analysis.paired:
            report["profile"]["paired"] = [paired.as_json() for paired in analysis.paired]
        elif report["profile"].get("available") is not False:
            report["profile"].setdefault("notes", []).append(NOT_PAIRED)
        for row, site in zip(report["graph_breaks"], sites, strict=True):
            cost = analysis.profile.break_cost_ms(site)
            if cost is not None:
                row["ms_per_call"] = cost
    for compiled, phases, caches in zip(report["compiles"], cold.phases, cold.caches, strict=True):
        compiled["phases"], compiled["caches"] = phases, caches
    return report


def _export(export: ExportTrace) -> dict[str, Any]:
    """What an export logged, as tlparse --export lists it: guards added with their user
    lines, data-dependent expressions (decided by the real values), unbacked symbols, fake
    kernels missing or wrong, and the exported program's text."""

    def row(event: ShapeEvent) -> dict[str, Any]:
        line = event.user_line
        found: dict[str, Any] = {"expr": event.expr,
                                 "user_line": _source_of(line) if line is not None else None}  # fmt: skip
        if event.result is not None:
            found["result"] = event.result
        if event.sources:
            found["sources"] = {k: user_expr(v).text for k, v in event.sources.items()}
        return found

    keys = {"guard_added": "guards_added", "data_dependent": "data_dependent",
            "unbacked_symbol": "unbacked_symbols", "missing_fake_kernel": "missing_fake_kernels",
            "mismatched_fake_kernel": "mismatched_fake_kernels"}  # fmt: skip
    section: dict[str, Any] = {
        key: [row(e) for e in export.events if e.kind == kind] for kind, key in keys.items()
    }
    section["exported_program"] = export.program
    return section
