"""Terminal rendering of a check report (rich): cells, variants side by side, the contract."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pt2doctor.analysis.text import counted
from pt2doctor.check.cost import cost_line
from pt2doctor.check.perf_views import frame_place
from pt2doctor.check.types import (
    Alignment,
    CheckReport,
    Distribution,
    GroupRow,
    Steady,
    VariantRow,
    verdict_rank,
)
from pt2doctor.check.views import worst_tensor
from pt2doctor.check.where import notes_by_text
from pt2doctor.report.format import frame_name, ms_text, seconds_text

_STYLE = {
    "pass": "green",
    "nondeterministic": "yellow",
    "fail": "red",
    "error": "red",
    "crash": "red",
    "timeout": "red",
    "fatal": "red",
}


def _worst_tensor(entry: Alignment) -> str:
    failing = [t for t in entry.get("tensors", []) if not t["passed"]] or entry.get("tensors", [])
    if not failing:
        return escape(str(entry.get("error") or entry.get("warmup_error") or ""))[:120]
    shown = worst_tensor(entry) or {}
    return (
        f"{escape(shown['name'])}: abs {shown['max_abs_error']}, rel {shown['max_rel_error']}, "
        f"rmse ratio {shown['rmse_ratio']} ({escape(shown['rule'])})"
    )


def _cells_table(report: CheckReport) -> Table:
    """One row per cell; the worst variant's numbers when any variant is not a pass. A cell id
    folds onto the next line rather than being cut (``llama/s16/float32/e…`` hid eval/train).
    The cells' notes are printed under the table, whole (:func:`_cell_notes`): a notes column
    wrapped a custom op's fix to 70 lines and cut it."""
    rows = []
    for cell in report["cells"]:
        entries = cell["variants"]
        worst_name = max(
            entries, default=None, key=lambda n: verdict_rank(entries[n].get("verdict"))
        )
        worst = entries.get(worst_name, {}) if worst_name else {}
        verdict = cell["verdict"]
        labels = ", ".join(f"{n}={e.get('verdict', 'not run')}" for n, e in entries.items())
        rows.append(
            [
                escape(cell["id"]),
                f"[{_STYLE.get(verdict, 'white')}]{verdict}[/]",
                escape(labels),
                _worst_tensor(worst) if worst else "",
            ]
        )
    table = Table(title="Alignment per cell (eager vs compiled)", title_justify="left")
    table.add_column("cell", overflow="fold")
    for column in ("verdict", "variants"):
        table.add_column(column)
    table.add_column("worst tensor / error", overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _cell_notes(report: CheckReport, console: Console) -> None:
    """Each cell's notes, one line each, under the cell table."""
    for ids, note in notes_by_text(report["cells"]):
        console.print(f"  {escape(', '.join(ids))}: {escape(note)}")


def _group_line(variant: VariantRow, group: GroupRow) -> str:
    """One group under one variant on one line (readable at 80 columns, where a wide table
    would cut every cell)."""
    steady = group.get("steady") or {}
    eager, compiled = steady.get("eager") or {}, steady.get("compiled") or {}
    low, high = steady.get("speedup_ci95") or (None, None)
    if "error" in group:
        speedup = f"[red]{escape(group['error'] or '')}[/]"
    elif steady.get("speedup") is None:
        speedup = "no speedup measured"
    else:
        speedup = f"speedup (total time) [bold]{steady['speedup']:.2f}x[/] [{low:.2f}-{high:.2f}]"
    late = len(group.get("late_compiles", []))
    return (
        f"  {escape(group['group'].partition('/')[2])}: warmup "
        f"{seconds_text(group['warmup'].get('seconds'))}, {group['max_variants_per_frame']} "
        f"{'variant' if group['max_variants_per_frame'] == 1 else 'variants'} per frame; p50 eager {ms_text(eager.get('p50_s'))} -> compiled "
        f"{ms_text(compiled.get('p50_s'))} ms, p99 {ms_text(eager.get('p99_s'))} -> "
        f"{ms_text(compiled.get('p99_s'))} ms; {speedup}; "
        + (
            f"[red]{counted(late, 'recompile')} after warmup[/]"
            if late
            else "no recompile after warmup"
        )
    )


def _render_variants(report: CheckReport, console: Console) -> None:
    console.print("[bold]Compile variants side by side[/]")
    for variant in report["variants"]:
        head = f"{escape(variant['name'])} ({escape(variant['case'])}, {variant['backend']})"
        if not variant["applicable"]:
            console.print(f"{head}: [yellow]{escape(variant['reason'] or '')}[/]")
            continue
        cold = variant["cold_start"]
        empty, warm = (cold.get(w, {}) for w in ("empty_cache", "warm_cache"))
        cold_text = (
            f"cold start {seconds_text(empty.get('first_result_s'))} (empty cache), "
            f"{seconds_text(warm.get('first_result_s'))} (warm cache)"
            if cold
            else "cold start not measured"
        )
        console.print(f"{head}: {cold_text}")
        for group in variant["groups"]:
            console.print(_group_line(variant, group))
            profile = group.get("profile")
            if profile:
                why = profile["statement"] if profile.get("available") else profile.get("error")
                console.print(f"    [dim]why (profiled):[/] {escape(str(why))}")


def _spread(dist: Distribution) -> float | None:
    iqr, p50 = dist.get("iqr_s"), dist.get("p50_s")
    return iqr / p50 if iqr is not None and p50 else None


def _half_interval(steady: Steady) -> float | None:
    speedup, interval = steady.get("speedup"), steady.get("speedup_ci95")
    return (interval[1] - interval[0]) / 2 / speedup if speedup and interval else None


def _noise(report: CheckReport, console: Console) -> None:
    """One line for every group whose timings are too noisy to trust to a few percent (the
    JSON keeps each group's warnings): which groups, and how wide at worst."""
    groups: list[tuple[str, Steady]] = []
    for variant in report["variants"]:
        for group in variant["groups"]:
            steady = group.get("steady")
            if steady:
                groups.append((f"{variant['name']} {group['group']}", steady))
    noisy = [(where, steady) for where, steady in groups if steady.get("noise_warnings")]
    if not noisy:
        return
    spreads = [
        spread
        for _, steady in noisy
        for dist in (steady.get("eager"), steady.get("compiled"))
        if dist is not None and (spread := _spread(dist)) is not None
    ]
    halves = [half for _, steady in noisy if (half := _half_interval(steady)) is not None]
    which = "every group" if len(noisy) == len(groups) else ", ".join(w for w, _ in noisy)
    runs = sorted({steady["iterations"] for _, steady in noisy if "iterations" in steady})
    worst = [f"latency IQR up to {max(spreads):.0%} of the median"] if spreads else []
    worst += [f"speedup interval up to ±{max(halves):.0%}"] if halves else []
    preempted = sum(len(steady.get("preempted") or ()) for _, steady in noisy)
    if preempted:
        worst.insert(0, f"{counted(preempted, 'iteration')} preempted (left out of the speedup)")
    console.print(
        f"[yellow]noise[/] in {escape(which)} ({'/'.join(map(str, runs))} iterations): "
        f"{', '.join(worst)}: the timings are indicative only (a busy machine or too few "
        "samples); raise --iterations"
    )


def _details(report: CheckReport, console: Console) -> None:
    _noise(report, console)
    for variant in report["variants"]:
        for group in variant["groups"]:
            where = f"{variant['name']} {group['group']}"
            for late in group.get("late_compiles", []):
                place = frame_place(late)
                console.print(
                    f"[red]recompile after warmup[/] {escape(where)}: "
                    f"{escape(frame_name(late))}" + (f" ({escape(place)})" if place else "")
                )
                for guard in late["failed_guards"]:
                    console.print("    " + escape(f"[{guard['category']}] {guard['text']}"))
            regional = group.get("regional")
            if regional:
                shared = "share one compiled artifact" if regional["shared"] else "do NOT share"
                causes = ", ".join(regional.get("recompile_causes", [])) or "none"
                console.print(
                    f"regional {escape(where)}: {regional['blocks']} blocks {shared}: "
                    f"{counted(regional['block_compiles'], 'compile')} of the block, recompiled for "
                    f"{escape(causes)}"
                )


def render_check(report: CheckReport, console: Console) -> None:
    summary = report["summary"]
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary["verdicts"].items())
    console.print(f"[bold]pt2doctor check[/]: {counted(summary['cells'], 'cell')}: {counts}")
    console.print(_cells_table(report))
    _cell_notes(report, console)
    _render_variants(report, console)
    _details(report, console)
    for change in report["environment_changes"]:
        console.print(f"[yellow]environment changed[/] {escape(change)}")
    contract = report["contract"]
    source = contract["budget"] or "defaults (no budget file)"
    console.print(f"\n[bold]Contract[/] ({escape(source)}):")
    for clause in contract["clauses"]:
        mark = {True: "[green]ok  [/]", False: "[red]FAIL[/]", None: "[yellow]n/a [/]"}[
            clause["ok"]
        ]
        detail = f"  ({escape(str(clause['detail']))})" if clause["detail"] else ""
        console.print(
            f"  {mark} {clause['name']}: {escape(str(clause['measured']))} "
            f"(budget {escape(str(clause['budget']))}){detail}"
        )
    if cost := report.get("cost"):
        console.print(f"\n[dim]{escape(cost_line(cost))}[/]")
    if report["interrupted"]:
        console.print("[yellow]interrupted: the report holds what was measured so far[/]")
