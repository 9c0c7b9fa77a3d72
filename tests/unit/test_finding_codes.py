"""The finding registry (analysis/findings/codes.py): every code produced is registered,
every registered code is produced somewhere and documented, and a finding the registry does
not allow cannot be made."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pt2doctor.analysis.findings.codes import CODES, SPECS, docs_with_table
from pt2doctor.analysis.findings.model import Finding, Subject

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "pt2doctor"
SCHEMA_DOC = REPO / "docs" / "report-schema.md"


def test_every_code_has_one_entry_with_a_plan_step_or_none_declared() -> None:
    assert set(SPECS) == set(CODES)
    for code, entry in SPECS.items():
        assert entry.code == code
        assert entry.severities, code
        assert entry.rule.strip(), code
        # a step, or None: "not an action" is declared, never defaulted
        assert entry.step in (None, "correctness", "recompiles", "graph breaks", "performance")


def test_the_docs_table_is_the_registry_s() -> None:
    """docs/report-schema.md holds the generated table; `python -m
    pt2doctor.analysis.findings.codes` rewrites it."""
    text = SCHEMA_DOC.read_text(encoding="utf-8")
    assert docs_with_table(text) == text, "run: python -m pt2doctor.analysis.findings.codes"
    for code in CODES:
        assert f"| `{code}` |" in text


def _producer_sources() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for path in SRC.rglob("*.py")
        if path.name not in ("codes.py",) and "__pycache__" not in path.parts
    )


def test_every_registered_code_is_produced_by_some_analysis() -> None:
    """No dead entry: each code appears as a string in a module other than the registry."""
    sources = _producer_sources()
    missing = [code for code in CODES if f'"{code}"' not in sources]
    assert not missing, missing


def test_an_unregistered_code_or_a_severity_its_entry_forbids_is_refused() -> None:
    with pytest.raises(ValueError, match="not registered"):
        Finding("warning", "made_up_code", "t", "a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be"):
        Finding("info", "compile_failure", "t", "a")
    assert Finding("info", "graph_break", "t", "a", subject=Subject("site")).code == "graph_break"


def test_every_code_in_the_stored_reports_is_registered() -> None:
    """The report fixtures the goldens render (real runs) hold only registered codes."""
    seen = set()
    for path in (REPO / "tests" / "data").rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        seen |= set(re.findall(r'"code": "([a-z_]+)"', text))
        if '"findings"' in text:
            report = json.loads(text)
            for finding in report.get("findings", []) if isinstance(report, dict) else []:
                assert finding["code"] in SPECS, (path, finding["code"])
    assert seen & set(CODES)


# The places that once read back text the tool itself wrote (issue 35), by what they matched:
# a finding title, a one-line error summary, a human source, a guard's text. Each now reads data.
OWN_TEXT_READERS = {
    "report/format.py": ["_RECOMPILED", '"ms per call" in'],
    "analysis/findings/plan.py": ["def _subject(", ".partition(\")\")"],
    "ablate/report.py": ["_AT = ", "(at (\\S+)"],
    "report/terminal.py": ["_KWARG", "wrapped_name("],
    "analysis/diff/reports.py": ["_TENSOR = ", "size|stride) mismatch"],
    "analysis/recompiles/sources.py": [
        "def argument_of(", "def tensor_and_dim(", "def root_of(", "def collapsed_unit(",
        "def index_pattern(",
    ],
    "analysis/recompiles/changes.py": ['rpartition(".shape[")', 'endswith(".training")'],
    "analysis/recompiles/frame_names.py": ["def wrapped_name(", "def names_its_wrapper("],
    "report/frame_story.py": ["names_its_wrapper"],
    "check/perf_views.py": ["names_its_wrapper"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(OWN_TEXT_READERS))
def test_no_module_reads_back_text_the_tool_wrote(module: str) -> None:
    text = (SRC / module).read_text(encoding="utf-8")
    found = [pattern for pattern in OWN_TEXT_READERS[module] if pattern in text]
    assert not found, f"{module} reads its own output again: {found}"
