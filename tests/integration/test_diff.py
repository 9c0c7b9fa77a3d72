"""``pt2doctor diff`` on two real runs of tests/programs/run/run_diff.py: B (``--worse``) has
one extra recompile and one new graph break, and the diff must report exactly those.
Expected lines come from the program (``# MARK:``), not from pt2doctor's output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
    assert "2 regressions among 2 changes" in out


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


def test_a_fixed_copy_under_another_name_is_diffed_as_the_same_program(
    runs, capsys, tmp_path, run_env, programs_dir
):
    """The user copies run_diff.py to run_diff_fixed.py (two blank lines added at the top:
    every line moves) and changes nothing else: its run against A is the same program, so
    no break site is new, no frame new, nothing regressed."""
    import subprocess
    import sys

    a, _ = runs
    copy = tmp_path / "run_diff_fixed.py"
    copy.write_text("\n\n" + (programs_dir / "run" / "run_diff.py").read_text())
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "run", "--out", str(tmp_path / "b"), *EAGER, "--",
         sys.executable, str(copy)],
        env=run_env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rc, out = _diff(capsys, str(a.run_dir), str(tmp_path / "b"), "--format", "json", *QUIET)
    assert rc == 0
    changes = json.loads(out)["changes"]
    assert not [c for c in changes if c["kind"] in ("new_break_site", "removed_break_site")]
    assert not [c for c in changes if c["regression"]], changes
    assert not [c for c in changes if c["kind"] == "frame"], changes


def test_a_site_that_moves_onto_a_fixed_sites_line_is_matched_by_its_code(
    capsys, tmp_path, programs_dir
):
    """run_two_breaks.py with its first break deleted (the fix): the second break moves up
    onto the first's line number. The diff says the first is gone and nothing is new; the
    same line number with other code is not the same site."""
    from oracles import doctor_report

    program = programs_dir / "run" / "run_two_breaks.py"
    first = marker_in(program, "first")
    fixed = tmp_path / "fixed" / program.name
    fixed.parent.mkdir()
    lines = program.read_text().splitlines(keepends=True)
    fixed.write_text("".join(lines[: first - 1] + lines[first:]))
    doctor_report(tmp_path / "a", program)
    doctor_report(tmp_path / "b", fixed)
    rc, out = _diff(capsys, str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json", *QUIET)
    assert rc == 0
    sites = [(c["kind"], c["subject"]) for c in json.loads(out)["changes"]
             if c["kind"].endswith("break_site")]  # fmt: skip
    assert sites == [("removed_break_site", f"{program.name}:{first} step")]


def test_a_custom_pass_given_a_uuid_is_a_cache_bypass_turned_hit_and_addresses_are_no_change(
    tmp_path, capsys
):
    """The blind service whose plain-function post-grad pass bypasses the FX graph cache,
    then the same file fixed the way its author did (a CustomGraphPass with ``uuid()``, which
    moves ``forward`` down by a few lines): started twice as written, once fixed to fill the
    cache and once more. Two starts of one program differ in nothing but the pass's address
    (masked); written → fixed is the bypass turned hit, an improvement; fixed → written the
    same, a regression. The truth is each run's own cache lookups, from its TORCH_TRACE."""
    import shutil

    from oracles import doctor_report

    blind = Path(__file__).resolve().parents[1] / "programs" / "real" / "blind"
    service = tmp_path / "service.py"

    def start(name: str, source: str) -> tuple[Path, dict[str, Any]]:
        shutil.copy(blind / source, service)
        report = doctor_report(tmp_path / name, service)
        statuses = {c["caches"]["fx_graph"]["status"] for c in report["compiles"]}
        return tmp_path / name, {"report": report, "fx_graph": statuses}

    first, written = start("written", "custom_pass_coldstart.py")
    second, again = start("again", "custom_pass_coldstart.py")
    start("fill", "custom_pass_coldstart_fixed.py")
    fixed_dir, fixed = start("fixed", "custom_pass_coldstart_fixed.py")
    assert written["fx_graph"] == again["fx_graph"] == {"bypass"} and fixed["fx_graph"] == {"hit"}

    def changes(a: Path, b: Path) -> list[dict[str, Any]]:
        _, out = _diff(capsys, str(a), str(b), "--format", "json", *QUIET)
        return json.loads(out)["changes"]

    assert not [c for c in changes(first, second) if c["kind"] == "environment"]
    better = [c for c in changes(second, fixed_dir) if c["kind"] == "cache_miss_cause"]
    assert better and all(not c["regression"] and "B hit where A bypassed" in c["detail"]
                          for c in better)  # fmt: skip
    worse = [c for c in changes(fixed_dir, second) if c["kind"] == "cache_miss_cause"]
    assert worse and all(c["regression"] for c in worse)


def test_a_fixed_program_diffed_both_ways_reads_as_one_change_seen_from_each_side(
    capsys, tmp_path, run_env, programs_dir
):
    """run_diff_counter.py as first written (saved as infer_old.py: a branch that breaks the
    graph, and a counter that makes the resumed frame recompile to the limit) and fixed
    (``--fixed``: torch.where, no counter; the same checksum). Old → fixed: the break site is
    gone, named by the old file, and so is the recompiling frame, as changes, not
    regressions; fixed → old: both are regressions. A graph's time per call is not
    comparable either way (the break changed what the graph covers)."""
    import shutil
    import subprocess
    import sys

    old = tmp_path / "infer_old.py"
    shutil.copyfile(programs_dir / "run" / "run_diff_counter.py", old)
    runs = {}
    for name, program, args in (("a", old, ()), ("b", programs_dir / "run" / "run_diff_counter.py",
                                                  ("--fixed",))):  # fmt: skip
        done = subprocess.run(
            [sys.executable, "-m", "pt2doctor", "run", "--out", str(tmp_path / name), "--",
             sys.executable, str(program), *args],
            env=run_env, capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        runs[name] = (tmp_path / name / "stdout.log").read_text()
    assert runs["a"] == runs["b"]  # the fix changes no result
    # The two frames Dynamo resumes after the break (one per way it goes) recompile on the
    # counter: the one that changed once gets the counter's fix, not Dynamo's hint, and both
    # are one cause with the limit hit (one block in the reports).
    report = json.loads((tmp_path / "a" / "report.json").read_text())
    twins = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert len(twins) == 2 and len({f["cause"] for f in twins}) == 1 and twins[0]["cause"]
    assert all(f["advice"].startswith("self.calls is an int attribute") for f in twins)
    (limit,) = [f for f in report["findings"] if f["code"] == "recompile_limit_hit"]
    assert limit["cause"] == twins[0]["cause"]
    _, out = _diff(capsys, str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json", *QUIET)
    forward = json.loads(out)["changes"]
    _, out = _diff(capsys, str(tmp_path / "b"), str(tmp_path / "a"), "--format", "json", *QUIET)
    backward = json.loads(out)["changes"]
    line = marker_in(old, "branch")
    (gone,) = [c for c in forward if c["kind"] == "removed_break_site"]
    assert gone["subject"] == f"infer_old.py:{line} forward" and not gone["regression"]
    frames = [c for c in forward if c["kind"] == "frame"]
    assert frames and all(c["after"] == 0 and not c["regression"] for c in frames), frames
    assert any("A hit the recompile limit" in c["detail"] for c in frames)
    assert not [c for c in forward if c["regression"]], forward
    (new,) = [c for c in backward if c["kind"] == "new_break_site"]
    assert new["regression"]
    assert [c for c in backward if c["kind"] == "frame" and c["regression"] and c["before"] == 0]
    for change in forward + backward:
        if change["kind"] == "time_per_call_s":
            assert "not comparable" in change["detail"] and not change["regression"]
