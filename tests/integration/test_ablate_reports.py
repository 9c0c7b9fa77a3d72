"""report.html of ablate: a hostile ablate report opened in a real browser runs no script.
(``pt2doctor ablate --format html`` on a real run is checked in test_ablate.py, on the run its
relu_accuracy_error case makes anyway.)

The hostile report is the committed fixture tests/data/ablates/ablate_hostile.json (a real
ablate of tests/programs/ablate/hostile_raise.py, see tests/data/make_ablate_reports.py): its
Inductor error message and its submodule's name are markup that sets ``document.title``."""

from __future__ import annotations

import json
from pathlib import Path

from test_html_report import Elements, open_in_chromium
from test_html_report import chromium as chromium  # the fixture, for this module's tests

from pt2doctor.cli.renderers import RenderContext, render

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "tests" / "data" / "ablates" / "ablate_hostile.json"
PAYLOADS = ("document.title='PWNED-1'", "document.title='PWNED-2'", "document['title']='PWNED-3'")


def test_no_script_from_an_ablate_report_runs_in_a_browser(chromium, tmp_path):
    raw = HOSTILE.read_text()
    missing = [mark for mark in PAYLOADS if mark not in raw]
    assert not missing, f"the fixture no longer carries payloads {missing}: the test proves nothing"
    page = tmp_path / "report.html"
    page.write_text(render(json.loads(raw), "html", RenderContext()))
    dom = open_in_chromium(chromium, page, tmp_path / "hostile-ablate.png")
    parsed = Elements()
    parsed.feed(dom)
    assert parsed.title == "pt2doctor ablate report"  # no payload set it
    tags = [tag for tag, _ in parsed.elements]
    assert "script" not in tags and "img" not in tags and "svg" not in tags
    for tag, attrs in parsed.elements:
        assert not [name for name in attrs if name.startswith("on")], tag
    # The payloads are there, as text: the error message, the module name.
    assert "&lt;script&gt;document.title='PWNED-1'&lt;/script&gt;" in dom
    assert "enc&lt;img src=x onerror=document['title']='PWNED-3'&gt;" in dom
