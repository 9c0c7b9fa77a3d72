"""report.md: GitHub-flavoured Markdown for PR comments and CI job summaries.

Formats the report dict only. GitHub renders inline HTML in Markdown, so every user-derived
string is HTML-escaped and stripped of what Markdown would interpret (pipes in tables, backticks
in code spans, emphasis and link characters in text).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pt2doctor.analysis.built.graph_diff import refused_pair
from pt2doctor.analysis.coldstart.explain import PHASE_LABELS, phases_in_order
from pt2doctor.analysis.paths import shorten_paths
from pt2doctor.analysis.text import counted
from pt2doctor.report.format import (
    NOTHING_TO_FIX,
    built_line,
    compile_names,
    export_line,
    file_name,
    finding_blocks,
    hot_break,
    md_code,
    md_table,
    md_text,
    no_findings_text,
    only_info,
    plan_saving,
    run_line,
    source_where,
    warm_start_estimate,
)
from pt2doctor.report.types import GraphBreak, RunReport, Source

Report = RunReport
MAX_FINDINGS = 20
MAX_ROWS = 30


def _where(item: Source | None) -> str:
    return md_code(source_where(item)) if item else ""


def _headline(report: Report) -> list[str]:
    s = report["summary"]
    lines = [
        "## pt2doctor report",
        "",
        f"{_bold_count(s['frames'], 'frame')}, {_bold_count(s['compiles'], 'compile')} "
        f"({_recompile_counts(s)}), {_bold_count(s['break_sites'], 'graph-break site')}, "
        f"{_bold_count(s['failures'], 'failure')}, "
        f"**{s['total_compile_time_s']:.2f} s** compiling",
        "",
    ]
    ran = run_line(report.get("run"))
    if ran is not None:
        lines += [f"Ran {md_code(ran.command)}{md_text(ran.rest)}", ""]
    tried = (report.get("run") or {}).get("try_fixes")
    if tried:
        lines += [md_text(tried), ""]
    if report.get("redacted"):
        lines += ["_Redacted: source lines removed, paths made relative._", ""]
    return lines


def _plan(report: Report) -> list[str]:
    """What to do first: the plan as a numbered list."""
    items = report.get("plan") or []
    if not items:
        if only_info(report):
            return ["## What to do first", "", NOTHING_TO_FIX, ""]
        return []
    lines = ["## What to do first", ""]
    for number, item in enumerate(items, 1):
        saves = plan_saving(item)
        lines.append(f"{number}. *{item['step']}*: {md_text(shorten_paths(item['title']))}{saves}")
    return [*lines, ""]


def markdown_plan(report: Report) -> list[str]:
    """What to do first (every report kind with a plan and findings)."""
    return _plan(report)


def markdown_findings(report: Report, empty: str | None = None) -> list[str]:
    """The findings, one block per root cause (every report kind with findings)."""
    return _findings(report, empty)


def _findings(report: Report, empty: str | None = None) -> list[str]:
    findings = report["findings"]
    if not findings:
        return [empty or no_findings_text(report), ""]
    icons = {"error": "🔴", "warning": "🟡", "info": "🔵"}
    lines = ["### Findings", ""]
    blocks, more_blocks = finding_blocks(findings, MAX_FINDINGS)
    for block in blocks:
        icon = icons.get(block.severity, "")
        lines.append(f"- {icon} **{block.severity}** `{block.code}` {md_text(block.title)}")
        lines += [f"  - also {md_text(also)}" for also in block.also]
        lines += [f"  - {md_code(line)}" for line in block.evidence[:4]]
        lines.append(f"  - fix: {md_text(block.advice)}")
        if block.more:
            lines.append(f"    <details><summary>more</summary>{md_text(block.more)}</details>")
    if more_blocks:
        lines.append(f"- ... and {more_blocks} more in report.json")
    return [*lines, ""]


def _breaks(report: Report) -> list[str]:
    rows = report["graph_breaks"]
    if not rows:
        return []
    table = [
        [
            _where(row["site"]),
            md_code(row["site"].get("code") or ""),
            md_text(row["category"]),
            _hits(row),
            md_text(", ".join(row["compile_ids"])),
        ]
        for row in rows[:MAX_ROWS]
    ]
    header = ["site", "code", "category", "hits", "compiles"]
    return ["### Graph-break sites (hottest first)", "", *md_table(header, table)]


def _hits(row: GraphBreak) -> str:
    if row["hits"] is None:
        return "-"
    if row.get("splits_nothing"):
        return f"{row['hits']} (splits nothing)"
    if row.get("by_design"):
        return f"{row['hits']} (PyTorch's, by design)"
    return f"{row['hits']}{' 🔥' if hot_break(row) else ''}"


def _frames(report: Report) -> list[str]:
    rows = []
    for frame in report["frames"]:
        if not (frame["recompiles"] or frame["limit_hit"] or frame["skipped"]):
            continue
        guards = [g for r in frame["recompiles"] for g in r["failed_guards"]]
        rows.append(
            [
                md_code(
                    f"{frame.get('display_name') or frame['function']} ({frame['file']}:{frame['line']})"
                ),
                str(frame["variants"]),
                md_text(", ".join(sorted({g["category"] for g in guards})) or "-"),
                "<br>".join(md_code(text) for text in _change_lines(frame)[:4]),
                "yes" if frame["limit_hit"] else "",
                "yes" if frame["skipped"] else "",
            ]
        )
    if not rows:
        return []
    header = ["frame", "variants", "recompile causes", "what changed", "limit hit", "eager"]
    return ["### Frames with recompiles, limit hits or skips", "", *md_table(header, rows)]


def _change_lines(frame: Mapping[str, Any]) -> list[str]:
    """What changed at each recompile, in the user's names (raw guard text for old reports)."""
    from pt2doctor.report.frame_story import change_text

    lines = []
    for entry in frame["recompiles"]:
        changes = entry.get("changes")
        if changes is None:
            lines += [g["text"] for g in entry["failed_guards"]]
        else:
            lines += [f"{entry['compile_id']}: {change_text(c)}" for c in changes]
    return lines


def _bold_count(n: int, word: str) -> str:
    """``**3** frames``, ``**1** frame``."""
    number, _, noun = counted(n, word).partition(" ")
    return f"**{number}** {noun}"


def _recompile_counts(summary: Mapping[str, Any]) -> str:
    from pt2doctor.report.frame_story import headline_counts

    return md_text(headline_counts(summary))


def _stories(report: Report) -> list[str]:
    """Per recompiling frame: variants, what changed, outlook, fixes (report/frame_story.py)."""
    from pt2doctor.report.frame_story import frame_stories, story_markdown

    stories = frame_stories(report)
    if not stories:
        return []
    lines = ["### Why frames recompiled", ""]
    for story in stories:
        lines += story_markdown(story)
    return lines


def _ranks(report: Report) -> list[str]:
    """Per-rank table, the compile skew against the collective timeout, the divergences."""
    ranks = report.get("ranks")
    if not ranks:
        return []
    rows = [
        [
            md_text(row["label"]), str(row["compiles"]), f"{row['compile_time_s']:.2f}",
            str(len(row["recompiles"])), f"{row['cache']['hit']}/{row['cache']['miss']}",
            str(row["break_sites"]), str(row["failures"]),
            "-" if row["graph_calls"] is None else str(row["graph_calls"]),
        ]
        for row in ranks["per_rank"]
    ]  # fmt: skip
    header = ["rank", "compiles", "compile s", "recompiles", "cache hit/miss", "break sites",
              "failures", "graph calls"]  # fmt: skip
    lines = [f"### Ranks ({ranks['count']})", "", *md_table(header, rows)]
    lines += [
        f"Compile skew **{ranks['compile_skew_s']:.2f} s** (slowest {md_text(ranks['slowest'])}, "
        f"fastest {md_text(ranks['fastest'])}): {ranks['timeout_share']:.2%} of the "
        f"{ranks['collective_timeout_s']:g} s collective timeout.",
        "",
    ]
    if not ranks["divergences"]:
        return [*lines, "The ranks compiled alike.", ""]
    for divergence in ranks["divergences"]:
        lines.append(f"- **{divergence['severity']}** `{divergence['code']}` "
                     f"{md_text(divergence['title'])}")  # fmt: skip
        lines += [f"  - {md_code(evidence)}" for evidence in divergence["evidence"][:4]]
    return [*lines, ""]


def _environment(report: Report) -> list[str]:
    env = report["environment"]
    keys = ("torch_version", "python_version", "cuda_version", "triton_version", "gpu")
    parts = [f"{key} {md_code(env[key])}" for key in keys if env.get(key) is not None]
    changes = env.get("config_changes") or {}
    config = [f"{m}.{k}={v!r}" for m, c in sorted(changes.items()) for k, v in sorted(c.items())]
    if config:
        parts.append("config " + md_code(", ".join(config)))
    return ["<sub>" + " · ".join(parts) + "</sub>", ""] if parts else []


def _cold_start(report: Report) -> list[str]:
    section = report.get("cold_start")
    if not section or not report["compiles"]:
        return []
    lines = ["## Cold start", "", md_text(section["verdict"]) + ".", ""]
    estimate = warm_start_estimate(section)
    if estimate is not None:
        lines += [f"Next start with the same cache: about {estimate:.1f} s compiling.", ""]
    if section["phases"]:
        rows = [
            [md_text(PHASE_LABELS.get(key, key)), f"{value:.3f}"]
            for key, value in phases_in_order(section["phases"])
        ]
        lines += md_table(["phase", "seconds"], rows)
    lines += [f"- {md_text(advice)}" for advice in section["advice"]]
    return [*lines, ""] if section["advice"] else lines


# Graphs and kernels per graph the Markdown summary lists (the JSON and HTML keep more).
MD_GRAPHS = 5
MD_KERNELS = 20


def _built(report: Report) -> list[str]:
    """What was built: per graph its kernels, kind and user lines, and its refused fusions."""
    entries = [entry for entry in report["compiles"] if entry.get("kernels")]
    if not entries:
        return []
    lines, names = ["## What was built", ""], compile_names(report)
    for entry in entries[:MD_GRAPHS]:
        lines += [f"**{md_text(built_line(entry, names))}**", ""]
        rows = [
            [
                md_code(k["name"]),
                k["kind"],
                md_text(", ".join(f"{file_name(u['file'])}:{u['line']}" for u in k["user_lines"])),
            ]
            for k in entry["kernels"][:MD_KERNELS]
        ]
        lines += md_table(["kernel", "kind", "user lines"], rows)
        more = len(entry["kernels"]) - MD_KERNELS
        if more > 0:
            lines += [f"{more} more kernels in report.json", ""]
        fusion: Mapping[str, Any] = entry.get("fusion") or {}
        lines += [
            f"- {md_text(refused_pair(refusal))}"
            for refusal in (fusion.get("rejected") or [])[:MD_KERNELS]
        ]
        if fusion.get("available") and fusion.get("note"):
            lines.append(f"- fusion: {md_text(fusion['note'])}")
        if lines[-1] != "":
            lines.append("")
    if len(entries) > MD_GRAPHS:
        lines += [f"{len(entries) - MD_GRAPHS} more compiled graphs in report.json", ""]
    return lines


def _time(report: Report) -> list[str]:
    """Where the profiled time went: a bar per region, the top kernels, the time outside."""
    from pt2doctor.report import profile_views as pv

    profile = report.get("profile")
    if not profile:
        return []
    if not profile.get("available"):
        return ["## Where the time goes", "", f"No profile: {md_text(profile.get('error'))}", ""]
    wall = profile["window"]["ms_per_call"]
    lines = ["## Where the time goes", "", md_text(pv.summary_line(profile)) + ".", ""]
    rows = [
        [
            md_text(pv.region_label(r)),
            pv.ms(r["ms_per_call"]),
            pv.pct(r["ms_per_call"], wall),
            ", ".join(
                f"{label} {pv.pct(r[field], r['ms_per_call'])}" for field, label, _ in pv.PARTS
            ),
        ]
        for r in profile["regions"][: pv.TOP_REGIONS]
    ]
    lines += md_table(["region", "per call", "of the step", "split"], rows)
    rows = [
        [
            md_code(k["name"]),
            k["kind"],
            pv.ms(k["ms_per_call"]),
            pv.pct(k["ms_per_call"], wall),
            md_text(pv.kernel_where(k)),
        ]
        for k in profile["kernels"][: pv.TOP_KERNELS]
    ]
    if rows:
        lines += md_table(["kernel", "kind", "per call", "of the step", "user line"], rows)
    rows = [
        [md_text(where), pv.ms(value), pv.pct(value, wall)]
        for where, value in pv.outside_rows(profile)
    ]
    lines += md_table(["outside the regions", "per call", "of the step"], rows)
    by_line = pv.eager_line_rows(profile)
    if by_line:
        rows = [[md_text(where), pv.ms(value), pv.pct(value, wall)] for where, value in by_line]
        lines += md_table([pv.EAGER_LINES_LABEL, "per call", "of the step"], rows)
    paired = [f"{pv.PAIRED_LABEL.capitalize()}: {md_text(row)}" for row in pv.paired_rows(profile)]
    lines += [*paired, ""] if paired else []
    notes = [f"- {md_text(note)}" for note in profile.get("notes", [])]
    lines += [*notes, ""] if notes else []
    lines += [f"Chrome trace: {md_code(profile.get('trace_file'))}", ""]
    return lines


def render_markdown(report: Report) -> str:
    """The whole Markdown document."""
    lines = [*_headline(report), *_plan(report), *_cold_start(report), *_findings(report)]
    lines += _breaks(report)
    lines += [*_frames(report), *_stories(report), *_time(report), *_built(report)]
    lines += [*_ranks(report), *_export(report), *_environment(report)]
    return "\n".join(lines).rstrip() + "\n"


def _export(report: Report) -> list[str]:
    """An export's guards and data-dependent expressions, with their user lines; an
    AOTInductor build's kernels."""
    lines: list[str] = []
    export = report.get("export")
    if export:
        lines += ["## Export", "", md_text(export_line(export)), ""]
        rows = [
            [kind, md_code(row["expr"]), _where(row.get("user_line"))]
            for key, kind in (
                ("guards_added", "guard added"),
                ("data_dependent", "data-dependent"),
            )
            for row in export.get(key) or []
        ]
        if rows:
            lines += md_table(["event", "expression", "user line"], rows[:20])
            lines.append("")
    aot = report.get("aot_inductor")
    if aot:
        lines += ["## AOTInductor build", ""]
        rows = [
            [md_code(k["name"]), k["kind"], md_text(", ".join(k["ops"]))] for k in aot["kernels"]
        ]
        lines += [*md_table(["kernel", "kind", "ops"], rows), ""]
    return lines
