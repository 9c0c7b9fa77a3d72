"""The HTML view-model of an ablate report (``report["kind"] == "ablate"``): plain data built
section by section, like report/views.py does for run reports.

Each builder takes the report dict (ablate/report.py) and returns a
:class:`~pt2doctor.report.views.Section` or ``None`` (nothing to show). They are registered in
:data:`ABLATE_SECTIONS`, in page order. Every string stays plain text here; the templates escape
it (error messages and module names come from the user's program).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any, cast

from pt2doctor.ablate.render import (
    NUMERICS_COLUMNS,
    minifier_line,
    numerics_cells,
    numerics_lines,
    numerics_rows,
    repro_holds,
)
from pt2doctor.ablate.types import FAILURE_STATUSES, AblateReport, Repro, Rung, Target
from pt2doctor.analysis.paths import shorten_paths
from pt2doctor.report.format import cut
from pt2doctor.report.sections import Section, environment_rows

Report = AblateReport
AblateSectionBuilder = Callable[[Report], "Section | None"]
# What each category means for the user (the advice itself is in report["workarounds"]).
CATEGORY_MEANING = {
    "incompleteness": "Dynamo cannot trace something here (Unsupported): a gap in what it "
    "supports, not a wrong compile.",
    "user_side": "The user's own code causes it: a custom op's registration, a compiler pass "
    "or backend the program installs, a guard on data-dependent values, or random or "
    "low-precision numbers that differ by design. Not a compiler bug.",
    "compiler_bug": "A crash or a wrong result inside the compiler: worth a bug report with "
    "the repro.",
}


def _shown(value: Any) -> str:
    return "-" if value in (None, "") else cut(str(value))


def _target(target: Target) -> str:
    if target.get("mode") == "script":
        return " ".join(target.get("command") or [])
    return f"{target.get('case_file')} --cell {target.get('cell')}"


def ablate_conclusion(report: Report) -> Section:
    """The conclusion in one sentence, with the layer, module and subsystem it names."""
    verdict, settings = report["conclusion"], report["settings"]
    found = [
        {"label": "failure", "value": _shown(verdict.get("failure") or "none")},
        {"label": "layer", "value": _shown(verdict.get("layer"))},
        {"label": "module", "value": _shown((report.get("module") or {}).get("module"))},
        {"label": "subsystem", "value": _shown((report.get("bisect") or {}).get("subsystem"))},
        {"label": "category", "value": _shown(verdict.get("category"))},
    ]
    if user_side := verdict.get("user_side"):
        found.append({"label": "user side", "value": _shown(user_side["kind"])})
    backend = settings.get("backend")
    compiled = [f"backend={backend}" if backend else "the program's own backend"]
    compiled += [f"{key}={settings[key]}" for key in ("dynamic", "mode") if settings.get(key)]
    data = {
        "sentence": cut(verdict["sentence"]),
        "failed": verdict.get("failure") is not None,
        "found": found,
        "target": cut(_target(report["target"])),
        "settings": ", ".join(compiled),
        "out": report["out"],
        "redacted": bool(report.get("redacted")),
    }
    return Section("conclusion", "Conclusion", "ablate_conclusion", data)


def _error(text: str | None) -> str:
    """An error as the page shows it: an installed package's file relative to site-packages
    (``transformers/models/gpt2/modeling_gpt2.py:621``), then cut to the cell's length."""
    return cut(shorten_paths(text or ""))


def _rung(row: Rung) -> dict[str, Any]:
    seconds = row.get("seconds")
    return {
        "backend": row["backend"],
        "layer": row.get("layer") or "-",
        "status": row["status"],
        "failed": row["status"] in FAILURE_STATUSES,
        "root_type": row.get("root_type"),
        "numbers": _error(row.get("numbers")),
        "error": _error(row.get("error")),
        "seconds": None if seconds is None else round(seconds, 1),
    }


def ablate_ladder(report: Report) -> Section:
    """One row per rung: the layer it adds, ok / crash / diverged, the error or error numbers."""
    rows = [_rung(row) for row in report["ladder"]]
    return Section("ladder", "Backend ladder", "ablate_ladder", {"rows": rows})


def ablate_toggles(report: Report) -> Section | None:
    """The failing rung again with one setting off (dynamic=False, no CUDA graphs)."""
    if not report["toggles"]:
        return None
    rows = [
        {
            "name": toggle["name"],
            "backend": toggle["backend"] or "-",
            "status": toggle["status"],
            "failed": toggle["status"] in FAILURE_STATUSES,
            "detail": _error(toggle.get("numbers") or toggle.get("error")),
        }
        for toggle in report["toggles"]
    ]
    return Section("toggles", "Toggles", "ablate_toggles", {"rows": rows})


def ablate_modules(report: Report) -> Section | None:
    """The module bisection trail: each submodule compiled alone, whether it failed."""
    module = report.get("module")
    if not module:
        return None
    trials = [
        {
            "module": cut(trial["module"], 200),
            "reproduced": trial["reproduced"],
            "status": trial["status"],
            "error": _error(trial.get("error")),
        }
        for trial in module.get("trials") or []
    ]
    data = {
        "completed": module.get("completed"),
        "detail": cut(module.get("detail") or ""),
        "module": module.get("module"),
        "trials": trials,
    }
    return Section("modules", "Module bisection", "ablate_modules", data)


def ablate_numerics(report: Report) -> Section | None:
    """Where the numbers diverge: the descent's table (each module compiled alone on eager's
    input, its errors against fp64), the verdict, the knob that cleared it, the repro."""
    rows, lines = numerics_rows(report), numerics_lines(report)
    if not rows and not lines:
        return None
    data = {"columns": list(NUMERICS_COLUMNS), "lines": [cut(line) for line in lines],
            "rows": [{**row, "cells": numerics_cells(row)} for row in rows]}  # fmt: skip
    return Section("numerics", "Where the numbers diverge", "ablate_numerics", data)


def ablate_bisect(report: Report) -> Section | None:
    """compiler_bisector's answer: backend, subsystem, application number; or why it did not
    run. None when it was not asked for (the failure is not in Inductor, or --no-bisect)."""
    found = report.get("bisect")
    if not found:
        return None
    data = {
        "available": found.get("available"),
        "reason": cut(found.get("reason") or found.get("detail") or ""),
        "backend": found.get("backend"),
        "subsystem": found.get("subsystem"),
        "bisect_number": found.get("bisect_number"),
        "debug_info": cut(found.get("debug_info") or ""),
        "seconds": None if found.get("seconds") is None else round(found["seconds"], 1),
    }
    return Section("bisect", "compiler_bisector", "ablate_bisect", data)


def ablate_repro(report: Report) -> Section | None:
    """Where the repro is, how to run it, and whether it reproduced when pt2doctor ran it."""
    repro = report.get("repro")
    if not repro:
        return None
    data = {**_repro_data(repro), "last_rung": None}
    minifier = repro.get("minifier")
    if repro.get("source") == "minifier" and minifier:
        data["minifier_line"] = minifier_line(minifier)
    elif isinstance(minifier, dict):  # the last rung, after a repro that fell short
        data["last_rung"] = _repro_data(cast(Repro, minifier))
        inner = minifier.get("minifier")
        data["last_rung"]["minifier_line"] = minifier_line(inner) if inner else None
    return Section("repro", "Repro", "ablate_repro", data)


def _repro_data(repro: Repro) -> dict[str, Any]:
    verified = repro.get("verified")
    return {
        "written": bool(repro.get("written")),
        "reason": cut(repro.get("reason") or ""),
        "path": repro.get("path"),
        "command": repro.get("command"),
        "module": repro.get("module"),
        "module_class": repro.get("module_class"),
        "lines": repro.get("lines"),
        "holds": repro_holds(repro) if repro.get("written") else None,
        "case_mode": repro.get("source") is None,
        "not_standalone_because": list(repro.get("not_standalone_because") or []),
        "minifier_line": None,
        "verified": None
        if not verified
        else {
            "reproduces": verified.get("reproduces"),
            "exit_code": verified.get("exit_code"),
            "output": cut(verified.get("output") or ""),
            "expected": verified.get("expected"),
            "signature": verified.get("signature"),
        },
    }


def ablate_workarounds(report: Report) -> Section | None:
    """The failure's category and what it means, then the workarounds, most specific first."""
    category = report["conclusion"].get("category")
    if category is None and not report["workarounds"]:
        return None
    data = {
        "category": category,
        "meaning": CATEGORY_MEANING.get(category or "", ""),
        "workarounds": [cut(advice) for advice in report["workarounds"]],
    }
    return Section("workarounds", "Classification and workarounds", "ablate_workarounds", data)


def ablate_environment(report: Report) -> Section:
    """torch, Python, CUDA, Triton versions and config changed from the defaults (the ablating
    process's; a case file's config changes show here)."""
    rows, config = environment_rows(
        report.get("environment") or {},
        lambda entry: cut(str(entry)),
        lambda entry: cut(str(entry)),
    )
    data = {"rows": rows, "config": config, "changes": [], "tool": report["tool"]}
    return Section("environment", "Environment", "check_environment", data)


ABLATE_SECTIONS: list[AblateSectionBuilder] = [
    ablate_conclusion,
    ablate_ladder,
    ablate_toggles,
    ablate_modules,
    ablate_numerics,
    ablate_bisect,
    ablate_repro,
    ablate_workarounds,
    ablate_environment,
]


def build_ablate_view(report: Report) -> dict[str, Any]:
    """The ablate page's view-model."""
    sections = [build(report) for build in ABLATE_SECTIONS]
    return {
        "title": "pt2doctor ablate report",
        "schema_version": report["schema_version"],
        "links": {},
        "sections": [asdict(section) for section in sections if section is not None],
    }
