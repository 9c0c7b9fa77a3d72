"""The check report (``report.json`` of a check run) built from ``results.jsonl``: cells with
their alignment per compile variant, the variants with cold start, warmup and steady state per
group, the contract's clauses, and findings. Documented in docs/report-schema.md."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from pt2doctor import __version__
from pt2doctor.analysis.diff.reports import ENV_KEYS
from pt2doctor.analysis.userside.causes import FIXES, custom_op_verdict
from pt2doctor.check.contract import Budget, evaluate
from pt2doctor.check.cost import check_cost
from pt2doctor.check.types import (
    ALIGNED,
    CellRow,
    CheckReport,
    CheckSummary,
    Clause,
    VariantRow,
    verdict_rank,
)
from pt2doctor.report.document import SCHEMA_VERSION


def _by(records: Iterable[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r.get("record") == kind]


def _strip(record: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("record", *keys)}


def _cells(records: list[dict[str, Any]], plan: dict[str, Any]) -> list[CellRow]:
    rows: list[CellRow] = []
    for cell in plan.get("cells", []):
        variants: dict[str, dict[str, Any]] = {}
        for record in _by(records, "alignment"):
            if record["cell"] == cell["id"]:
                variants.setdefault(record["variant"], {}).update(
                    _strip(record, "cell", "variant", "case", "group", "traceback")
                )
        for record in _by(records, "warmup"):
            if record["cell"] == cell["id"] and ("error" in record or "verdict" in record):
                entry = variants.setdefault(record["variant"], {})
                entry["warmup_error"] = record.get("error")
                if record.get("verdict"):  # the cell crashed or hung in compiled warmup
                    entry["verdict"] = record["verdict"]
                elif entry.get("verdict") in (None, *ALIGNED):
                    entry["verdict"] = "error"
        verdicts = [v.get("verdict", "not run") for v in variants.values()]
        worst = max(verdicts, key=verdict_rank, default="not run")
        # The plan's cell (id, case, group, axes) as the worker wrote it, judged.
        row = {**cell, "verdict": worst, "variants": variants}
        row["notes"] = cell_notes(row, _by(records, "custom_ops"))
        rows.append(cast(CellRow, row))
    return rows


def cell_notes(cell: dict[str, Any], custom_ops: list[dict[str, Any]]) -> list[str]:
    """What is the user's side about a cell: a failing cell whose model calls a custom op that
    fails opcheck (the op, the test, the fix); a divergence that is low-precision rounding
    by design; random ops compared under fallback_random."""
    notes = []
    failing = cell["verdict"] not in ("pass", "nondeterministic", "not run")
    ops = [op for r in custom_ops if r.get("case") == cell.get("case") for op in r["ops"]]
    verdict = custom_op_verdict(ops) if failing else None
    if verdict is not None:
        notes.append(f"user side ({verdict['kind']}): {verdict['detail']}. {verdict['fix']}")
    for name, entry in cell["variants"].items():
        if entry.get("precision_casts") == "pass":
            notes.append(
                f"by design (precision): {name} matches eager with "
                f"emulate_precision_casts=True; {FIXES['precision']}"
            )
    train = (cell.get("axes") or {}).get("train")
    flags = {entry.get("module_training") for entry in cell["variants"].values()} - {None}
    if isinstance(train, bool) and flags and flags != {train}:
        built, wanted = ("training", "an eval") if not train else ("eval", "a training")
        notes.append(
            f"the model was built in {built} mode for {wanted} cell (dropout and batch norm "
            f"act as in {built}): in the case's build, call model.train(cell.train)"
        )
    mutated = sorted(
        {n for entry in cell["variants"].values() for n in entry.get("mutated_inputs") or []}
    )
    if mutated:
        notes.append(
            f"the model mutates {', '.join(mutated)} in place (compared after the call too; "
            "each call of your program sees the changed input: clone it if not intended)"
        )
    for name, entry in cell["variants"].items():
        curve = entry.get("loss_curve") or {}
        step = curve.get("left_at")
        if step is not None:
            eager, compiled = curve["eager"][step], curve["compiled"][step]
            notes.append(
                f"{name}: the compiled loss leaves eager's band at step {step + 1} of "
                f"{curve['steps']} ({compiled:.6g} against {eager:.6g} ± {curve['band'][step]:.2g})"
            )
    for name, entry in cell["variants"].items():
        for tensor in entry.get("tensors") or []:
            if tensor.get("nonfinite"):
                notes.append(nonfinite_note(name, tensor))
    if any(entry.get("random_ops") for entry in cell["variants"].values()):
        notes.append(
            "random ops (dropout...): compared under fallback_random=True; without it compiled "
            "code draws different numbers than eager by design"
        )
    return notes


def _custom_ops(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each custom op the models call, once: failing when any variant's check failed."""
    ops: dict[str, dict[str, Any]] = {}
    for record in _by(records, "custom_ops"):
        for op in record["ops"]:
            entry = ops.setdefault(op["op"], {"op": op["op"], "passed": True, "failing": []})
            failing = [c["name"] for c in op["checks"] if c["passed"] is False]
            entry["passed"] = entry["passed"] and not failing
            entry["failing"] = sorted(set(entry["failing"]) | set(failing))
    return list(ops.values())


def group_profile(record: dict[str, Any], steady: dict[str, Any]) -> dict[str, Any]:
    """``groups[].profile``: the eager and compiled profiles split side by side and the bound
    on the speedup they imply (read again from their traces: ``report CHECK_DIR`` redoes it)."""
    from pt2doctor.analysis.time.profile import profile_view
    from pt2doctor.analysis.time.speedup import compiled_split, eager_split, speedup_bound
    from pt2doctor.trace.chrome import read_chrome_trace

    if record.get("error"):
        return {"available": False, "error": record["error"], "cell": record.get("cell")}
    calls = int(record["calls"])
    try:
        eager = eager_split(read_chrome_trace(Path(record["eager"])), calls)
        view = profile_view(read_chrome_trace(Path(record["compiled"])), calls, None, {}, {},
                            kernel_events=False)  # fmt: skip
    except (OSError, ValueError) as error:
        return {"available": False, "error": f"cannot read the profile: {error}"}
    bound = speedup_bound(eager, compiled_split(view), steady.get("speedup"))

    def split(part: Any) -> dict[str, float]:
        return {
            "total_ms": round(part.total_ms, 6),
            "library_ms": round(part.library_ms, 6),
            "ops_ms": round(part.ops_ms, 6),
            "overhead_ms": round(part.overhead_ms, 6),
        }

    return {
        "available": True,
        "cell": record.get("cell"),
        "calls": calls,
        "eager": split(bound.eager),
        "compiled": split(bound.compiled),
        "speedup": round(bound.speedup, 4),
        "bound": None if bound.bound is None else round(bound.bound, 4),
        "statement": bound.statement,
        "traces": {"eager": record["eager"], "compiled": record["compiled"]},
        "notes": view.notes,
    }


def _groups(records: list[dict[str, Any]], case: str, variant: str) -> list[dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for record in records:
        if record.get("case") != case or record.get("variant") != variant:
            continue
        kind, key = record.get("record"), record.get("group")
        if key is None or kind not in (
            "group",
            "warmup",
            "warmup_total",
            "done",
            "profile",
            "tried",
        ):
            continue
        entry = groups.setdefault(key, {"group": key, "warmup": {"per_cell": {}}})
        if kind == "group":
            entry.update(_strip(record, "case", "variant"))
        elif kind == "warmup" and "seconds" in record:
            entry["warmup"]["per_cell"][record["cell"]] = round(record["seconds"], 6)
        elif kind == "warmup_total":
            entry["warmup"]["seconds"] = round(record["seconds"], 6)
        elif kind == "done":
            entry["memory"] = record.get("memory")
        elif kind == "profile":
            entry["profile"] = _strip(record, "case", "variant", "group")
        elif kind == "tried":  # its top fix, re-run (the budget's top_fix_tried)
            entry["tried"] = _strip(record, "case", "variant", "group")
    for entry in groups.values():
        if "profile" in entry:
            entry["profile"] = group_profile(entry["profile"], entry.get("steady") or {})
        frames = entry.get("frames", [])
        entry["max_variants_per_frame"] = max((f["variants"] for f in frames), default=0)
    return list(groups.values())


def _variants(records: list[dict[str, Any]]) -> list[VariantRow]:
    rows: list[VariantRow] = []
    for record in _by(records, "variant"):
        case, name = record["case"], record["name"]
        cold = {
            r["cache_state"]: _strip(r, "case", "variant", "cache_state")
            for r in _by(records, "cold")
            if r["case"] == case and r["variant"] == name
        }
        groups = _groups(records, case, name)
        rows.append(cast(VariantRow, {**_strip(record), "cold_start": cold, "groups": groups}))
    return rows


def _worst(items: Iterable[tuple[float | None, str]], highest: bool = True) -> tuple[Any, str]:
    present = [(value, where) for value, where in items if value is not None]
    if not present:
        return None, ""
    return max(present) if highest else min(present)


def _lowest_bound(groups: list[tuple[Any, Any]]) -> tuple[Any, str, Any, Any]:
    """(the lowest lower bound of a group's speedup interval, where, that group's speedup and
    upper bound); Nones when no group measured an interval."""
    bounds = []
    for variant, group in groups:
        steady = group.get("steady") or {}
        interval = steady.get("speedup_ci95") or [None, None]
        if interval[0] is not None:
            where = f"{variant['name']} {group['group']}"
            bounds.append((interval[0], where, steady.get("speedup"), interval[1]))
    return min(bounds, key=lambda bound: bound[0]) if bounds else (None, "", None, None)


def measures(
    cells: list[CellRow],
    variants: list[VariantRow],
    custom_ops: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The worst measured value of each budgeted quantity, with where it was measured."""
    groups = [(v, g) for v in variants for g in v["groups"]]
    colds = [(v, which, c) for v in variants for which, c in v["cold_start"].items()]

    def memory(m: dict[str, Any] | None) -> float | None:
        m = m or {}
        return m.get("cuda_reserved_mb") or m.get("peak_rss_mb")

    breaks: dict[tuple[Any, Any], dict[str, Any]] = {}
    for _, group in groups:
        for site in group.get("graph_breaks", []):
            breaks.setdefault((site["site"]["file"], site["site"]["line"]), site["site"])
    return {
        "cold_start_s": _worst(
            (c.get("first_result_s"), v["name"]) for v, w, c in colds if w == "empty_cache"
        ),
        "cold_start_warm_cache_s": _worst(
            (c.get("first_result_s"), v["name"]) for v, w, c in colds if w == "warm_cache"
        ),
        "peak_memory_mb": _worst(
            [(memory(g.get("memory")), f"{v['name']} {g['group']}") for v, g in groups]
            + [(memory(c.get("memory")), f"{v['name']} cold") for v, _, c in colds]
        ),
        "max_variants_per_frame": _worst(
            (g["max_variants_per_frame"], f"{v['name']} {g['group']}") for v, g in groups
        ),
        "recompiles_after_warmup": (
            sum(len(g.get("late_compiles", [])) for _, g in groups),
            ", ".join(f"{v['name']} {g['group']}" for v, g in groups if g.get("late_compiles")),
        ),
        "min_speedup": _worst(
            (
                ((g.get("steady") or {}).get("speedup"), f"{v['name']} {g['group']}")
                for v, g in groups
            ),
            highest=False,
        ),
        "min_speedup_low": _lowest_bound(groups),
        "graph_breaks": list(breaks.values()),
        "top_fixes": [
            {
                "where": f"{v['name']} {g['group']}",
                "fix": top["trial"]["label"],
                "tried": g.get("tried"),
            }
            for v, g in groups
            if (top := g.get("top_fix"))
        ],
        "misaligned_cells": [c["id"] for c in cells if c["verdict"] not in ALIGNED],
        "custom_ops": custom_ops or [],
    }


def env_changes(current: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    return [
        f"{key}: expected {expected.get(key)!r}, found {current.get(key)!r}"
        for key in ENV_KEYS
        if key in expected and expected.get(key) != current.get(key)
    ]


def build_check_report(
    records: list[dict[str, Any]],
    budget: Budget,
    expected_env: dict[str, Any] | None = None,
    interrupted: bool = False,
) -> CheckReport:
    plan = next(iter(_by(records, "plan")), {})
    environment: dict[str, Any] = next((r["environment"] for r in _by(records, "environment")), {})
    cells = _cells(records, plan)
    variants = _variants(records)
    measured = measures(cells, variants, _custom_ops(records))
    clauses = [cast(Clause, clause.as_dict()) for clause in evaluate(budget, measured)]
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "check",
        "tool": {"name": "pt2doctor", "version": __version__},
        "environment": environment,
        "environment_changes": env_changes(environment, expected_env or {}),
        "interrupted": interrupted,
        "summary": _summary(cells),
        "cells": cells,
        "variants": variants,
        "contract": {
            "ok": all(c["ok"] is not False for c in clauses),
            "budget": budget.source,
            "clauses": clauses,
        },
        "cost": check_cost(records),
    }


def _summary(cells: list[CellRow]) -> CheckSummary:
    counts: dict[str, int] = {}
    for cell in cells:
        counts[cell["verdict"]] = counts.get(cell["verdict"], 0) + 1
    return {"cells": len(cells), "verdicts": dict(sorted(counts.items()))}


def nonfinite_note(variant: str, tensor: Mapping[str, Any]) -> str:
    """A tensor eager computed as inf or NaN in places: compiled is compared with it only where
    both are finite (the same inf in both is no difference), which a pass alone would hide."""
    count = int(tensor["nonfinite"])
    total = math.prod(tensor.get("shape") or [1])
    where = {
        True: f" where the fp64 reference is finite: {tensor.get('dtype')} overflows there "
        "(scale the values that overflow, or compute that part in a wider dtype)",
        False: " as the fp64 reference does",
        None: "",
    }[tensor.get("nonfinite_fp64_finite")]
    return (
        f"{variant}: eager's {tensor['name']} is inf or NaN in {count} of {total} elements"
        f"{where}; compiled {'matches' if tensor.get('passed') else 'is compared with'} eager "
        "there, and the errors are over the finite elements"
    )
