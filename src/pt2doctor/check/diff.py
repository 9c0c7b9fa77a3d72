"""What changed between two check reports (``pt2doctor diff A B`` on two check runs): a pure
function of two report dicts (report.json of ``pt2doctor check``; see docs/report-schema.md).

Cells are matched by id, groups by compile variant and group name, cold starts by variant, case
and cache state. Steady state carries its own noise measurement: a speedup change is real when
the two 95% bootstrap intervals do not overlap; otherwise it is listed as within noise and never
counts as a regression. A cold start is one measurement, so it changes only beyond the same
floors as compile times in analysis/diff/reports.py (25 % and 1 s).
"""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.diff.change import Change, Noise, time_change
from pt2doctor.analysis.diff.reports import Diff, environment_changes
from pt2doctor.check.types import ALIGNED, verdict_rank

Report = dict[str, Any]


def _cell_changes(a: Report, b: Report) -> list[Change]:
    before = {cell["id"]: cell["verdict"] for cell in a["cells"]}
    after = {cell["id"]: cell["verdict"] for cell in b["cells"]}
    changes = []
    for cell, verdict in after.items():
        old = before.get(cell)
        if cell not in before:
            changes.append(Change("new_cell", cell, None, verdict, verdict not in ALIGNED))
        elif old != verdict:
            changes.append(
                Change(
                    "cell_verdict", cell, old, verdict, verdict_rank(verdict) > verdict_rank(old)
                )
            )
    changes += [
        Change("removed_cell", c, v, None, False) for c, v in before.items() if c not in after
    ]
    return changes


def _entries(report: Report) -> dict[str, dict[str, Any]]:
    return {f"{cell['id']} {name}": entry for cell in report["cells"]
            for name, entry in (cell.get("variants") or {}).items()}  # fmt: skip


def _numerics_changes(a: Report, b: Report) -> list[Change]:
    """Where the numbers diverge, per cell and variant: the module (a failing inference
    cell's ``where.culprit``) and the step a training cell's loss leaves eager's band."""
    before, changes = _entries(a), []
    for key, entry in _entries(b).items():
        old = before.get(key)
        if old is None:
            continue
        culprits = [((e.get("where") or {}).get("culprit")) for e in (old, entry)]
        if culprits[0] != culprits[1]:
            was, now = (None if c is None else c or "<model>" for c in culprits)
            changes.append(Change("diverging_module", key, was, now, now is not None,
                                  "compiled numbers now leave eager's there" if now
                                  else "no module diverges any more"))  # fmt: skip
        steps = [(e.get("loss_curve") or {}).get("left_at") for e in (old, entry)]
        if steps[0] != steps[1]:
            was, now = (None if s is None else s + 1 for s in steps)
            worse = now is not None and (was is None or now < was)
            changes.append(Change("loss_leaves_band", key, was, now, worse))
    return changes


def _clause_changes(a: Report, b: Report) -> list[Change]:
    before = {c["name"]: c for c in a["contract"]["clauses"]}
    changes = []
    for clause in b["contract"]["clauses"]:
        old = before.get(clause["name"], {"ok": None, "measured": None})
        if old["ok"] == clause["ok"]:
            continue
        label = {True: "ok", False: "FAIL", None: "n/a"}
        detail = f"{label[old['ok']]} → {label[clause['ok']]} (budget {clause['budget']})"
        regression = clause["ok"] is False
        changes.append(Change("contract_clause", clause["name"], old["measured"],
                              clause["measured"], regression, detail))  # fmt: skip
    return changes


def _groups(report: Report) -> dict[str, dict[str, Any]]:
    return {
        f"{variant['name']} {group['group']}": group
        for variant in report["variants"]
        for group in variant["groups"]
    }


def _group_changes(a: Report, b: Report) -> list[Change]:
    before, changes = _groups(a), []
    for key, group in _groups(b).items():
        old = before.get(key)
        if old is None:
            continue
        variants = (old["max_variants_per_frame"], group["max_variants_per_frame"])
        if variants[0] != variants[1]:
            changes.append(Change("max_variants", key, *variants, variants[1] > variants[0]))
        late = (len(old.get("late_compiles", [])), len(group.get("late_compiles", [])))
        if late[0] != late[1]:
            changes.append(Change("late_compiles", key, *late, late[1] > late[0]))
        changes += _speedup_change(key, old.get("steady") or {}, group.get("steady") or {})
    return changes


def _interval(steady: dict[str, Any]) -> tuple[float, float] | None:
    low, high = steady.get("speedup_ci95") or (None, None)
    return None if low is None or high is None else (low, high)


def _speedup_change(key: str, old: dict[str, Any], new: dict[str, Any]) -> list[Change]:
    """A speedup change, judged by the two 95% intervals (non-overlapping: beyond noise)."""
    before, after = old.get("speedup"), new.get("speedup")
    if before is None or after is None or before == after:
        return []
    p50 = [(s.get("compiled") or {}).get("p50_s") for s in (old, new)]
    latency = ""
    if p50[0] is not None and p50[1] is not None:
        latency = f"; compiled p50 {p50[0] * 1e3:.3g} → {p50[1] * 1e3:.3g} ms"
    interval_a, interval_b = _interval(old), _interval(new)
    if interval_a is None or interval_b is None:
        return [Change("speedup", key, before, after, False, "no interval to judge" + latency)]
    (low_a, high_a), (low_b, high_b) = interval_a, interval_b
    shown = f"95% intervals [{low_a}-{high_a}] vs [{low_b}-{high_b}]{latency}"
    if high_b < low_a:
        return [Change("speedup", key, before, after, True, f"slower beyond noise: {shown}")]
    if low_b > high_a:
        return [Change("speedup", key, before, after, False, f"faster beyond noise: {shown}")]
    return [Change("speedup", key, before, after, False, f"within noise: {shown}")]


def _colds(report: Report) -> dict[str, Any]:
    return {
        f"{v['name']} {v['case']} {state.replace('_', ' ')}": cold.get("first_result_s")
        for v in report["variants"]
        for state, cold in v["cold_start"].items()
    }


def _cold_changes(a: Report, b: Report, noise: Noise) -> list[Change]:
    before, after = _colds(a), _colds(b)
    changes = []
    for key in sorted(before.keys() & after.keys()):
        changes += time_change("cold_start_s", key, before[key], after[key], noise.compile_s,
                                noise)  # fmt: skip
    return changes


def diff_check_reports(a: Report, b: Report, noise: Noise | None = None,
                       names: tuple[str, str] = ("A", "B")) -> Diff:  # fmt: skip
    """Every difference from check report ``a`` to ``b`` that matters, regressions marked."""
    diff = Diff(*names)
    diff.changes += _clause_changes(a, b)
    diff.changes += _cell_changes(a, b)
    diff.changes += _numerics_changes(a, b)
    diff.changes += _group_changes(a, b)
    diff.changes += _cold_changes(a, b, noise or Noise())
    diff.changes += environment_changes(a, b)
    return diff
