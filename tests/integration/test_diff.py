"""``pt2doctor diff`` on two real runs of tests/programs/run/run_diff.py: B (``--worse``) has
one extra recompile and one new graph break, and the diff must report exactly those.
Expected lines come from the program (``# MARK:``), not from pt2doctor's output."""

from __future__ import annotations

import json

import pytest

from oracles import marker_in
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

EAGER = ("--backend", "eager")
# Compile and call times of two eager runs on a shared 2-core machine differ by up to seconds
# and milliseconds: far floors keep this test about breaks and recompiles (time changes have
# their own unit tests).
QUIET = ("--noise-compile-s", "60", "--noise-call-s", "1")


@pytest.fixture(scope="module")
def runs(doctor_run):
    a = doctor_run("diff_a", EAGER, "run_diff")
    b = doctor_run("diff_b", EAGER, "run_diff", "--worse")
    assert a.returncode == 0 and b.returncode == 0, b.stderr[-3000:]
    return a, b


def _diff(capsys, *args: str) -> tuple[int, str]:
    rc = main(["diff", *args])
    return rc, capsys.readouterr().out


def test_diff_reports_exactly_the_new_break_and_the_extra_recompile(runs, capsys, programs_dir):
    a, b = runs
    rc, out = _diff(capsys, str(a.run_dir), str(b.run_dir), "--format", "json", *QUIET)
    assert rc == 0
    changes = {(c["kind"], c["subject"]): c for c in json.loads(out)["changes"]}
    line = marker_in(programs_dir / "run" / "run_diff.py", "break")
    scaled_line = next(
        i
        for i, text in enumerate((programs_dir / "run" / "run_diff.py").read_text().splitlines(), 1)
        if text.startswith("def scaled(")
    )
    scaled = f"scaled (run_diff.py:{scaled_line})"
    assert set(changes) == {
        ("new_break_site", f"run_diff.py:{line} normed"),
        ("frame", scaled),
    }
    frame = changes[("frame", scaled)]
    assert (frame["before"], frame["after"]) == (1, 2)
    assert frame["detail"].startswith("variants 1 → 2; causes {} → {python_constant}; ")
    assert all(change["regression"] for change in changes.values())


def test_fail_on_regression_exits_1_and_names_both_values(runs, capsys):
    a, b = runs
    rc, out = _diff(capsys, str(a.run_dir), str(b.run_dir), "--fail-on-regression", *QUIET)
    assert rc == 1
    text = " ".join(out.split())  # the terminal wraps at 80 columns
    assert "REGRESSION recompiles of frame scaled" in text
    assert "variants 1 → 2; causes {} → {python_constant}" in text
    assert "bounded → bounded" in text  # one variant before; a flag with 2 values after
    assert "2 regressions" in out


def test_same_run_and_its_report_json_have_no_difference(runs, capsys):
    a, _ = runs
    rc, out = _diff(capsys, str(a.run_dir), str(a.run_dir / "report.json"), "--fail-on-regression")
    assert rc == 0
    assert "No differences that matter." in out


def test_reverse_diff_is_an_improvement(runs, capsys):
    a, b = runs
    rc, out = _diff(
        capsys, str(b.run_dir), str(a.run_dir), "--format", "md", "--fail-on-regression", *QUIET
    )
    assert rc == 0
    assert "graph-break site gone" in out and "🔴" not in out


def test_diff_rejects_a_json_that_is_not_a_report(tmp_path, capsys):
    bogus = tmp_path / "x.json"
    bogus.write_text('{"hello": 1}')
    assert main(["diff", str(bogus), str(bogus)]) == 2
    assert "not a pt2doctor report.json" in capsys.readouterr().err
