"""Terminal summary of a report (rich). Formats the report dict only; computes nothing."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pt2doctor.analysis.paths import display_path, shorten_paths
from pt2doctor.analysis.text import counted
from pt2doctor.report.format import (
    NO_FINDINGS,
    NOTHING_TO_FIX,
    built_line,
    compile_names,
    export_line,
    finding_blocks,
    no_findings_text,
    only_info,
    plan_saving,
    report_inputs,
    run_line,
    warm_start_estimate,
)
from pt2doctor.report.frame_story import frame_stories, headline_counts, story_terminal
from pt2doctor.report.types import Finding, Frame, GraphBreak, Ranks, RunReport, Summary

_SEVERITY_STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
MAX_FINDINGS = 25


def _headline(summary: Summary) -> str:
    cache = summary.get("cache", {})
    hits = sum(counts.get("hit", 0) for counts in cache.values())
    misses = sum(counts.get("miss", 0) for counts in cache.values())
    return (
        f"{counted(summary['frames'], 'frame')}, {counted(summary['compiles'], 'compile')} "
        f"({headline_counts(summary)}, {counted(summary['restarts'], 'restart')}), "
        f"{counted(summary['graphs'], 'graph')}, "
        f"{counted(summary['break_sites'], 'graph-break site')}, "
        f"{counted(summary['failures'], 'failure')}, "
        f"{summary['total_compile_time_s']:.2f} s compiling, cache {hits} hit / {misses} miss"
    )


def _plan(console: Console, report: RunReport, cwd: str | None) -> None:
    """What to do first: the plan's numbered lines (nothing when it is empty)."""
    items = report.get("plan") or []
    if not items:
        if only_info(report):  # every finding is for reference: say so before them
            console.print(f"[bold]What to do first[/]: {NOTHING_TO_FIX}")
            console.print()
        return
    console.print("[bold]What to do first[/]")
    grid = Table.grid(padding=(0, 1))  # each action's wrapped lines under its text
    grid.add_column(width=4, no_wrap=True, justify="right")
    grid.add_column(overflow="fold")
    for number, item in enumerate(items, 1):
        saves = plan_saving(item)
        grid.add_row(
            f"{number}.",
            f"[dim]{item['step']}:[/] {escape(shorten_paths(item['title'], cwd))}{saves}",
        )
    console.print(grid)
    console.print()


def render_plan(console: Console, report: RunReport, cwd: str | None = None) -> None:
    """What to do first (every report kind with a plan and findings)."""
    _plan(console, report, cwd)


def render_findings(
    console: Console, findings: list[Finding], cwd: str | None = None, empty: str = NO_FINDINGS
) -> None:  # the empty text: format.py no_findings_text for a run report
    """The findings, one block per root cause (every report kind with findings)."""
    _findings(console, findings, cwd, empty)


def _findings(
    console: Console, findings: list[Finding], cwd: str | None, empty: str = NO_FINDINGS
) -> None:
    if not findings:
        console.print(f"[green]{empty}")
        return
    blocks, more_blocks = finding_blocks(findings, MAX_FINDINGS, cwd)
    for block in blocks:
        style = _SEVERITY_STYLE.get(block.severity, "")
        # A grid, so that every wrapped line keeps its indent (a flat print wrapped to column 0).
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=7, no_wrap=True)
        grid.add_column(overflow="fold")
        grid.add_row(
            f"[{style}]{block.severity.upper()}[/]",
            f"[bold]{escape(block.code)}[/]  {escape(block.title)}",
        )
        for also in block.also:  # the same cause's other findings
            grid.add_row("", f"[bold]also[/] {escape(also)}")
        for line in block.evidence[:4]:
            grid.add_row("", f"[dim]{escape(line)}[/]")
        folded = " [dim](more in report.md)[/]" if block.more else ""
        grid.add_row("", f"[italic]fix:[/] {escape(block.advice)}{folded}")
        console.print(grid)
    if more_blocks:
        console.print(f"... and {more_blocks} more findings in the JSON report")


def _table(title: str, columns: dict[str, int | None]) -> Table:
    """A table as wide as the console whose cells fold long words (paths) onto the next line
    instead of cutting them to ``/…/examp…`` (rich's default in a narrow CI log). ``columns``:
    name -> share of the width left by the short columns (None: as wide as its content)."""
    table = Table(title=title, show_lines=False, expand=True)
    for column, ratio in columns.items():
        table.add_column(column, overflow="fold", ratio=ratio, no_wrap=ratio is None)
    return table


def _breaks_table(breaks: list[GraphBreak], cwd: str | None) -> Table:
    table = _table(
        "Graph-break sites", {"site": 5, "category": 3, "compiles": None, "hits": None, "reason": 4}
    )
    for row in breaks:
        site = row["site"]
        table.add_row(
            escape(f"{display_path(site['file'], cwd)}:{site['line']} {site['function']}"),
            row["category"],
            str(row["occurrences"]),
            "-" if row["hits"] is None else str(row["hits"]),
            escape((row["gb_type"] or "")[:80]),
        )
    return table


def _frame_cell(frame: Frame, cwd: str | None) -> str:
    """The name a user knows, then where they compiled it (their torch.compile call) or, when
    the run did not record it, the frame's own ``file:line``."""
    name = str(frame.get("name") or frame.get("display_name") or frame["function"])
    at = frame.get("compiled_at")
    if at:
        return f"{name}\ncompiled at {display_path(at['file'], cwd)}:{at['line']}"
    return f"{name}\n{display_path(frame['file'], cwd)}:{frame['line']}"


def _what_changed(frame: Frame) -> str:
    """The values that differ between the frame's variants, as the user names them (the
    failed-guard categories said "stride, other" for most frames)."""
    varying = (frame.get("outlook") or {}).get("varying", [])
    # kwargs['x'] is x= at the call (``call_form``; absent before 2026-12-02)
    sources = [str(row.get("call_form") or row["source"]) for row in varying]
    if not sources:
        causes = {g["category"] for r in frame["recompiles"] for g in r["failed_guards"]}
        return ", ".join(sorted(causes)) or "-"
    return "\n".join(sources[:2]) + (f"\n+{len(sources) - 2} more" if len(sources) > 2 else "")


def _frames_table(frames: list[Frame], cwd: str | None) -> Table:
    table = _table(
        "Frames with recompiles, limit hits or skips",
        {"frame": 5, "variants": None, "what changed": 4, "limit hit": None, "eager": None},
    )
    for frame in frames:
        if not (frame["recompiles"] or frame["limit_hit"] or frame["skipped"]):
            continue
        table.add_row(
            escape(_frame_cell(frame, cwd)),
            str(frame["variants"]),
            escape(_what_changed(frame)),
            "yes" if frame["limit_hit"] else "",
            "yes" if frame["skipped"] else "",
        )
    return table


def _ranks_table(ranks: Ranks) -> Table:
    table = Table(title=f"Ranks ({ranks['count']})")
    columns = ("rank", "compiles", "recompiles", "compile s", "graphs", "break sites")
    for column in (*columns, "failures", "cache hit/miss", "graph calls"):
        table.add_column(column)
    for row in ranks["per_rank"]:
        table.add_row(
            escape(row["label"]),
            str(row["compiles"]),
            str(len(row["recompiles"])),
            f"{row['compile_time_s']:.2f}",
            str(row["graphs"]),
            str(row["break_sites"]),
            str(row["failures"]),
            f"{row['cache']['hit']}/{row['cache']['miss']}",
            "-" if row["graph_calls"] is None else str(row["graph_calls"]),
        )
    return table


def _ranks(console: Console, ranks: Ranks) -> None:
    """The per-rank table, the compile skew against the collective timeout, the divergences."""
    console.print(_ranks_table(ranks))
    console.print(
        f"compile skew {ranks['compile_skew_s']:.2f} s (slowest {escape(ranks['slowest'])}, "
        f"fastest {escape(ranks['fastest'])}): {ranks['timeout_share']:.2%} of the "
        f"{ranks['collective_timeout_s']:g} s collective timeout"
    )
    if not ranks["divergences"]:
        console.print("[green]The ranks compiled alike.")
    for divergence in ranks["divergences"]:
        style = _SEVERITY_STYLE.get(divergence["severity"], "")
        console.print(f"  [{style}]{escape(divergence['kind'])}[/]: {escape(divergence['title'])}")


def _cold_start_line(section: dict[str, Any]) -> str:
    """The cold-start verdict and the warm-start estimate, in one line."""
    line = f"cold start: {section['verdict']}"
    estimate = warm_start_estimate(section)
    if estimate is not None:
        line += f"; a warm start should take about {estimate:.1f} s"
    return escape(line)


# Compiles the terminal summary lists a build line for.
TERM_GRAPHS = 10


def _built(console: Console, report: RunReport) -> None:
    built = [entry for entry in report.get("compiles", []) if entry.get("kernels")]
    names = compile_names(report) if built else {}
    lines = [line for entry in built if (line := built_line(entry, names))]
    if not lines:
        return
    console.print("[bold]what was built[/] (kernels by kind; report.md/html map them to lines)")
    for line in lines[:TERM_GRAPHS]:
        console.print(f"  {escape(line)}")
    if len(lines) > TERM_GRAPHS:
        console.print(f"  … {len(lines) - TERM_GRAPHS} more in report.json")


def _time(console: Console, report: RunReport) -> None:
    """Where the profiled time went: a bar per region, the top kernels, the time outside."""
    from pt2doctor.report import profile_views as pv

    profile = report.get("profile")
    if not profile:
        return
    if not profile.get("available"):
        console.print(
            f"[bold]where the time goes[/]: no profile ({escape(profile.get('error') or '')})"
        )
        return
    wall = profile["window"]["ms_per_call"]
    console.print(f"[bold]where the time goes[/]: {escape(pv.summary_line(profile))}")
    table = _table(pv.LEGEND, {"region": 5, "per call": None, "step": None, "parts": None})
    for region in profile["regions"][: pv.TOP_REGIONS]:
        table.add_row(
            escape(pv.region_label(region)),
            pv.ms(region["ms_per_call"]),
            pv.pct(region["ms_per_call"], wall),
            pv.text_bar(region),
        )
    console.print(table)
    kernels = _table("top kernels", {"kernel": 4, "per call": None, "step": None, "user line": 5})
    for kernel in profile["kernels"][: pv.TOP_KERNELS]:
        kernels.add_row(
            escape(f"{kernel['name']} ({kernel['kind']})"),
            pv.ms(kernel["ms_per_call"]),
            pv.pct(kernel["ms_per_call"], wall),
            escape(pv.kernel_where(kernel)),
        )
    if kernels.row_count:
        console.print(kernels)
    outside = "; ".join(f"{where} {pv.ms(value)}" for where, value in pv.outside_rows(profile))
    console.print(f"  outside the regions: {escape(outside)}")
    by_line = "; ".join(f"{where} {pv.ms(value)}" for where, value in pv.eager_line_rows(profile))
    if by_line:
        console.print(f"  {pv.EAGER_LINES_LABEL}: {escape(by_line)}")
    for row in pv.paired_rows(profile):
        console.print(f"  {pv.PAIRED_LABEL}: {escape(row)}")
    for note in profile.get("notes", []):
        console.print(f"  [dim]note: {escape(note)}[/]")
    console.print(f"  [dim]Chrome trace: {escape(str(profile.get('trace_file')))}[/]")


def render_terminal(report: RunReport, console: Console, cwd: str | None = None) -> None:
    """Print the summary: headline counts, findings by severity, then the two key tables.
    Paths read relative to ``cwd`` (default: the working directory) or to site-packages."""
    cwd = os.getcwd() if cwd is None else cwd
    paths = ", ".join(display_path(path, cwd) for path in report_inputs(report))
    console.print(
        f"[bold]pt2doctor report[/] — {escape(paths or 'no TORCH_TRACE log was written')}"
    )
    ran = run_line(report.get("run"))
    if ran is not None:
        console.print(f"Ran `{escape(ran.command)}`{escape(ran.rest)}")
    console.print(_headline(report["summary"]))
    if report.get("cold_start") and report["compiles"]:
        console.print(_cold_start_line(report["cold_start"]))
    stats = report["parse_stats"]
    if stats["problems"] or stats["unknown_kinds"]:
        console.print(
            f"[yellow]parse: {counted(stats['problems'], 'problem')}[/] "
            f"(non-trace lines {stats['non_trace_lines']}, bad envelopes "
            f"{stats['bad_envelopes']}, md5 mismatches {stats['md5_mismatches']}, truncated "
            f"{stats['truncated_records']}); {counted(len(stats['unknown_kinds']), 'record kind')} not "
            "understood"
        )
    console.print()
    _plan(console, report, cwd)
    _findings(console, report["findings"], cwd, no_findings_text(report))
    if report["graph_breaks"]:
        console.print(_breaks_table(report["graph_breaks"], cwd))
    frames_table = _frames_table(report["frames"], cwd)
    if frames_table.row_count:
        console.print(frames_table)
    for story in frame_stories(report):
        story_terminal(console, story, cwd)
    _time(console, report)
    _built(console, report)
    if "ranks" in report:
        _ranks(console, report["ranks"])
    if report.get("export"):
        console.print(
            f"[bold]export[/]: {escape(shorten_paths(export_line(report['export']), cwd))}"
        )
    if report.get("aot_inductor"):
        kernels = report["aot_inductor"]["kernels"]
        names = ", ".join(k["name"] for k in kernels[:6]) + (" ..." if len(kernels) > 6 else "")
        console.print(f"[bold]AOTInductor[/] built {len(kernels)} kernels: {escape(names)}")
