"""report.html and report.md from real runs: safe by construction, self-contained, linked.

The browser test opens the report of tests/programs/run/run_hostile.py (function name, file
name, guarded string and source line are HTML and script) in headless Chromium, takes a
screenshot and dumps the DOM after load: no payload may have run (each would set the title to
PWNED-n or add ``data-pwned`` to <body>), and none may have become an element.
Chromium comes from the OS packages (``make chromium``, or .ci/run, installs it); without it
the test skips and says so.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

EAGER = ("--backend", "eager")
PAYLOAD_MARKS = ("PWNED-1", "'2')", "PWNED-3", "PWNED-4", "'5')")
# Chromium's first start on 2 busy cores takes ~2-10 s; a hung one is killed.
CHROMIUM_TIMEOUT_S = 120
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--hide-scrollbars", "--window-size=1280,2000"]  # fmt: skip


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium executable; the test skips, saying how to get it, when there is none.
    Tests never install anything: ``.ci/run`` and ``make chromium`` do."""
    found = shutil.which("chromium")
    if found is None:
        pytest.skip("chromium is not installed (install it with `make chromium` or .ci/run)")
    return found


def open_in_chromium(chromium: str, page: Path, screenshot: Path) -> str:
    """Load ``page``, save a screenshot, return the DOM as it is after load."""
    with tempfile.TemporaryDirectory() as profile:
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        shot = subprocess.run([chromium, *flags, f"--screenshot={screenshot}", page.as_uri()],
                              capture_output=True, timeout=CHROMIUM_TIMEOUT_S, check=False)  # fmt: skip
        assert shot.returncode == 0, shot.stderr[-2000:]
        dom = subprocess.run([chromium, *flags, "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=CHROMIUM_TIMEOUT_S,
                             check=False)  # fmt: skip
        assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout


class Elements(HTMLParser):
    """Every element's tag and attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.title = ""
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._in_title = tag == "title"

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data

    def handle_endtag(self, tag: str) -> None:
        self._in_title = False


@pytest.fixture(scope="module")
def hostile(doctor_run):
    run = doctor_run("hostile", EAGER, "run_hostile")
    assert run.returncode == 0, run.stderr[-3000:]
    raw = (run.run_dir / "report.json").read_text()
    missing = [mark for mark in PAYLOAD_MARKS if mark not in raw]
    assert not missing, f"the trace no longer carries payloads {missing}: the test proves nothing"
    return run


def test_no_script_from_the_trace_runs_in_a_browser(hostile, chromium, tmp_path):
    page = hostile.run_dir / "report.html"
    screenshot = tmp_path / "hostile.png"
    dom = open_in_chromium(chromium, page, screenshot)
    assert screenshot.stat().st_size > 10_000 and screenshot.read_bytes()[:4] == b"\x89PNG"
    parsed = Elements()
    parsed.feed(dom)
    assert parsed.title == "pt2doctor report"
    body = [attrs for tag, attrs in parsed.elements if tag == "body"]
    assert body == [{}]
    assert "script" not in [tag for tag, _ in parsed.elements]
    for tag, attrs in parsed.elements:
        assert not [name for name in attrs if name.startswith("on") or name == "data-pwned"], tag
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/svg+xml;base64,")
    # The payloads are there, as text.
    assert "PWNED-3" in dom and "&lt;script&gt;document.title='PWNED-3'" in dom


def test_report_html_is_self_contained(hostile):
    html = (hostile.run_dir / "report.html").read_text()
    parsed = Elements()
    parsed.feed(html)
    for tag, attrs in parsed.elements:
        assert tag not in ("script", "link", "iframe", "object"), tag
        for name in ("src", "href"):
            value = attrs.get(name) or ""
            assert not re.match(r"^(https?:)?//", value), (tag, value)
    assert sum(tag == "img" for tag, _ in parsed.elements) >= 3  # heat, timeline, growth


def test_report_md_escapes_markup(hostile):
    markdown = (hostile.run_dir / "report.md").read_text()
    assert "PWNED-3" in markdown
    assert not re.search(r"<(script|img|b)\b", markdown, re.IGNORECASE)


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_format_prints_one_document(hostile, fmt, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    trace = hostile.run_dir / "trace"
    assert main(["report", str(trace), "--format", fmt, "--json", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    first = {"md": "## pt2doctor report", "html": "<!DOCTYPE html>", "json": "{"}[fmt]
    assert out.startswith(first)
    assert (tmp_path / "r.json").is_file()


def test_redacted_reports_have_no_source_and_no_absolute_path(hostile, tmp_path):
    out = tmp_path / "shared"
    args = ["--redact", "--md", str(out / "r.md"), "--html", str(out / "r.html")]
    assert (
        main(["report", str(hostile.run_dir / "trace"), "--json", str(out / "r.json"), *args]) == 0
    )
    for name in ("r.json", "r.md", "r.html"):
        text = (out / name).read_text()
        assert "data-pwned','5'" not in text, name  # the print(...) source line
        assert str(hostile.run_dir) not in text and "site-packages" not in text, name


def test_tlparse_links_compile_ids_to_its_pages(hostile, tmp_path):
    from pt2doctor.report.tlparse import find_tlparse

    if find_tlparse() is None:
        pytest.skip("tlparse is not installed")
    html_path = tmp_path / "out" / "report.html"
    assert main(["report", str(hostile.run_dir / "trace"), "--json", str(tmp_path / "r.json"),
                 "--html", str(html_path), "--tlparse"]) == 0  # fmt: skip
    links = re.findall(r'href="(tlparse/[^"#]+)', html_path.read_text())
    assert links and all((html_path.parent / link).is_file() for link in links)
    compile_ids = {cid for cid in re.findall(r"-_(\d+)_(\d+)_\d+/", " ".join(links))}
    assert {("0", "0"), ("0", "1")} <= compile_ids


def test_tlparse_without_html_is_a_usage_error(hostile, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(hostile.run_dir / "trace"), "--tlparse"]) == 2
    assert capsys.readouterr().err.startswith("pt2doctor: error: --tlparse")
