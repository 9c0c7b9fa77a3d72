"""report.json read back (report/document.py): the one serializer of every report kind.

Every stored report of the real-run fixtures (run, check, ablate) round-trips byte for byte;
``pt2doctor report REPORT.json`` renders a stored report again as its goldens say, with
nothing re-analysed; a report written before fields were added still renders; and what is not
a report this version reads is one line and exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from goldens import GOLDEN
from pt2doctor.ablate.types import AblateReport
from pt2doctor.check.types import CheckReport
from pt2doctor.cli import main
from pt2doctor.report.document import REQUIRED, SCHEMA_VERSION, dumps_report, loads_report
from pt2doctor.report.types import ProfileReport, RunReport

DATA = Path(__file__).resolve().parents[1] / "data"
STORED = sorted(
    path for folder in ("reports", "checks", "ablates") for path in (DATA / folder).glob("*.json")
)


def test_the_required_keys_are_the_typed_reports_own() -> None:
    """The serializer's table is the TypedDicts' required keys, kind by kind."""
    typed = {"run": RunReport, "check": CheckReport, "ablate": AblateReport,
             "profile": ProfileReport}  # fmt: skip
    for kind, report_type in typed.items():
        assert set(REQUIRED[kind]) == set(report_type.__required_keys__), kind  # type: ignore[attr-defined]


@pytest.mark.parametrize("path", STORED, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_stored_report_reads_back_as_it_was_written(path: Path) -> None:
    """Every part comes back as written; a fixture older than a field gains only that field,
    empty."""
    original = json.loads(path.read_bytes())
    loaded = loads_report(path.read_bytes(), str(path))
    assert {key: loaded[key] for key in original} == original
    for key in set(loaded) - set(original):
        assert loaded[key] in (None, [], {}), key
    assert dumps_report(loads_report(dumps_report(loaded), "again")) == dumps_report(loaded)


# The goldens each stored report's Markdown is held to (tests/unit/test_*golden.py).
MARKDOWN_GOLDENS = [(path, GOLDEN / f"{path.stem}.md") for path in STORED]


@pytest.mark.parametrize("path,golden", MARKDOWN_GOLDENS, ids=lambda p: p.stem)
def test_report_renders_a_stored_report_as_its_golden(
    path: Path, golden: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(["report", str(path), "--format", "md"]) == 0
    assert capsys.readouterr().out == golden.read_text()
    assert not list(tmp_path.iterdir())  # nothing written beside it unless asked


def _old_run_report() -> dict[str, Any]:
    """demo_eager.json as a report written before ``kind``, ``plan``, ``cold_start`` and the
    findings' ``subject``/``facts`` existed."""
    report: dict[str, Any] = json.loads((DATA / "reports" / "demo_eager.json").read_text())
    for key in ("kind", "plan", "cold_start"):
        report.pop(key, None)
    for finding in report["findings"]:
        finding.pop("subject", None)
        finding.pop("facts", None)
    return report


@pytest.mark.parametrize("fmt", ["term", "md", "html", "json"])
def test_an_older_report_renders_in_every_format(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _old_run_report()
    path = tmp_path / "old.json"
    path.write_bytes(dumps_report(old))
    assert main(["report", str(path), "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        upgraded = json.loads(out)
        assert upgraded["plan"] == [] and upgraded["cold_start"] is None
        assert upgraded["findings"] == old["findings"]
    else:
        assert old["findings"][0]["code"] in out


def _newer(report: dict[str, Any]) -> dict[str, Any]:
    return {**report, "schema_version": SCHEMA_VERSION + 1}


BAD = {
    "invalid JSON": (b'{"schema_version": 2,', "is not valid JSON"),
    "another JSON file": (b'{"name": "x"}', "is not a pt2doctor report.json (no schema_version)"),
    "an unknown kind": (b'{"schema_version": 2, "kind": "bench"}', "unknown report kind 'bench'"),
    "a missing part": (b'{"schema_version": 2, "kind": "check"}', "is not a pt2doctor check"),
    "a newer schema": (
        dumps_report(_newer(_old_run_report())),
        f"written by a newer pt2doctor (schema_version {SCHEMA_VERSION + 1}",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_what_is_not_a_report_it_reads_is_one_line_and_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, says = BAD[case]
    path = tmp_path / "report.json"
    path.write_bytes(data)
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("pt2doctor: error:"), captured.err
    assert says in lines[0] and "Traceback" not in captured.err + captured.out
    assert main(["diff", str(path), str(path)]) == 2  # diff reads it through the same door
    assert says in capsys.readouterr().err


GPU_TRACE = (
    DATA.parents[1].parent / "shared" / "corpus" / "gpu-profiles" / "a100_event_sync.json.gz"
)


@pytest.mark.corpus
@pytest.mark.skipif(not GPU_TRACE.is_file(), reason="../shared/corpus/gpu-profiles is not here")
def test_a_profile_report_read_back_renders_as_the_trace_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A profiler trace recorded on an A100 by others: its report.json, rendered again, says
    what reporting on the trace itself says."""
    stored = tmp_path / "profile.json"
    assert main(["report", str(GPU_TRACE), "--json", str(stored), "--format", "md"]) == 0
    from_trace = capsys.readouterr().out
    assert json.loads(stored.read_text())["kind"] == "profile"
    assert main(["report", str(stored), "--format", "md"]) == 0
    assert capsys.readouterr().out == from_trace
