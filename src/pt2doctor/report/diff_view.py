"""Renderers of a diff (analysis/diff/reports.py ``Diff.as_dict()``): terminal and Markdown.
Every change names its subject and both values; regressions first."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from pt2doctor.analysis.text import counted
from pt2doctor.report.format import md_code, md_table, md_text

DiffDict = dict[str, Any]
# What each change kind means, in words (kinds: analysis/diff/reports.py).
KIND_LABELS = {
    "new_break_site": "new graph-break site",
    "removed_break_site": "graph-break site gone",
    "variants": "variant count changed",
    "new_recompile_cause": "new recompile cause",
    "frame": "recompiles of frame",
    "compile_time_s": "compile time (s)",
    "time_per_call_s": "time per call in compiled graphs (s)",
    "environment": "environment",
    "failures": "compile failures",
    "cache_miss_cause": "cache miss cause",
    "graph_ops": "graph ops",
    "kernels": "kernels",
    # profiler traces (analysis/diff/profiles.py)
    "step_time_ms": "step time (ms)",
    "device_busy_ms": "device busy per step (ms)",
    "kernel_group": "device time",
    "syncs": "synchronize calls per step",
    "graph_replays": "CUDA-graph replays per step",
    "gpu": "GPU",
    "traces": "traces",
    # check reports (check/diff.py)
    "contract_clause": "contract clause",
    "cell_verdict": "cell verdict",
    "new_cell": "new cell",
    "removed_cell": "cell gone",
    "diverging_module": "module where numbers diverge",
    # ablate reports (ablate/diff.py)
    "rung_status": "ablation rung",
    "failing_layer": "failing layer",
    "failing_module": "smallest failing module",
    "loss_leaves_band": "step the loss leaves eager's band",
    "max_variants": "max variants per frame",
    "late_compiles": "recompiles after warmup",
    "speedup": "steady-state speedup",
    "cold_start_s": "cold start, first result (s)",
}


# Kinds whose detail is the story itself, shown in the Markdown table's B column.
_DETAILED = ("frame", "graph_ops", "kernels")


def _value(value: Any) -> str:
    """A change's value as read: floats to 3 significant digits (25.0, not 25.016381)."""
    if value is None:
        return "none"
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _ordered(diff: DiffDict) -> list[dict[str, Any]]:
    return sorted(diff["changes"], key=lambda change: not change["regression"])


def render_diff_terminal(diff: DiffDict, console: Console) -> None:
    """One line per change: REGRESSION/change, what, subject, before → after."""
    console.print(f"[bold]pt2doctor diff[/] {escape(diff['a'])} → {escape(diff['b'])}")
    if not diff["changes"]:
        console.print("[green]No differences that matter.")
        return
    for change in _ordered(diff):
        tag = "[bold red]REGRESSION[/]" if change["regression"] else "[cyan]change[/]    "
        label = KIND_LABELS.get(change["kind"], change["kind"])
        if change["kind"] == "frame":  # the detail is the whole story: variants; causes; ...
            console.print(f"{tag} {escape(label)} {escape(change['subject'])}: "
                          f"{escape(change['detail'])}")  # fmt: skip
            continue
        console.print(
            f"{tag} {escape(label)}: {escape(change['subject'])}: "
            f"{escape(_value(change['before']))} → {escape(_value(change['after']))}"
            + (f" [dim]({escape(change['detail'])})[/]" if change["detail"] else "")
        )
    console.print(f"\n{_tally(diff)}")


def _tally(diff: DiffDict) -> str:
    """``2 regressions among 5 changes``: the regressions are some of the changes."""
    return (f"{counted(diff['regressions'], 'regression')} among "
            f"{counted(len(diff['changes']), 'change')}")  # fmt: skip


def render_diff_markdown(diff: DiffDict) -> str:
    """A Markdown table of the changes, regressions first."""
    lines = [f"## pt2doctor diff: {md_code(diff['a'])} → {md_code(diff['b'])}", ""]
    if not diff["changes"]:
        return "\n".join([*lines, "No differences that matter.", ""])
    rows = [
        [
            "🔴 regression" if change["regression"] else "change",
            md_text(KIND_LABELS.get(change["kind"], change["kind"])),
            md_code(change["subject"]),
            md_code(_value(change["before"])),
            md_code(_value(change["after"]))
            + (f"<br>{md_text(change['detail'])}" if change["kind"] in _DETAILED else ""),
        ]
        for change in _ordered(diff)
    ]
    lines += md_table(["", "what", "where", "A", "B"], rows)
    causes = [c for c in _ordered(diff) if c["kind"] == "cache_miss_cause" and c["detail"]]
    if causes:
        lines += ["Why the caches missed:", ""]
        lines += [f"- {md_code(c['subject'])}: {md_text(c['detail'])}" for c in causes]
        lines.append("")
    lines.append(_tally(diff))
    return "\n".join(lines) + "\n"
