"""The performance and cold-start fixes (tests/perf_fix_catalog.py), the findings that name
them and the tests that apply them stay together: every such finding has a fix catalogued,
every quote is in its source, every test exists and runs its program, and every fix is applied
in at least two programs or is a listed gap, and the gaps list nothing that is covered."""

from __future__ import annotations

import ast
from pathlib import Path

from perf_fix_catalog import FIXES, GAPS
from pt2doctor.analysis.findings.codes import SPECS

TESTS = Path(__file__).resolve().parents[1]
ANALYSIS = TESTS.parent / "src" / "pt2doctor" / "analysis"
PROGRAMS_PER_FIX = 2
NOT_FIXES = {"noisy_profile": "about the measurement, not the program"}


def test_every_performance_and_cold_start_finding_has_a_fix_catalogued() -> None:
    codes = {code for code, spec in SPECS.items()
             if spec.area in ("profile", "device", "cold start") or code == "fallback_op"}  # fmt: skip
    assert codes - set(NOT_FIXES) == {entry.code for entry in FIXES.values()}


def test_every_quote_is_in_its_findings_source() -> None:
    for fix_id, entry in FIXES.items():
        assert entry.quote in (ANALYSIS / entry.source).read_text(), fix_id


def _test_functions(file: str) -> dict[str, str]:
    tree = ast.parse((TESTS / "integration" / file).read_text())
    return {node.name: ast.get_source_segment((TESTS / "integration" / file).read_text(), node)
            or "" for node in tree.body if isinstance(node, ast.FunctionDef)}  # fmt: skip


def test_every_test_named_exists_and_its_program_is_in_its_file() -> None:
    for fix_id, entry in FIXES.items():
        for test, program in entry.applied:
            file, _, name = test.partition("::")
            assert name in _test_functions(file), (fix_id, test)
            assert (TESTS / "programs" / f"{program}.py").is_file(), (fix_id, program)
            text = (TESTS / "integration" / file).read_text()
            assert Path(program).name in text, (fix_id, test, program)


def test_every_fix_is_applied_in_two_programs_or_is_a_gap_said_why() -> None:
    short = {fix_id for fix_id, entry in FIXES.items()
             if len({program for _, program in entry.applied}) < PROGRAMS_PER_FIX}  # fmt: skip
    assert short == set(GAPS), short ^ set(GAPS)
    assert all(reason.strip() for reason in GAPS.values())
