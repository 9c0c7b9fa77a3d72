"""report.html of ablate: a hostile ablate report opened in a real browser runs no script, and
``pt2doctor ablate --format html`` prints a self-contained page while writing report.json,
report.md and report.html into --out.

The hostile report is the committed fixture tests/data/ablates/ablate_hostile.json (a real
ablate of tests/programs/ablate/hostile_raise.py, see tests/data/make_ablate_reports.py): its
Inductor error message and its submodule's name are markup that sets ``document.title``. The
real run here is the cheapest ablate there is (~30 s on 2 CPU cores: four ladder processes and
the module bisection of layered.py under relu_accuracy_error_TESTING_ONLY, no bisector, no
repro check)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
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


def test_ablate_format_html_prints_a_self_contained_page(tmp_path, run_env):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out),
               str(REPO / "tests" / "programs" / "ablate" / "layered.py"),
               "--backend", "relu_accuracy_error_TESTING_ONLY", "--no-bisect",
               "--no-verify-repro", "--format", "html", "--md", str(tmp_path / "extra.md")]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=run_env, capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]  # the failure reproduced
    page = done.stdout
    assert page.startswith("<!DOCTYPE html>") and "pt2doctor ablate report" in page
    assert "Content-Security-Policy" in page and "<script" not in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing loaded from elsewhere
    assert "blocks.2.act" in page and "relu_accuracy_error_TESTING_ONLY" in page
    assert (out / "report.html").read_text() == page
    assert (out / "report.md").read_text() == (tmp_path / "extra.md").read_text()
    assert json.loads((out / "report.json").read_text())["conclusion"]["layer"] == "backend"
