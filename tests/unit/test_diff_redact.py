"""Pure parts of ``diff`` (time noise floors) and ``--redact``, on the real report fixtures in
tests/data/reports with one value changed by hand where a test needs a difference."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from pt2doctor.analysis.diff.change import Change, Noise
from pt2doctor.analysis.diff.reports import diff_reports
from pt2doctor.report.redact import SOURCE_REDACTED, redact_report

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"


def _demo() -> dict:
    return json.loads((DATA / "demo_eager.json").read_text())


def _kinds(a: dict, b: dict, noise: Noise | None = None) -> dict[str, tuple]:
    return {c.kind: (c.before, c.after, c.regression) for c in diff_reports(a, b, noise).changes}


def test_compile_time_counts_only_beyond_both_floors() -> None:
    a = _demo()
    base = a["summary"]["total_compile_time_s"]
    b = copy.deepcopy(a)
    b["summary"]["total_compile_time_s"] = base * 2 + 0.9  # >25 % but under the 1 s floor
    assert "compile_time_s" not in _kinds(a, b, Noise(compile_s=base + 1))
    b = copy.deepcopy(a)
    b["summary"]["total_compile_time_s"] = base * 2 + 2
    assert _kinds(a, b)["compile_time_s"] == (base, base * 2 + 2, True)
    assert _kinds(b, a)["compile_time_s"][2] is False  # faster is a change, not a regression


def test_time_per_call_uses_calls_and_seconds_in_graph() -> None:
    a = _demo()
    b = copy.deepcopy(a)
    for entry in b["compiles"]:
        if entry["function"] == "forward" and entry["seconds_in_graph"] is not None:
            entry["seconds_in_graph"] *= 10
    changes = [c for c in diff_reports(a, b, Noise(per_call_s=0)).changes]
    slower = [c for c in changes if c.kind == "time_per_call_s"]
    assert [c.subject for c in slower] == ["forward (serving_loop.py:112)"]
    assert slower[0].after > slower[0].before and slower[0].regression


def test_environment_change_is_named_but_not_a_regression() -> None:
    a = _demo()
    b = copy.deepcopy(a)
    b["environment"]["torch_version"] = "2.14.0"
    assert _kinds(a, b) == {"environment": ("2.13.0+cpu", "2.14.0", False)}


def test_redact_removes_every_source_line_and_absolute_path() -> None:
    report = _demo()
    code_lines = {
        node["code"]
        for row in report["graph_breaks"]
        for node in [row["site"], *row["user_stack"]]
        if node["code"]
    }
    assert code_lines
    redacted = redact_report(report, base="/repo")
    text = json.dumps(redacted)
    assert not [line for line in code_lines if len(line) > 8 and line in text]
    assert not re.findall(r'"/(?:repo|python|tmp)/', text)
    assert redacted["redacted"] is True
    assert redacted["graph_breaks"][0]["site"]["file"] == "examples/serving_loop.py"
    assert SOURCE_REDACTED in text  # the findings' quoted lines
    assert "redacted" not in report  # the input is left alone


def test_time_per_call_counts_only_beyond_twice_by_default() -> None:
    """Two runs of one unchanged program differed by up to 1.9x per call on a shared 2-core
    machine: 1.9x is no change by default, 2.5x is a regression, and ``per_call_rel`` sets
    the floor."""
    a = _demo()

    def slower(factor: float, noise: Noise) -> list[Change]:
        b = copy.deepcopy(a)
        for entry in b["compiles"]:
            if entry["function"] == "forward" and entry["seconds_in_graph"] is not None:
                entry["seconds_in_graph"] *= factor
        return [c for c in diff_reports(a, b, noise).changes if c.kind == "time_per_call_s"]

    assert slower(1.9, Noise(per_call_s=0)) == []
    (change,) = slower(2.5, Noise(per_call_s=0))
    assert change.regression
    assert slower(1.9, Noise(per_call_s=0, per_call_rel=0.25))[0].regression
