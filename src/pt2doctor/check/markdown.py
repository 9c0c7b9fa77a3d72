"""report.md of a check run: GitHub-flavoured Markdown for CI job summaries and PR comments.
The verdict line, the contract's clauses, the cells that failed, the variants side by side.
Every user-derived string goes through md_text / md_code (report/markdown.py)."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.text import counted
from pt2doctor.check.cost import cost_line
from pt2doctor.check.types import ALIGNED, CheckReport, Distribution, Steady, VariantRow
from pt2doctor.check.views import shown_value, worst_tensor
from pt2doctor.check.where import notes_by_text
from pt2doctor.report.format import frame_name, md_code, md_table, md_text, ms_text, seconds_text

Report = CheckReport
MAX_ROWS = 30
_MARK = {True: "✅ ok", False: "❌ FAIL", None: "➖ n/a"}


def _value(value: Any) -> str:
    return md_text(shown_value(value))


def _headline(report: Report) -> list[str]:
    summary, contract = report["summary"], report["contract"]
    failed = sum(clause["ok"] is False for clause in contract["clauses"])
    verdict = (
        "✅ **contract met**"
        if contract["ok"]
        else f"❌ **contract failed** ({counted(failed, 'clause')})"
    )
    counts = ", ".join(f"{n} {md_text(v)}" for v, n in summary["verdicts"].items())
    source = md_code(contract["budget"]) if contract["budget"] else "defaults (no budget file)"
    lines = [
        "## pt2doctor check",
        "",
        f"{verdict}: {counted(summary['cells'], 'cell')}: {counts or 'none'}",
    ]
    lines += ["", f"Budget: {source}", ""]
    if report["interrupted"]:
        lines += ["_Interrupted: the report holds what was measured so far._", ""]
    if report.get("redacted"):
        lines += ["_Redacted: source lines removed, paths made relative._", ""]
    return lines


def _clauses(report: Report) -> list[str]:
    rows = [
        [_MARK[c["ok"]], md_code(c["name"]), _value(c["measured"]), _value(c["budget"]),
         md_text(c["detail"] or "")]
        for c in report["contract"]["clauses"]
    ]  # fmt: skip
    return ["### Contract", "", *md_table(["", "clause", "measured", "budget", "detail"], rows)]


def _failing_cells(report: Report) -> list[str]:
    rows = []
    for cell in report["cells"]:
        for name, entry in cell["variants"].items():
            verdict = entry.get("verdict", "not run")
            if verdict in ALIGNED:
                continue
            worst = worst_tensor(entry)
            what = (
                f"{md_code(worst['name'])}: abs {worst['max_abs_error']}, rel "
                f"{worst['max_rel_error']}, rmse ratio {worst['rmse_ratio']} ({md_text(worst['rule'])})"
                if worst
                else md_code(entry.get("error") or entry.get("warmup_error") or "")
            )
            rows.append([md_code(cell["id"]), md_text(name), f"**{md_text(verdict)}**", what])
    if not rows:
        return []
    shown = md_table(["cell", "variant", "verdict", "worst tensor / error"], rows[:MAX_ROWS])
    more = (
        [f"... and {len(rows) - MAX_ROWS} more in report.json", ""] if len(rows) > MAX_ROWS else []
    )
    failing = [cell for cell in report["cells"] if cell["verdict"] not in ALIGNED]
    notes = [
        f"- {', '.join(md_code(cell_id) for cell_id in ids)}: {md_text(note)}"
        for ids, note in notes_by_text(failing)
    ]
    return ["### Failing cells", "", *shown, *more, *notes, *([""] if notes else [])]


def _p50_p99_ms(dist: Distribution | None) -> str:
    dist = dist or {}
    if dist.get("p50_s") is None:
        return "-"
    return f"{ms_text(dist['p50_s'])} / {ms_text(dist.get('p99_s'))}"


def _speedup(steady: Steady) -> str:
    if steady.get("speedup") is None:
        return "-"
    low, high = steady.get("speedup_ci95") or (None, None)
    interval = "" if low is None or high is None else f" [{low:.2f}–{high:.2f}]"
    return f"{steady['speedup']:.2f}x{interval}"


def _variant_rows(variant: VariantRow) -> list[list[str]]:
    if not variant["applicable"]:
        return [[md_code(variant["name"]), md_code(variant["case"]), md_text(variant["reason"] or "n/a"),
                 *["-"] * 6]]  # fmt: skip
    cold = variant["cold_start"]
    cold_text = " / ".join(
        seconds_text(cold.get(state, {}).get("first_result_s"))
        for state in ("empty_cache", "warm_cache")
    )
    rows = []
    for group in variant["groups"]:
        steady = group.get("steady") or {}
        rows.append([
            md_code(variant["name"]),
            md_code(group["group"]),
            cold_text,
            seconds_text(group["warmup"].get("seconds")),
            str(group["max_variants_per_frame"]),
            _p50_p99_ms(steady.get("eager")),
            _p50_p99_ms(steady.get("compiled")),
            md_code(group["error"]) if group.get("error") else _speedup(steady),
            str(len(group.get("late_compiles", []))),
        ])  # fmt: skip
    return rows


def _profiles(report: Report) -> list[str]:
    """Why each profiled group's speedup is what it is (``check --profile``)."""
    lines = []
    for variant in report["variants"]:
        for group in variant["groups"]:
            profile = group.get("profile")
            if not profile:
                continue
            if not profile.get("available"):
                lines.append(f"- {md_code(variant['name'])} {md_code(group['group'])}: no "
                             f"profile ({md_text(profile.get('error'))})")  # fmt: skip
                continue
            eager, compiled = profile["eager"], profile["compiled"]
            lines.append(
                f"- {md_code(variant['name'])} {md_code(group['group'])}: "
                f"{md_text(profile['statement'])}. Per call, eager / compiled ms: library "
                f"{eager['library_ms']:.3f} / {compiled['library_ms']:.3f}, other ops "
                f"{eager['ops_ms']:.3f} / {compiled['ops_ms']:.3f} (compiled: generated and "
                f"fallback kernels), overhead {eager['overhead_ms']:.3f} / "
                f"{compiled['overhead_ms']:.3f}"
            )
    return ["### Why the speedup is what it is (profiled)", "", *lines, ""] if lines else []


def _variants(report: Report) -> list[str]:
    rows = [row for variant in report["variants"] for row in _variant_rows(variant)]
    if not rows:
        return []
    header = ["variant", "group", "cold start empty / warm cache", "warmup", "max variants",
              "eager p50 / p99 ms", "compiled p50 / p99 ms", "speedup [95% CI]", "late compiles"]  # fmt: skip
    return ["### Compile variants", "", *md_table(header, rows[:MAX_ROWS])]


def _late(report: Report) -> list[str]:
    lines = []
    for variant in report["variants"]:
        for group in variant["groups"]:
            for late in group.get("late_compiles", []):
                where = f"{variant['name']} {group['group']}"
                guards = "; ".join(f"{g['category']}: {g['text']}" for g in late["failed_guards"])
                lines.append(f"- {md_code(where)}: {md_code(frame_name(late))} recompiled after "
                             f"warmup, failed guards: {md_code(guards or 'none')}")  # fmt: skip
    return ["### Recompiles after warmup", "", *lines, ""] if lines else []


def _environment(report: Report) -> list[str]:
    env = report["environment"]
    keys = ("torch_version", "python_version", "cuda_version", "triton_version", "gpu")
    parts = [f"{key} {md_code(env[key])}" for key in keys if env.get(key) is not None]
    lines = [
        f"- ⚠️ environment changed: {md_code(change)}" for change in report["environment_changes"]
    ]
    lines = [*lines, ""] if lines else []
    return [*lines, "<sub>" + " · ".join(parts) + "</sub>", ""] if parts else lines


def render_check_markdown(report: Report) -> str:
    """The whole Markdown document of a check report."""
    lines = [*_headline(report), *_clauses(report), *_failing_cells(report), *_variants(report)]
    lines += _profiles(report)
    lines += [*_late(report), *_environment(report)]
    if cost := report.get("cost"):
        lines += [
            *([""] if lines and lines[-1] else []),
            f"<sub>{md_text(cost_line(cost))}</sub>",
        ]
    return "\n".join(lines).rstrip() + "\n"
