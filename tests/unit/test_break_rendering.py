"""How a graph-break site that ran often but splits nothing is drawn: not as a hot site."""

from __future__ import annotations

import copy
from pathlib import Path

from goldens import load_fixture
from pt2doctor.report.markdown import render_markdown
from pt2doctor.report.views import build_view

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"


def _with_splits_nothing() -> tuple[dict, dict]:
    """demo_eager's report, and a copy whose hot site (10 hits) splits nothing."""
    report = load_fixture(DATA, "demo_eager")
    changed = copy.deepcopy(report)
    hot = next(row for row in changed["graph_breaks"] if row["hot"])
    hot["splits_nothing"] = True
    return report, changed


def _breaks_section(report: dict) -> dict:
    view = build_view(report)
    return next(section for section in view["sections"] if section["id"] == "breaks")


def test_a_break_that_splits_nothing_is_not_flagged_hot() -> None:
    report, changed = _with_splits_nothing()
    before, after = _breaks_section(report), _breaks_section(changed)
    assert [s["hot"] for s in before["data"]["sites"]].count(True) == 1
    assert not any(s["hot"] for s in after["data"]["sites"])
    assert [s["splits_nothing"] for s in after["data"]["sites"]].count(True) == 1
    assert True in before["charts"][0]["highlight"]
    assert True not in after["charts"][0]["highlight"]
    markdown = render_markdown(changed)
    assert "10 (splits nothing)" in markdown and "🔥" not in markdown
    assert "10 🔥" in render_markdown(report)


def test_pytorchs_by_design_break_is_not_flagged_hot() -> None:
    report = load_fixture(DATA, "demo_eager")
    changed = copy.deepcopy(report)
    hot = next(row for row in changed["graph_breaks"] if row["hot"])
    hot["by_design"] = True
    after = _breaks_section(changed)
    assert not any(s["hot"] for s in after["data"]["sites"])
    assert [s["by_design"] for s in after["data"]["sites"]].count(True) == 1
    markdown = render_markdown(changed)
    assert "10 (PyTorch's, by design)" in markdown and "🔥" not in markdown
