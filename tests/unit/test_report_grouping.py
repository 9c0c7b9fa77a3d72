"""One root cause reads as one block (report/format.py grouped_findings) and the evidence of
every layer's recompile as one line (analysis/recompiles/outlook.py merged_change_lines)."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.recompiles.changes import SourceChange
from pt2doctor.analysis.recompiles.outlook import merged_change_lines
from pt2doctor.analysis.recompiles.sources import user_expr
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


def _change(source: str, kind: str, old: str, new: str) -> SourceChange:
    return SourceChange(user_expr(source), kind, old, new)


def test_evidence_of_consecutive_recompiles_of_one_value_is_one_line() -> None:
    items: list[tuple[str, str | None, SourceChange]] = [
        (f"0/{i}", f"0/{i - 1}", _change(f"cache.layers[{i - 1}].ready", "flag", "False", "True"))
        for i in (1, 2, 3)
    ]
    items += [("0/4", "0/0", _change("self.training", "flag", "True", "False"))]
    items += [(f"0/{i}", f"0/{i - 1}", _change("self.idx", "value", str(i - 1), str(i)))
              for i in (5, 6, 7)]  # fmt: skip
    assert merged_change_lines(items) == [
        "0/1–0/3: cache.layers[0..2].ready flag False → True",
        "0/4 vs 0/0: self.training flag True → False",
        "0/5–0/7: self.idx value 4 → 5 → 6 → 7",
    ]
    two = items[:2]  # fewer than three: kept as they are
    assert merged_change_lines(two) == [
        "0/1 vs 0/0: cache.layers[0].ready flag False → True",
        "0/2 vs 0/1: cache.layers[1].ready flag False → True",
    ]


def test_merged_values_never_read_a_number_inside_another() -> None:
    """Sizes that grow each time read as a chain, floats whole, a counter as its ranges."""
    sizes = [("0/1", "0/0", _change("x.shape[0]", "size", "5832", "6120")),
             ("0/2", "0/1", _change("x.shape[0]", "size", "6120", "7040")),
             ("0/3", "0/2", _change("x.shape[0]", "size", "7040", "7962"))]  # fmt: skip
    assert merged_change_lines(sizes) == ["0/1–0/3: x.shape[0] size 5832 → 6120 → 7040 → 7962"]
    floats = [(f"0/{i}", "0/0", _change("self.p", "value", "0.1", v))
              for i, v in enumerate(("0.21", "0.22499999999999998", "0.3"), 1)]  # fmt: skip
    (line,) = merged_change_lines(floats)
    assert line == "0/1–0/3: self.p value 0.1 → 0.21, 0.1 → 0.22499999999999998, 0.1 → 0.3"
    counter = [(f"0/{i}", f"0/{i - 1}", _change("self.n", "value", str(2 * i), str(2 * i + 2)))
               for i in (1, 3, 5)]  # fmt: skip
    assert merged_change_lines(counter) == ["0/1, 0/3, 0/5: self.n value 2..10 → 4..12"]
