"""Golden files for the check report's renderers: the HTML view-model and report.md, built from
the real check report.json fixtures in tests/data/checks (tests/data/make_check_reports.py says
how each was produced) and the raw samples copied beside them. Regenerate with ``make golden``
and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from goldens import check_golden, fixture_names, load_fixture, view_json
from pt2doctor.check.markdown import render_check_markdown
from pt2doctor.check.samples import load_latencies
from pt2doctor.check.views import build_check_view
from pt2doctor.report.redact import redact_report

DATA = Path(__file__).resolve().parents[1] / "data" / "checks"
FIXTURES = fixture_names(DATA)


@pytest.mark.parametrize("name", FIXTURES)
def test_check_view_model_matches_golden(name: str) -> None:
    report = load_fixture(DATA, name)
    latencies = load_latencies(report, DATA / name)
    check_golden(f"{name}.view.json", view_json(build_check_view(report, latencies)))


@pytest.mark.parametrize("name", FIXTURES)
def test_check_markdown_matches_golden(name: str) -> None:
    check_golden(f"{name}.md", render_check_markdown(load_fixture(DATA, name)))


def test_redacted_check_markdown_matches_golden() -> None:
    report = redact_report(load_fixture(DATA, "check_budget"), base="/repo")
    check_golden("check_budget.redacted.md", render_check_markdown(report))


def test_latency_chart_uses_every_raw_sample_and_falls_back_to_percentiles() -> None:
    report = load_fixture(DATA, "check_budget")
    steady = build_check_view(report, load_latencies(report, DATA / "check_budget"))
    rows = next(s for s in steady["sections"] if s["id"] == "steady")["charts"][0]["rows"]
    assert rows and all(len(row["values_ms"]) == 8 for row in rows)  # --iterations 8
    fallback = build_check_view(report)  # the run directory under /tmp/check is gone
    rows = next(s for s in fallback["sections"] if s["id"] == "steady")["charts"][0]["rows"]
    assert rows and all(row["values_ms"] == [] and row["p99_ms"] for row in rows)


def test_fixtures_exist() -> None:
    assert {"check_budget", "check_accuracy", "check_hostile"} <= set(FIXTURES)
