"""Golden files for the renderers: the HTML report's view-model and report.md, built from the
real report.json fixtures in tests/data/reports (see tests/data/make_reports.py for how each
was produced). Regenerate with ``make golden`` and review the diff.

The fixtures are already normalized (paths, log names); the view-model has no clock of its own.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pt2doctor.report.markdown import render_markdown
from pt2doctor.report.redact import redact_report
from pt2doctor.report.views import build_view

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"
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


def _view_json(report: dict) -> str:
    return json.dumps(build_view(report), indent=1, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("name", FIXTURES)
def test_html_view_model_matches_golden(name: str) -> None:
    _check(GOLDEN / f"{name}.view.json", _view_json(_fixture(name)))


@pytest.mark.parametrize("name", FIXTURES)
def test_markdown_matches_golden(name: str) -> None:
    _check(GOLDEN / f"{name}.md", render_markdown(_fixture(name)))


def test_redacted_markdown_matches_golden() -> None:
    report = redact_report(_fixture("demo_eager"), base="/repo")
    _check(GOLDEN / "demo_eager.redacted.md", render_markdown(report))


def test_fixtures_exist() -> None:
    assert {"demo_eager", "hostile"} <= set(FIXTURES)
