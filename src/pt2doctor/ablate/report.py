"""The ablate report (``report.json`` of ``pt2doctor ablate``): the ladder, the toggles, the
conclusion, the module and the Inductor subsystem when found, the workarounds and the repro.
Built from the pieces ``harness.ablate.run_ablation`` (or ``ablate_script``) returns.
Documented in docs/report-schema.md ("ablate")."""

from __future__ import annotations

from typing import Any

from pt2doctor import __version__
from pt2doctor.ablate.classify import (
    classify,
    conclusion,
    eager_failure,
    error_numbers,
    first_failure,
    workarounds,
)
from pt2doctor.ablate.hook_verdict import hook_change_verdict
from pt2doctor.ablate.types import AblateReport, Conclusion, Rung, Settings, Target, Toggle
from pt2doctor.analysis.breaks.library_breaks import known_break
from pt2doctor.analysis.userside.causes import custom_op_advice, diagnose
from pt2doctor.report.document import SCHEMA_VERSION
from pt2doctor.trace.types import GraphBreakEvent


def _row(rung: dict[str, Any]) -> Rung:
    """A ladder row from a rung's outcome (the worker's fields, missing ones null)."""
    numbers = error_numbers(rung) if rung.get("status") not in ("ok", "not run") else None
    return Rung(
        backend=rung["backend"],
        layer=rung.get("layer"),
        status=rung["status"],
        error=rung.get("error"),
        error_types=rung.get("error_types"),
        root_type=rung.get("root_type"),
        worst=rung.get("worst"),
        tolerance=rung.get("tolerance"),
        failed_tensors=rung.get("failed_tensors"),
        exit_code=rung.get("exit_code"),
        seconds=rung.get("seconds"),
        category=classify(rung),
        numbers=numbers,
        own_exit=bool(rung.get("own_exit")),
    )


def _toggle(raw: dict[str, Any]) -> Toggle:
    numbers = None if raw.get("status") in ("ok", "not applicable") else error_numbers(raw)
    return Toggle(
        name=raw["name"],
        backend=raw.get("backend"),
        status=raw["status"],
        error=raw.get("error"),
        numbers=numbers,
    )


def _last_good(rungs: list[dict[str, Any]]) -> str | None:
    good = [r["backend"] for r in rungs if r.get("status") == "ok"]
    return good[-1] if good else None


def build_ablate_report(
    pieces: dict[str, Any],
    target: Target,
    settings: Settings,
    out: str,
    environment: dict[str, Any] | None = None,
) -> AblateReport:
    """The report dict: ``target`` says what was ablated (a case cell or a command),
    ``settings`` how the user compiles (backend, dynamic, mode), ``environment`` the
    fingerprint (torchcompat.environment()) of the process that ran the case file, or in script
    mode of the program itself, as a rung recorded it."""
    rungs = pieces["rungs"]
    modules = pieces.get("modules") or None
    module = modules.get("module") if modules else None
    bisected = pieces.get("bisect")
    failing = first_failure(rungs) or eager_failure(rungs)
    user_side = user_side_verdict(pieces, failing)
    unchecked = target.get("mode") == "script" and not target.get("accuracy_check")
    verdict = conclusion(rungs, module, bisected, user_side, compared=not unchecked,
                         toggles=pieces.get("toggles") or ())  # fmt: skip
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "ablate",
        "tool": {"name": "pt2doctor", "version": __version__},
        "target": target,
        "settings": settings,
        "ladder": [_row(rung) for rung in rungs],
        "toggles": [_toggle(raw) for raw in pieces.get("toggles", [])],
        "conclusion": verdict,
        "module": modules,
        "bisect": bisected,
        "repro": (modules or {}).get("repro") or pieces.get("repro"),
        "custom_ops": pieces.get("custom_ops") or [],
        "compiler_hooks": pieces.get("hooks") or [],
        "numerics": pieces.get("numerics"),
        "workarounds": _workarounds(
            pieces,
            verdict,
            module,
            failing,
            user_side,
            bool(settings.get("fullgraph") or pieces.get("program_fullgraph")),
        ),
        "out": out,
        "environment": dict(sorted((environment or {}).items())),
    }


def user_side_verdict(
    pieces: dict[str, Any], failing: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The user-side proof: hooks changed after compile (ablate/hook_verdict.py: its toggle is
    the most direct proof there is), else analysis/userside's ``diagnose``."""
    if failing is None:
        return None
    changes = pieces.get("hook_changes") or failing.get("hook_changes") or []
    return hook_change_verdict(pieces.get("toggles") or [], changes) or diagnose(pieces, failing)


def _workarounds(
    pieces: dict[str, Any],
    verdict: Conclusion,
    module: str | None,
    failing: dict[str, Any] | None,
    user_side: dict[str, Any] | None,
    fullgraph: bool = False,
) -> list[str]:
    """The workarounds; a crash naming a custom op that was not checked (script mode) gets
    the custom-op advice first. ``fullgraph``: the program compiles with fullgraph=True (the
    flag, or its own torch.compile calls in script mode)."""
    if failing is None:
        return []
    rungs = pieces["rungs"]
    found = workarounds(
        verdict["category"], pieces.get("toggles", []), module, _last_good(rungs), user_side,
        fullgraph,
    )  # fmt: skip
    advice = None if user_side else custom_op_advice(str(failing.get("error") or ""))
    if verdict["category"] == "incompleteness":
        advice = advice or known_site_fix(failing)
    return [advice, *found] if advice else found


def known_site_fix(failing: dict[str, Any]) -> str | None:
    """The fix pt2doctor knows for the library line where Dynamo stopped (the rung's
    ``stopped_at``: the innermost frame of the error's user-code traceback), as the
    graph-break report gives it (analysis/breaks/library_breaks.py)."""
    site = failing.get("stopped_at") or {}
    if not site.get("file") or not site.get("function"):
        return None
    reason = str(failing.get("message") or failing.get("error") or "")
    event = GraphBreakEvent(compile_id="", site=None, gb_type="", reason=reason)
    known = known_break(site["file"], site["function"], event)
    return None if known is None or known.by_design else known.fix


def failure_found(report: AblateReport) -> bool:
    return report["conclusion"]["failure"] is not None
