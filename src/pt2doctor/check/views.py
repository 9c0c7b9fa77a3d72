"""The HTML view-model of a check report (``report["kind"] == "check"``): plain data built
section by section, like report/views.py does for run reports.

Each builder takes the report dict and the raw latencies (check/samples.py; empty when
the samples files are gone) and returns a :class:`~pt2doctor.report.views.Section` or ``None``.
They are registered in :data:`CHECK_SECTIONS`, in page order. Charts are specs (numbers and
labels) that report/charts.py draws at render time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from pt2doctor.check.cost import cost_line
from pt2doctor.check.perf_views import cold_start, late_compiles, steady_state, warmup
from pt2doctor.check.samples import Latencies
from pt2doctor.check.types import Alignment, CheckReport, verdict_rank
from pt2doctor.report.format import cut
from pt2doctor.report.sections import Section, environment_rows

Report = CheckReport
CheckSectionBuilder = Callable[[Report, Latencies], "Section | None"]
MAX_NOTES = 4


def check_headline(report: Report, latencies: Latencies) -> Section:
    """Cells and their verdicts, the contract's verdict, and each clause measured vs budget."""
    summary, contract = report["summary"], report["contract"]
    counts = [{"label": "cells", "value": summary["cells"]}]
    counts += [{"label": verdict, "value": n} for verdict, n in summary["verdicts"].items()]
    clauses = [
        {
            "name": clause["name"],
            "measured": cut(shown_value(clause["measured"])),
            "budget": cut(shown_value(clause["budget"])),
            "ok": clause["ok"],
            "detail": cut(str(clause["detail"] or "")),
        }
        for clause in contract["clauses"]
    ]
    failed = sum(clause["ok"] is False for clause in contract["clauses"])
    data = {
        "ok": contract["ok"],
        "failed": failed,
        "budget": contract["budget"],
        "counts": counts,
        "clauses": clauses,
        "interrupted": report["interrupted"],
        "redacted": bool(report.get("redacted")),
        "cost": cost_line(cost) if (cost := report.get("cost")) else None,
    }
    return Section("summary", "Summary and contract", "check_headline", data)


def shown_value(value: Any) -> str:
    """A measured or budgeted value as shown (floats to 4 significant digits)."""
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _number(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}"


def worst_tensor(entry: Alignment) -> dict[str, Any] | None:
    """The tensor with the largest absolute error, among the failing ones if any fail."""
    tensors = entry.get("tensors") or []
    failing = [t for t in tensors if not t["passed"]] or tensors
    if not failing:
        return None
    worst = max(failing, key=lambda t: t["max_abs_error"] or 0.0)
    return {
        "name": cut(worst["name"], 120),
        "max_abs_error": _number(worst["max_abs_error"]),
        "max_rel_error": _number(worst["max_rel_error"]),
        "rmse_ratio": _number(worst["rmse_ratio"]),
        "rule": worst["rule"],
        "passed": worst["passed"],
    }


MAX_NOTE = 2000
"""A note is a cause and its fix (a custom op's, with the caches to clear): kept whole."""


def _notes(entry: Alignment) -> list[str]:
    notes = []
    strides = entry.get("stride_mismatches") or []
    if strides:
        notes.append("stride differs from eager: " + ", ".join(strides[:MAX_NOTES]))
    if (entry.get("where") or {}).get("culprit") is not None:
        from pt2doctor.check.where import where_note

        notes.append(where_note(entry["where"]))
    nondeterministic = entry.get("eager_nondeterministic") or []
    if nondeterministic:
        names = ", ".join(map(str, nondeterministic[:MAX_NOTES]))
        notes.append(f"eager differs from itself (nondeterministic): {names}")
    if entry.get("warmup_error"):
        notes.append(f"warmup failed: {entry['warmup_error']}")
    return [cut(note, MAX_NOTE) for note in notes]


def accuracy(report: Report, latencies: Latencies) -> Section | None:
    """Per cell and compile variant: the verdict, the worst tensor's errors and its rule,
    stride and eager-nondeterminism notes; the error when the cell did not run through."""
    rows: list[dict[str, Any]] = []
    for cell in report["cells"]:
        entries = cell["variants"] or {"-": {}}
        for name, entry in entries.items():
            rows.append(
                {
                    "cell": cut(cell["id"]),
                    "cell_verdict": cell["verdict"],
                    "variant": name,
                    "verdict": entry.get("verdict", "not run"),
                    "worst": worst_tensor(entry),
                    "tolerance": entry.get("tolerance"),
                    "error": cut(entry.get("error")),
                    "notes": _notes(entry)
                    + [cut(note, MAX_NOTE) for note in cell.get("notes", [])],
                }
            )
    if not rows:
        return None
    rows.sort(key=lambda row: -verdict_rank(row["verdict"]))
    charts = [
        {"kind": "loss", "title": cut(f"loss per step: {cell['id']} ({name})", 90),
         **{key: curve[key] for key in ("eager", "compiled", "fp64", "band", "left_at")}}
        for cell in report["cells"]
        for name, entry in (cell["variants"] or {}).items()
        if (curve := entry.get("loss_curve")) and len(curve.get("eager") or []) > 1
    ]  # fmt: skip
    return Section("accuracy", "Accuracy per cell (eager vs compiled)", "check_accuracy",
                   {"rows": rows}, charts)  # fmt: skip


def variants(report: Report, latencies: Latencies) -> Section | None:
    """Every compile variant per case: what it is, whether it ran (and why not), and for the
    regional variant whether the repeated blocks shared one compiled artifact."""
    rows = []
    for variant in report["variants"]:
        regional = [
            {"group": cut(group["group"]), **group["regional"]}
            for group in variant["groups"]
            if group.get("regional")
        ]
        rows.append(
            {
                "name": variant["name"],
                "case": cut(variant["case"]),
                "backend": variant["backend"],
                "mode": variant["mode"],
                "regional": variant["regional"],
                "applicable": variant["applicable"],
                "reason": variant.get("reason"),
                "groups": len(variant["groups"]),
                "sharing": regional,
            }
        )
    if not rows:
        return None
    return Section("variants", "Compile variants", "check_variants", {"rows": rows})


def environment(report: Report, latencies: Latencies) -> Section:
    """torch, Python, CUDA, Triton, GPU, config changes; what differs from --expect-env."""
    rows, config = environment_rows(
        report["environment"], lambda entry: cut(str(entry)), lambda entry: cut(repr(entry))
    )
    data = {
        "rows": rows,
        "config": config,
        "changes": [cut(change) for change in report["environment_changes"]],
        "tool": report["tool"],
    }
    return Section("environment", "Environment", "check_environment", data)


CHECK_SECTIONS: list[CheckSectionBuilder] = [
    check_headline,
    accuracy,
    variants,
    cold_start,
    warmup,
    steady_state,
    late_compiles,
    environment,
]


def build_check_view(report: Report, latencies: Latencies | None = None) -> dict[str, Any]:
    """The check page's view-model; ``latencies``: raw per-iteration totals by samples path
    (check/samples.py ``load_latencies``), charted instead of the percentiles."""
    sections = [build(report, latencies or {}) for build in CHECK_SECTIONS]
    return {
        "title": "pt2doctor check report",
        "schema_version": report["schema_version"],
        "links": {},
        "sections": [asdict(section) for section in sections if section is not None],
    }
