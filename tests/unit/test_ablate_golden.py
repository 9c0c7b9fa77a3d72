"""Golden files for the ablate report's renderers: the HTML view-model and report.md, built from
the real ablate report.json fixtures in tests/data/ablates (tests/data/make_ablate_reports.py
says how each was produced). Regenerate with ``make golden`` and review the diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from goldens import check_golden, fixture_names, load_fixture, view_json
from pt2doctor.ablate.render import render_ablate_markdown
from pt2doctor.ablate.views import build_ablate_view
from pt2doctor.cli.renderers import RenderContext, render

DATA = Path(__file__).resolve().parents[1] / "data" / "ablates"
FIXTURES = fixture_names(DATA)
HOSTILE = ("<script>", "<img src=x onerror")


@pytest.mark.parametrize("name", FIXTURES)
def test_ablate_view_model_matches_golden(name: str) -> None:
    view = build_ablate_view(load_fixture(DATA, name))
    check_golden(f"{name}.view.json", view_json(view))


@pytest.mark.parametrize("name", FIXTURES)
def test_ablate_markdown_matches_golden(name: str) -> None:
    check_golden(f"{name}.md", render_ablate_markdown(load_fixture(DATA, name)))


def test_ablate_page_has_every_section_and_escapes_the_hostile_text() -> None:
    report = load_fixture(DATA, "ablate_hostile")
    ids = [section["id"] for section in build_ablate_view(report)["sections"]]
    assert ids == ["conclusion", "ladder", "toggles", "modules", "bisect", "repro",
                   "workarounds", "environment"]  # fmt: skip
    page = render(report, "html", RenderContext())
    assert not any(payload in page for payload in HOSTILE)
    assert "&lt;script&gt;document.title=&#39;PWNED-1&#39;&lt;/script&gt;" in page
    assert "enc&lt;img src=x onerror=document[&#39;title&#39;]=&#39;PWNED-3&#39;&gt;" in page
    markdown = render_ablate_markdown(report)
    assert not any(payload in markdown for payload in HOSTILE)


def test_fixtures_exist() -> None:
    assert {"ablate_relu", "ablate_hostile"} <= set(FIXTURES)
