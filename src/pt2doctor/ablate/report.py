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
    error_numbers,
    first_failure,
    workarounds,
)
from pt2doctor.analysis.user_side import custom_op_advice, diagnose
from pt2doctor.report.schema import SCHEMA_VERSION

ROW_KEYS = (
    "backend",
    "layer",
    "status",
    "error",
    "error_types",
    "root_type",
    "worst",
    "tolerance",
    "failed_tensors",
    "exit_code",
    "seconds",
)


def _row(rung: dict[str, Any]) -> dict[str, Any]:
    row = {key: rung.get(key) for key in ROW_KEYS}
    row["category"] = classify(rung)
    row["numbers"] = error_numbers(rung) if rung.get("status") not in ("ok", "not run") else None
    return row


def _last_good(rungs: list[dict[str, Any]]) -> str | None:
    good = [r["backend"] for r in rungs if r.get("status") == "ok"]
    return good[-1] if good else None


def build_ablate_report(
    pieces: dict[str, Any],
    target: dict[str, Any],
    settings: dict[str, Any],
    out: str,
    environment: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The report dict: ``target`` says what was ablated (a case cell or a command),
    ``settings`` how the user compiles (backend, dynamic, mode), ``environment`` the
    fingerprint of the process that ran the ablation (torchcompat.environment())."""
    rungs = pieces["rungs"]
    modules = pieces.get("modules") or None
    module = modules.get("module") if modules else None
    bisected = pieces.get("bisect")
    failing = first_failure(rungs)
    user_side = diagnose(pieces, failing)
    verdict = conclusion(rungs, module, bisected, user_side)
    toggles = [
        {**{k: t.get(k) for k in ("name", "backend", "status", "error")}, "numbers": None}
        for t in pieces.get("toggles", [])
    ]
    for toggle, raw in zip(toggles, pieces.get("toggles", []), strict=True):
        if raw.get("status") not in ("ok", "not applicable"):
            toggle["numbers"] = error_numbers(raw)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "ablate",
        "tool": {"name": "pt2doctor", "version": __version__},
        "target": target,
        "settings": settings,
        "ladder": [_row(rung) for rung in rungs],
        "toggles": toggles,
        "conclusion": verdict,
        "module": modules,
        "bisect": bisected,
        "repro": (modules or {}).get("repro") or pieces.get("repro"),
        "custom_ops": pieces.get("custom_ops") or [],
        "compiler_hooks": pieces.get("hooks") or [],
        "workarounds": _workarounds(pieces, verdict, module, failing, user_side),
        "out": out,
        "environment": dict(sorted((environment or {}).items())),
    }


def _workarounds(
    pieces: dict[str, Any],
    verdict: dict[str, Any],
    module: str | None,
    failing: dict[str, Any] | None,
    user_side: dict[str, Any] | None,
) -> list[str]:
    """The workarounds; a crash naming a custom op that was not checked (script mode) gets
    the custom-op advice first."""
    if failing is None:
        return []
    rungs = pieces["rungs"]
    found = workarounds(
        verdict["category"], pieces.get("toggles", []), module, _last_good(rungs), user_side
    )
    advice = None if user_side else custom_op_advice(str(failing.get("error") or ""))
    return [advice, *found] if advice else found


def failure_found(report: dict[str, Any]) -> bool:
    return report["conclusion"]["failure"] is not None
