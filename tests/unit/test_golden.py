"""Golden files for the renderers: the HTML report's view-model, report.md and the terminal
summary, built from the
real report.json fixtures in tests/data/reports (see tests/data/make_reports.py for how each
was produced). Regenerate with ``make golden`` and review the diff.

The fixtures are already normalized (paths, log names); the view-model has no clock of its own.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from goldens import check_golden, fixture_names, load_fixture, view_json
from pt2doctor.report.markdown import render_markdown
from pt2doctor.report.redact import redact_report
from pt2doctor.report.terminal import render_terminal
from pt2doctor.report.views import build_view

DATA = Path(__file__).resolve().parents[1] / "data" / "reports"
FIXTURES = fixture_names(DATA)


@pytest.mark.parametrize("name", FIXTURES)
def test_html_view_model_matches_golden(name: str) -> None:
    check_golden(f"{name}.view.json", view_json(build_view(load_fixture(DATA, name))))


@pytest.mark.parametrize("name", FIXTURES)
def test_markdown_matches_golden(name: str) -> None:
    check_golden(f"{name}.md", render_markdown(load_fixture(DATA, name)))


@pytest.mark.parametrize("name", FIXTURES)
def test_terminal_matches_golden(name: str) -> None:
    """The terminal summary at 100 columns, no colour, paths relative to the fixtures' /repo."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=100, color_system=None, force_terminal=False)
    render_terminal(load_fixture(DATA, name), console, cwd="/repo")
    check_golden(f"{name}.term.txt", buffer.getvalue())


def test_redacted_markdown_matches_golden() -> None:
    report = redact_report(load_fixture(DATA, "demo_eager"), base="/repo")
    check_golden("demo_eager.redacted.md", render_markdown(report))


def test_fixtures_exist() -> None:
    assert {"demo_eager", "hostile"} <= set(FIXTURES)
