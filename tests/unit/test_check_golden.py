"""Golden files for the check report's renderers: the HTML view-model and report.md, built from
the real check report.json fixtures in tests/data/checks (tests/data/make_check_reports.py says
how each was produced) and the raw samples copied beside them. Regenerate with ``make golden``
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pt2doctor.report.check_markdown import render_check_markdown
from pt2doctor.report.check_samples import load_latencies
from pt2doctor.report.check_views import build_check_view
from pt2doctor.report.redact import redact_report

DATA = Path(__file__).resolve().parents[1] / "data" / "checks"
GOLDEN = Path(__file__).resolve().parents[1] / "golden"
FIXTURES = sorted(path.stem for path in DATA.glob("*.json"))
UPDATE = os.environ.get("PT2DOCTOR_UPDATE_GOLDEN") == "1"


def _fixture(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def _check(path: Path, text: str) -> None:
    if UPDATE:
        path.write_text(text)
        return
    assert path.is_file(), f"no golden file {path}: run `make golden` and review it"
    assert text == path.read_text(), f"{path.name} differs from its golden file (make golden)"


def _view_json(view: dict) -> str:
    return json.dumps(view, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", FIXTURES)
def test_check_view_model_matches_golden(name: str) -> None:
    report = _fixture(name)
    latencies = load_latencies(report, DATA / name)
    _check(GOLDEN / f"{name}.view.json", _view_json(build_check_view(report, latencies)))


@pytest.mark.parametrize("name", FIXTURES)
def test_check_markdown_matches_golden(name: str) -> None:
    _check(GOLDEN / f"{name}.md", render_check_markdown(_fixture(name)))


def test_redacted_check_markdown_matches_golden() -> None:
    report = redact_report(_fixture("check_budget"), base="/repo")
    _check(GOLDEN / "check_budget.redacted.md", render_check_markdown(report))


def test_latency_chart_uses_every_raw_sample_and_falls_back_to_percentiles() -> None:
    report = _fixture("check_budget")
    steady = build_check_view(report, load_latencies(report, DATA / "check_budget"))
    rows = next(s for s in steady["sections"] if s["id"] == "steady")["charts"][0]["rows"]
    assert rows and all(len(row["values_ms"]) == 8 for row in rows)  # --iterations 8
    fallback = build_check_view(report)  # the run directory under /tmp/check is gone
    rows = next(s for s in fallback["sections"] if s["id"] == "steady")["charts"][0]["rows"]
    assert rows and all(row["values_ms"] == [] and row["p99_ms"] for row in rows)


def test_fixtures_exist() -> None:
    assert {"check_budget", "check_accuracy", "check_hostile"} <= set(FIXTURES)
