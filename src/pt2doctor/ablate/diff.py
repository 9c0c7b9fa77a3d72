"""What changed between two ablate reports (``pt2doctor diff A B`` on two ablate runs): a pure
function of two report dicts (ablate/report.py; docs/report-schema.md).

Rungs are matched by their compiler layer (``dynamo``, ``aot``, ``decomp_partition``, then
``inductor`` or ``backend``), so the same program ablated with a fix applied lines up rung by
rung. A change is a regression when B fails where A did not: a rung that now fails, a failing
layer that appears or comes earlier, a smallest failing module or a module where the numbers
diverge that B names and A did not. The same two reports the other way round are
improvements.
"""

from __future__ import annotations

from typing import Any

from pt2doctor.ablate.render import diverging_module
from pt2doctor.ablate.types import FAILURE_STATUSES
from pt2doctor.analysis.diff.change import Change, Noise
from pt2doctor.analysis.diff.reports import Diff, environment_changes

Report = dict[str, Any]
LAYERS = ("dynamo", "aot", "decomp_partition", "inductor", "backend")


def _rungs(report: Report) -> dict[str, dict[str, Any]]:
    return {rung.get("layer") or rung["backend"]: rung for rung in report.get("ladder") or []}


def _failing(status: str | None) -> bool:
    return status in FAILURE_STATUSES


def _named(kind: str, subject: str, before: str | None, after: str | None) -> list[Change]:
    """A module named in A and/or B: a regression when B names one A did not."""
    if before == after:
        return []
    shown = [None if name is None else name or "<model>" for name in (before, after)]
    return [Change(kind, subject, shown[0], shown[1], after is not None and before is None)]


def _what(report: Report) -> str:
    """What was ablated: the case cell, or the script's command."""
    target = report.get("target") or {}
    if target.get("cell"):
        return str(target["cell"])
    return " ".join(str(part) for part in (target.get("command") or [])[-2:]) or "the program"


def diff_ablate_reports(a: Report, b: Report, noise: Noise | None = None,
                        names: tuple[str, str] = ("A", "B")) -> Diff:  # fmt: skip
    """Every difference from ablate report ``a`` to ``b`` that matters, regressions marked."""
    diff = Diff(*names)
    what = _what(b)
    before = _rungs(a)
    for layer, rung in _rungs(b).items():
        old = before.get(layer)
        if old is None or old["status"] == rung["status"]:
            continue
        worse = _failing(rung["status"]) and not _failing(old["status"])
        subject = f"{layer} ({rung['backend']})"
        diff.changes.append(Change("rung_status", subject, old["status"], rung["status"], worse))
    layers = [(report.get("conclusion") or {}).get("layer") for report in (a, b)]
    if layers[0] != layers[1]:
        rank = [LAYERS.index(layer) if layer in LAYERS else len(LAYERS) for layer in layers]
        worse = layers[1] is not None and (layers[0] is None or rank[1] < rank[0])
        diff.changes.append(Change("failing_layer", what, layers[0], layers[1], worse))
    module_a, module_b = ((report.get("module") or {}).get("module") for report in (a, b))
    diff.changes += _named("failing_module", what, module_a, module_b)
    culprit_a, culprit_b = (diverging_module(report.get("numerics")) for report in (a, b))
    diff.changes += _named("diverging_module", what, culprit_a, culprit_b)
    diff.changes += environment_changes(a, b)
    return diff
