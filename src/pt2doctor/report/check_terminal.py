"""Terminal rendering of a check report (rich): cells, variants side by side, the contract."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pt2doctor.report.check import VERDICT_RANK

_STYLE = {
    "pass": "green",
    "nondeterministic": "yellow",
    "fail": "red",
    "error": "red",
    "crash": "red",
    "timeout": "red",
    "fatal": "red",
}


_RANK = VERDICT_RANK


def _seconds(value: Any, scale: float = 1.0, unit: str = "s") -> str:
    return "-" if value is None else f"{value * scale:.3g} {unit}"


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1e3:.3g}"


def _worst_tensor(entry: dict[str, Any]) -> str:
    failing = [t for t in entry.get("tensors", []) if not t["passed"]] or entry.get("tensors", [])
    if not failing:
        return escape(str(entry.get("error") or entry.get("warmup_error") or ""))[:120]
    worst = max(failing, key=lambda t: t["max_abs_error"] or 0.0)
    ratio = "-" if worst["rmse_ratio"] is None else f"{worst['rmse_ratio']:.3g}"
    return (
        f"{escape(worst['name'])}: abs {worst['max_abs_error']:.3g}, "
        f"rel {worst['max_rel_error']:.3g}, rmse ratio {ratio} ({escape(worst['rule'])})"
    )


def _cells_table(report: dict[str, Any]) -> Table:
    """One row per cell; the worst variant's numbers when any variant is not a pass."""
    table = Table(title="Alignment per cell (eager vs compiled)", title_justify="left")
    for column in ("cell", "verdict", "variants", "worst tensor / error", "notes"):
        table.add_column(column)
    for cell in report["cells"]:
        entries = cell["variants"]
        worst_name = max(
            entries, default=None, key=lambda n: _RANK.get(entries[n].get("verdict", ""), 5)
        )
        worst = entries.get(worst_name, {}) if worst_name else {}
        notes = []
        for name, entry in entries.items():
            if entry.get("stride_mismatches"):
                notes.append(
                    f"{name}: stride differs ({', '.join(entry['stride_mismatches'][:2])})"
                )
            if entry.get("eager_nondeterministic"):
                notes.append(f"{name}: eager differs from itself")
        verdict = cell["verdict"]
        labels = ", ".join(f"{n}={e.get('verdict', 'not run')}" for n, e in entries.items())
        table.add_row(
            escape(cell["id"]),
            f"[{_STYLE.get(verdict, 'white')}]{verdict}[/]",
            escape(labels),
            _worst_tensor(worst) if worst else "",
            escape("; ".join(notes)),
        )
    return table


def _variants_table(report: dict[str, Any]) -> Table:
    table = Table(title="Compile variants side by side", title_justify="left")
    for column in (
        "variant",
        "group",
        "cold empty/warm",
        "warmup",
        "max var",
        "eager p50/p99",
        "compiled p50/p99",
        "speedup [95% CI]",
        "late",
    ):
        table.add_column(column)
    for variant in report["variants"]:
        if not variant["applicable"]:
            table.add_row(escape(variant["name"]), "-", escape(variant["reason"] or ""), *"------")
            continue
        cold = variant["cold_start"]
        cold_text = " / ".join(
            _seconds(cold.get(w, {}).get("first_result_s")) for w in ("empty_cache", "warm_cache")
        )
        for group in variant["groups"]:
            steady = group.get("steady") or {}
            eager, compiled = steady.get("eager") or {}, steady.get("compiled") or {}
            low, high = steady.get("speedup_ci95") or (None, None)
            speedup = (
                "-"
                if steady.get("speedup") is None
                else f"{steady['speedup']:.2f}x [{low:.2f}-{high:.2f}]"
            )
            table.add_row(
                escape(variant["name"]),
                escape(group["group"].partition("/")[2]),
                cold_text,
                _seconds(group["warmup"].get("seconds")),
                str(group["max_variants_per_frame"]),
                f"{_ms(eager.get('p50_s'))}/{_ms(eager.get('p99_s'))} ms",
                f"{_ms(compiled.get('p50_s'))}/{_ms(compiled.get('p99_s'))} ms",
                speedup if "error" not in group else f"[red]{escape(group['error'])}[/]",
                str(len(group.get("late_compiles", []))),
            )
    return table


def _details(report: dict[str, Any], console: Console) -> None:
    for variant in report["variants"]:
        for group in variant["groups"]:
            where = f"{variant['name']} {group['group']}"
            for late in group.get("late_compiles", []):
                console.print(
                    f"[red]recompile after warmup[/] {escape(where)}: "
                    f"{escape(str(late['function']))} ({escape(str(late['file']))}:"
                    f"{late['line']})"
                )
                for guard in late["failed_guards"]:
                    console.print("    " + escape(f"[{guard['category']}] {guard['text']}"))
            for warning in (group.get("steady") or {}).get("noise_warnings", []):
                console.print(f"[yellow]noise[/] {escape(where)}: {escape(warning)}")
            regional = group.get("regional")
            if regional:
                shared = "share one compiled artifact" if regional["shared"] else "do NOT share"
                causes = ", ".join(regional.get("recompile_causes", [])) or "none"
                console.print(
                    f"regional {escape(where)}: {regional['blocks']} blocks {shared}: "
                    f"{regional['block_compiles']} compile(s) of the block, recompiled for "
                    f"{escape(causes)}"
                )


def render_check(report: dict[str, Any], console: Console) -> None:
    summary = report["summary"]
    counts = ", ".join(f"{n} {verdict}" for verdict, n in summary["verdicts"].items())
    console.print(f"[bold]pt2doctor check[/]: {summary['cells']} cell(s): {counts}")
    console.print(_cells_table(report))
    console.print(_variants_table(report))
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
    if report["interrupted"]:
        console.print("[yellow]interrupted: the report holds what was measured so far[/]")
