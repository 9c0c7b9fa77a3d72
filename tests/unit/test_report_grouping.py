"""One root cause reads as one block (report/format.py grouped_findings) and the evidence of
every layer's recompile as one line (analysis/text.py merged_runs)."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.text import merged_runs
from pt2doctor.report.format import grouped_findings


def _finding(code: str, title: str, cause: str | None = None, **extra: Any) -> Any:
    row = {"severity": "error", "code": code, "title": title, "advice": f"{code} advice",
           "evidence": [f"{code} evidence"], **extra}  # fmt: skip
    return {**row, "cause": cause} if cause else row


def test_findings_of_one_cause_show_as_one_with_the_tried_advice() -> None:
    limit = _finding("recompile_limit_hit", "L.forward (compiled at t.py:3) hit the limit", "f 0")
    other = _finding("graph_break", "Graph break at t.py:9")
    recompiles = _finding("recompiles", "L.forward (compiled at t.py:3) recompiled 7 times", "f 0",
                          tried={"verdict": "helped"})  # fmt: skip
    shown = grouped_findings([limit, other, recompiles])
    assert [f["code"] for f in shown] == ["recompile_limit_hit", "graph_break"]
    merged = shown[0]
    assert merged["also"] == ["recompiles: recompiled 7 times"]  # the shared frame said once
    assert merged["evidence"] == ["recompile_limit_hit evidence", "recompiles evidence"]
    assert merged["advice"] == "recompiles advice"  # the one whose fix was tried
    assert "also" not in shown[1]
    alone = _finding("recompiles", "x", "f 1")  # a cause of one finding: as it is
    assert grouped_findings([alone]) == [alone]


def test_evidence_of_consecutive_recompiles_that_differ_by_numbers_is_one_line() -> None:
    lines = [
        f"0/{i} vs 0/{i - 1}: cache.layers[{i - 1}].ready flag False → True" for i in (1, 2, 3)
    ]
    lines += ["0/4 vs 0/0: self.training flag True → False"]
    lines += [f"0/{i} vs 0/{i - 1}: self.idx value {i - 1} → {i}" for i in (5, 6, 7)]
    assert merged_runs(lines) == [
        "0/1–0/3: cache.layers[0..2].ready flag False → True",
        "0/4 vs 0/0: self.training flag True → False",
        "0/5–0/7: self.idx value 4..6 → 5..7",
    ]
    two = lines[:2]  # fewer than three: kept as they are
    assert merged_runs(two) == two
