"""The HTML report's view-model: plain data built from the report dict, section by section.

Each section builder takes the report dict and returns a :class:`Section` or ``None`` (nothing to
show). Builders are registered in :data:`SECTIONS`, in page order; a new report part (ranks,
check's latency distributions, ablate's ladder) adds one builder and one template block, and
touches nothing else. Charts are *specs* here (numbers and labels); ``report.charts`` draws them
at render time, so the view-model stays JSON-able and is what the golden tests compare.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any, Literal

from pt2doctor.analysis.paths import shorten_paths
from pt2doctor.report.format import (
    cut,
    finding_blocks,
    grouped_findings,
    hot_break,
    no_findings_text,
    only_info,
    plan_saving,
    report_inputs,
    run_line,
    source_where,
)
from pt2doctor.report.rank_views import ranks
from pt2doctor.report.sections import Section, environment_rows
from pt2doctor.report.types import Compile, FailedGuard, RunReport

Report = RunReport
MAX_FINDINGS = 50
MAX_BREAKS_CHARTED = 20

SectionBuilder = Callable[[Report], "Section | None"]


def headline(report: Report) -> Section:
    """Counts, what ran and how it ended, and the findings (errors first)."""
    summary = report["summary"]
    counts = [
        ("frames", summary["frames"]),
        ("compiles", summary["compiles"]),
        ("recompiles", summary["recompiles"]),
        *([("refused at the limit", summary["refused"])] if summary.get("refused") else []),
        ("graph-break sites", summary["break_sites"]),
        ("failures", summary["failures"]),
        ("compile time (s)", f"{summary['total_compile_time_s']:.2f}"),
    ]
    ran = run_line(report.get("run"))
    blocks, more_blocks = finding_blocks(report["findings"], MAX_FINDINGS)
    findings = [
        {
            "severity": block.severity,
            "code": block.code,
            "title": cut(block.title),
            "also": [cut(also) for also in block.also],
            "evidence": [cut(line) for line in block.evidence[:6]],
            "advice": block.advice,
            "more": block.more,
        }
        for block in blocks
    ]
    data = {
        "inputs": report_inputs(report),
        "counts": [{"label": label, "value": value} for label, value in counts],
        "run": None if ran is None else {"command": ran.command, "rest": ran.rest},
        "plan": [
            {
                "step": item["step"],
                "title": cut(shorten_paths(item["title"])),
                "effect": plan_saving(item),
            }
            for item in report.get("plan") or []
        ],
        "findings": findings,
        "only_info": only_info(report),
        "no_findings": no_findings_text(report),
        "more_findings": more_blocks,
        "redacted": bool(report.get("redacted")),
    }
    return Section("summary", "Summary", "headline", data)


def graph_breaks(report: Report) -> Section | None:
    """Break sites ranked by heat (runtime hits when measured, else compiles that broke)."""
    rows = report["graph_breaks"]
    if not rows:
        return None
    measured = any(row["hits"] is not None for row in rows)
    said = {f["advice"] for f in grouped_findings(report["findings"])[:MAX_FINDINGS]}
    sites = [
        {
            "where": source_where(row["site"]),
            "code": row["site"].get("code"),
            "category": row["category"],
            "gb_type": cut(row["gb_type"], 160),
            "compile_ids": row["compile_ids"],
            "hits": row["hits"],
            "hot": hot_break(row),
            "splits_nothing": bool(row.get("splits_nothing")),
            "by_design": bool(row.get("by_design")),
            "frame_skipped": row["frame_skipped"],
            # No paragraph twice: the findings above already give this site's fix.
            "advice": None if row["advice"] in said else row["advice"],
        }
        for row in rows
    ]
    heat_key: Literal["hits", "occurrences"] = "hits" if measured else "occurrences"
    ranked = sorted(rows, key=lambda row: -(row[heat_key] or 0))[:MAX_BREAKS_CHARTED]
    chart = {
        "kind": "hbar",
        "title": "runtime hits per break site" if measured else "compiles that broke per site",
        "xlabel": "hits" if measured else "compiles",
        "labels": [cut(source_where(row["site"]), 60) for row in ranked],
        "values": [row[heat_key] or 0 for row in ranked],
        "highlight": [hot_break(row) for row in ranked],
    }
    data = {"sites": sites, "measured": measured}
    return Section("breaks", "Graph-break sites by heat", "breaks", data, [chart])


def _failed_guard(guard: FailedGuard) -> dict[str, Any]:
    return {
        "text": cut(guard["text"]),
        "category": guard["category"],
        "against": guard["against"],
        "origin": guard["origin"],
        "now_dynamic": guard["now_dynamic"],
        "source": source_where(guard["source"]),
        "code": guard["source"].get("code") if guard["source"] else None,
    }


def ledger_section(report: Report) -> Section | None:
    """Per frame: its compiles with cause and time; each recompile's failed guards, i.e. the
    guard diff between the new variant and each earlier one it failed against."""
    if not report["frames"]:
        return None
    by_id = {(c["stream"], c["compile_id"]): c for c in report["compiles"]}
    frames = []
    for frame in report["frames"]:
        compiles = [by_id.get((frame["stream"], cid)) for cid in frame["compile_ids"]]
        frames.append(
            {
                "function": frame.get("display_name") or frame["function"],
                "where": f"{frame['file']}:{frame['line']}",
                "stream": frame["stream"],
                "variants": frame["variants"],
                "limit_hit": frame["limit_hit"],
                "skipped": frame["skipped"],
                "is_resume": frame["is_resume"],
                "compiles": [
                    {
                        "compile_id": c["compile_id"],
                        "cause": c["cause"],
                        "compile_time_s": c["compile_time_s"],
                        "calls": c.get("calls"),
                        "after_warmup": c.get("after_warmup"),
                        "failed": c["failed"] and not c.get("refused"),
                        "refused": bool(c.get("refused")),
                    }
                    for c in compiles
                    if c is not None
                ],
                "recompiles": [
                    {
                        "compile_id": r["compile_id"],
                        "failed_guards": [_failed_guard(g) for g in r["failed_guards"]],
                    }
                    for r in frame["recompiles"]
                ],
            }
        )
    return Section("ledger", "Compile ledger", "ledger", {"frames": frames})


def recompile_stories(report: Report) -> Section | None:
    """Per recompiling frame: the variants and the state each serves, what changed at each
    recompile, the outlook and the fixes (the same story as the terminal and report.md)."""
    from pt2doctor.report.frame_story import frame_stories

    stories = frame_stories(report)
    if not stories:
        return None
    return Section("stories", "Why frames recompiled", "stories", {"stories": stories})


def _compile_label(entry: Compile) -> str:
    return cut(f"{entry['compile_id']} {entry['function']}", 48)


def _present(values: list[float | None]) -> list[float] | None:
    """``values`` when every one is known, else None."""
    known = [value for value in values if value is not None]
    return known if len(known) == len(values) else None


def compile_timeline(report: Report) -> Section | None:
    """When each compile happened (seconds after start) and its duration split by phase."""
    compiles = [c for c in report["compiles"] if c["compile_time_s"] is not None]
    if not compiles:
        return None
    starts = _present([c.get("t_s") for c in compiles])
    origin = "seconds after the program started"
    if starts is None:
        times = _present([c["start_time"] for c in compiles])
        if times is None:
            return None
        starts, origin = [t - min(times) for t in times], "seconds after 1st compile"
    phase_names = sorted({p for c in compiles for p in c["phases"]})
    rows = [
        {
            "label": _compile_label(c),
            "start": round(start, 6),
            "duration": c["compile_time_s"],
            "phases": {p: c["phases"].get(p, 0.0) for p in phase_names},
        }
        for c, start in zip(compiles, starts, strict=True)
    ]
    chart = {"kind": "timeline", "title": "compile timeline", "xlabel": origin, "rows": rows}
    table = [{"label": r["label"], "start": r["start"], "duration": r["duration"]} for r in rows]
    return Section("timeline", "Compile timeline", "timeline", {"rows": table}, [chart])


def variant_growth(report: Report) -> Section | None:
    """Cumulative variants (guarded compiles) over the run, and where warmup ended."""
    timed = [c for c in report["compiles"] if c.get("t_s") is not None and not c["failed"]]
    if not timed:
        return None
    timed.sort(key=lambda c: c.get("t_s") or 0.0)
    after = [c["compile_id"] for c in timed if c.get("after_warmup")]
    warmup_end = None
    ends = [c.get("t_s") or 0.0 for c in timed if c.get("after_warmup") is False]
    if after and ends:
        warmup_end = max(ends)
    chart = {
        "kind": "steps",
        "title": "variants over the run",
        "xlabel": "seconds after the program started",
        "ylabel": "variants compiled",
        "x": [c["t_s"] for c in timed],
        "y": list(range(1, len(timed) + 1)),
        "marks": [bool(c.get("after_warmup")) for c in timed],
        "warmup_end": warmup_end,
    }
    data = {"total": len(timed), "after_warmup": after}
    return Section("growth", "Variant growth over warmup", "growth", data, [chart])


def failures(report: Report) -> Section | None:
    """Compiles that failed, frames Dynamo skipped, recompile limits."""
    if not report["failures"]:
        return None
    rows = [
        {
            "compile_id": f["compile_id"],
            "kind": f["kind"],
            "fail_type": f["fail_type"],
            "reason": cut(f["fail_reason"]),
            "function": f["function"],
            "where": source_where(f["user_frame"]),
        }
        for f in report["failures"]
    ]
    return Section("failures", "Failures", "failures", {"rows": rows})


def environment(report: Report) -> Section:
    """torch, Python, CUDA, Triton versions and config changed from the defaults; parse health."""
    rows, config = environment_rows(report["environment"], lambda entry: entry, repr)
    stats = report["parse_stats"]
    parse = {
        "records": stats["records"],
        "problems": stats["problems"],
        "unknown_kinds": sorted(stats["unknown_kinds"]),
    }
    data = {"rows": rows, "config": config, "parse": parse, "tool": report["tool"]}
    return Section("environment", "Environment", "environment", data)


def time_split(report: Report) -> Section | None:
    """Where the profiled time went: report/profile_views.py."""
    from pt2doctor.report.profile_views import profile_section

    return profile_section(report)


def built(report: Report) -> Section | None:
    """What each graph was built into: report/built_views.py."""
    from pt2doctor.report.built_views import built as built_section

    return built_section(report)


def cold_start(report: Report) -> Section | None:
    """Where compile time went: report/cold_start_views.py (imported here, it imports Section)."""
    from pt2doctor.report.cold_start_views import cold_start as cold_start_section

    return cold_start_section(report)


SECTIONS: list[SectionBuilder] = [
    headline,
    ranks,
    graph_breaks,
    recompile_stories,
    ledger_section,
    cold_start,
    time_split,
    built,
    compile_timeline,
    variant_growth,
    failures,
    environment,
]


def build_view(report: Report, links: dict[str, str] | None = None) -> dict[str, Any]:
    """The page's view-model: a title and the sections that have something to show.
    ``links`` maps compile ids to drill-down pages (tlparse) when there are some."""
    sections = [s for s in (build(report) for build in SECTIONS) if s is not None]
    return {
        "title": "pt2doctor report",
        "schema_version": report["schema_version"],
        "links": dict(sorted((links or {}).items())),
        "sections": [asdict(section) for section in sections],
    }
