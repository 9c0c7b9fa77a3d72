"""report.html / report.md of real check runs, ``--format`` on check, and ``pt2doctor diff`` of
two real check runs.

- tests/programs/check/hostile.py: case names, cell ids, an error message and a guarded string
  that are HTML and script; its report.html is opened in headless Chromium (as in
  test_html_report.py): no payload may run or become an element.
- planted_accuracy.py under ``eager`` vs ``relu_accuracy_error_TESTING_ONLY`` (relu becomes
  x + 1): the diff names exactly the two relu cells and the alignment clause.
- variants_budget.py with one shape bucket vs all three, budget 1 variant per frame: the diff
  names the variant count 1 -> 2, the clause, and the two new cells.
Speedups of two runs always differ a little; each speedup change must agree with its intervals.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_html_report import Elements, open_in_chromium
from test_html_report import chromium as chromium  # the fixture, for this module's tests

from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

CHECK_DIR = Path(__file__).resolve().parents[1] / "programs" / "check"
DATA = Path(__file__).resolve().parents[1] / "data"
TIMEOUT_S = 600
QUICK = ("--no-cold-start", "--iterations", "6")
PAYLOADS = ("PWNED-1", "PWNED-2", "PWNED-3", "data-pwned','4'", "PWNED-5")


def check(tmp: Path, env: dict[str, str], name: str, case_file: str, *flags: str) -> Path:
    """``pt2doctor check`` in a subprocess; its run directory."""
    out = tmp / name
    command = [sys.executable, "-m", "pt2doctor", "check", str(CHECK_DIR / case_file),
               "--out", str(out), *flags]  # fmt: skip
    done = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert (out / "report.json").is_file(), done.stderr[-3000:]
    (out / "stdout.txt").write_text(done.stdout)
    (out / "returncode").write_text(str(done.returncode))
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory, run_env: dict[str, str]) -> Path:
    tmp = tmp_path_factory.mktemp("hostile-check")
    out = check(tmp, run_env, "run", "hostile.py", "--backend", "eager", *QUICK,
                "--format", "html", "--md", str(tmp / "extra" / "r.md"))  # fmt: skip
    raw = (out / "report.json").read_text()
    missing = [mark for mark in PAYLOADS if mark not in raw]
    assert not missing, f"the check no longer carries payloads {missing}: the test proves nothing"
    return out


def test_no_script_from_a_check_report_runs_in_a_browser(hostile, chromium, tmp_path):
    screenshot = tmp_path / "hostile-check.png"
    dom = open_in_chromium(chromium, hostile / "report.html", screenshot)
    assert screenshot.stat().st_size > 10_000 and screenshot.read_bytes()[:4] == b"\x89PNG"
    parsed = Elements()
    parsed.feed(dom)
    assert parsed.title == "pt2doctor check report"
    assert [attrs for tag, attrs in parsed.elements if tag == "body"] == [{}]
    tags = [tag for tag, _ in parsed.elements]
    assert "script" not in tags and "svg" not in tags
    for tag, attrs in parsed.elements:
        assert not [name for name in attrs if name.startswith("on") or name == "data-pwned"], tag
        if tag == "img":
            assert (attrs.get("src") or "").startswith("data:image/svg+xml;base64,")
    report = json.loads((hostile / "report.json").read_text())
    curves = sum(len((entry.get("loss_curve") or {}).get("eager") or []) > 1
                 for cell in report["cells"] for entry in cell["variants"].values())  # fmt: skip
    assert curves == 2  # the training cell under both variants
    assert sum(tag == "img" for tag in tags) == 2 + curves  # latency, speedup, loss curves
    # The payloads are there, as text: the case name, the error, the failed guard.
    assert "&lt;img src=x onerror=document.title='PWNED-1'&gt;" in dom
    assert "&lt;/script&gt;&lt;script&gt;document.title='PWNED-3'" in dom
    assert "self.tag == \"&lt;script&gt;document.body.setAttribute('data-pwned','4')" in dom
    assert re.search(
        r"\d+ compiles? of the block", dom
    )  # the regional variant's block-sharing line


def test_check_writes_three_reports_and_prints_the_chosen_one(hostile):
    assert (hostile / "returncode").read_text() == "1"  # the format does not change the exit code
    stdout = (hostile / "stdout.txt").read_text()
    assert stdout.startswith("<!DOCTYPE html>") and "pt2doctor check report" in stdout
    assert (hostile / "report.md").read_text() == (hostile.parent / "extra" / "r.md").read_text()
    markdown = (hostile / "report.md").read_text()
    assert markdown.startswith("## pt2doctor check\n\n❌ **contract failed** (2 clauses)")
    assert "PWNED-3" in markdown
    assert not re.search(r"<(script|img|svg|b)\b", markdown, re.IGNORECASE)


def _changes(capsys, a: Path, b: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    rc = main(["diff", str(a), str(b), "--format", "json", *flags])
    return rc, json.loads(capsys.readouterr().out)


def _split(diff: dict[str, Any]) -> tuple[dict[tuple[str, str], dict], list[dict]]:
    """Changes other than speedups by (kind, subject); the speedup changes."""
    others = {(c["kind"], c["subject"]): c for c in diff["changes"] if c["kind"] != "speedup"}
    return others, [c for c in diff["changes"] if c["kind"] == "speedup"]


def _speedups_agree_with_intervals(a: Path, b: Path, speedups: list[dict]) -> None:
    groups = []
    for path in (a, b):
        report = json.loads((path / "report.json").read_text())
        groups.append({f"{v['name']} {g['group']}": g["steady"] for v in report["variants"]
                       for g in v["groups"]})  # fmt: skip
    for change in speedups:
        (low_a, high_a), (low_b, high_b) = (g[change["subject"]]["speedup_ci95"] for g in groups)
        assert change["regression"] == (high_b < low_a), change
        assert change["detail"].startswith("within noise") == (high_b >= low_a and low_b <= high_a)


@pytest.fixture(scope="module")
def accuracy_runs(tmp_path_factory: pytest.TempPathFactory, run_env: dict[str, str]):
    tmp = tmp_path_factory.mktemp("accuracy-diff")
    good = check(tmp, run_env, "good", "planted_accuracy.py", "--backend", "eager", *QUICK)
    expected = tmp / "last-good.json"  # an earlier report's environment, another torch
    expected.write_text(json.dumps({"environment": {"torch_version": "1.0.0"}}))
    bad = check(tmp, run_env, "bad", "planted_accuracy.py", "--backend",
                "relu_accuracy_error_TESTING_ONLY", "--expect-env", str(expected),
                *QUICK)  # fmt: skip
    return good, bad


def test_planted_accuracy_error_fails_exactly_the_relu_cells(accuracy_runs) -> None:
    _, bad = accuracy_runs
    report = json.loads((bad / "report.json").read_text())
    assert (bad / "returncode").read_text() == "1"
    cells = {c["id"]: c for c in report["cells"]}
    assert {cell: c["verdict"] for cell, c in cells.items()} == {
        "net/b4/eval/act=relu": "fail",
        "net/b4/eval/act=tanh": "pass",
        "net/b4/train/act=relu": "fail",
        "net/b4/train/act=tanh": "pass",
    }
    output = next(t for t in cells["net/b4/eval/act=relu"]["variants"]["default"]["tensors"])
    # relu(y) became y + 1: where y > 0 the error is exactly 1.
    assert output["max_abs_error"] == pytest.approx(1.0, abs=1e-5)
    assert not output["passed"] and output["rule"] == "allclose and rmse failed"
    # Where: Net has one child (lin), which passes compiled alone; Net still fails with lin
    # left eager: the relu in its own forward (the program's line: return torch.relu(y) ...).
    where = cells["net/b4/eval/act=relu"]["variants"]["default"]["where"]
    assert where["culprit"] == "" and where["kind"] == "Net" and where["own_code"]
    forward = next(n for n, text in enumerate((CHECK_DIR / "planted_accuracy.py").read_text()
                                              .splitlines(), 1) if "def forward" in text)  # fmt: skip
    assert where["source"].endswith(f"planted_accuracy.py:{forward}")
    assert (
        "leaves eager at the model (Net, planted_accuracy.py" in (bad / "report.html").read_text()
    )
    assert "where" not in cells["net/b4/eval/act=tanh"]["variants"]["default"]
    (clause,) = [c for c in report["contract"]["clauses"] if c["name"] == "alignment"]
    assert clause["ok"] is False
    assert set(clause["detail"].split(", ")) == {"net/b4/eval/act=relu", "net/b4/train/act=relu"}
    # --expect-env: the environment it found against the one expected.
    found = report["environment"]["torch_version"]
    assert found == importlib.metadata.version("torch")
    assert report["environment_changes"] == [f"torch_version: expected '1.0.0', found '{found}'"]
    assert "environment changed" in (bad / "stdout.txt").read_text()


def test_diff_of_check_runs_names_the_planted_accuracy_failure(accuracy_runs, capsys):
    good, bad = accuracy_runs
    rc, diff = _changes(capsys, good, bad / "report.json")
    assert rc == 0
    others, speedups = _split(diff)
    relu = ("net/b4/eval/act=relu", "net/b4/train/act=relu")
    numerics = {  # the training cell's forward diverges too: it names a module as well
        ("diverging_module", f"{relu[0]} default"),
        ("diverging_module", f"{relu[1]} default"),
        ("loss_leaves_band", f"{relu[1]} default"),
    }
    assert (
        set(others)
        == {("contract_clause", "alignment")} | {("cell_verdict", c) for c in relu} | numerics
    )
    module = others[("diverging_module", f"{relu[0]} default")]
    bad_report = json.loads((bad / "report.json").read_text())
    [eval_relu] = [c for c in bad_report["cells"] if c["id"] == relu[0]]
    culprit = eval_relu["variants"]["default"]["where"]["culprit"]
    assert (module["before"], module["after"], module["regression"]) == (
        None,
        culprit or "<model>",
        True,
    )
    band = others[("loss_leaves_band", f"{relu[1]} default")]
    assert band["before"] is None and band["after"] == 1 and band["regression"]
    for cell in relu:
        verdict = others[("cell_verdict", cell)]
        assert (verdict["before"], verdict["after"], verdict["regression"]) == (
            "pass",
            "fail",
            True,
        )
    clause = others[("contract_clause", "alignment")]
    assert clause["regression"] and clause["detail"].startswith("ok → FAIL")
    _speedups_agree_with_intervals(good, bad, speedups)
    rc = main(["diff", str(good), str(bad), "--fail-on-regression"])
    out = capsys.readouterr().out
    assert rc == 1
    assert "REGRESSION cell verdict: net/b4/eval/act=relu: pass → fail" in out
    # Backwards, the same changes are improvements.
    rc, back = _changes(capsys, bad, good, "--fail-on-regression")
    others, _ = _split(back)
    assert (
        set(others)
        == {("contract_clause", "alignment")} | {("cell_verdict", c) for c in relu} | numerics
    )
    assert not any(c["regression"] for c in others.values())


def test_diff_of_check_runs_names_the_extra_variant(tmp_path, run_env, capsys):
    budget = tmp_path / "pt2doctor.toml"
    budget.write_text("max_variants_per_frame = 1\n")
    flags = ("--backend", "eager", *QUICK, "--budget", str(budget))
    one = check(tmp_path, run_env, "one", "variants_budget.py", *flags, "--cells", "grow/b2")
    three = check(tmp_path, run_env, "three", "variants_budget.py", *flags, "--cells", "grow/*")
    assert (one / "returncode").read_text() == "0" and (three / "returncode").read_text() == "1"
    rc, diff = _changes(capsys, one, three, "--fail-on-regression")
    assert rc == 1
    others, speedups = _split(diff)
    group = "default grow/float32/eval/cpu"
    assert set(others) == {
        ("contract_clause", "max_variants_per_frame"),
        ("max_variants", group),
        ("new_cell", "grow/b3"),
        ("new_cell", "grow/b5"),
    }
    variants = others[("max_variants", group)]
    assert (variants["before"], variants["after"], variants["regression"]) == (1, 2, True)
    clause = others[("contract_clause", "max_variants_per_frame")]
    assert (clause["before"], clause["after"], clause["regression"]) == (1, 2, True)
    assert not others[("new_cell", "grow/b3")]["regression"]
    _speedups_agree_with_intervals(one, three, speedups)


def test_diff_of_a_check_report_with_a_run_report_is_an_error(capsys):
    rc = main(["diff", str(DATA / "checks" / "check_budget.json"),
               str(DATA / "reports" / "hostile.json")])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("pt2doctor: error: cannot diff a check report") and err.count("\n") == 1


def test_a_model_that_mutates_its_input_gets_a_note(tmp_path, run_env) -> None:
    """mutates_input.py scales its input in place: under aot_eager (functionalized: compiled
    code writes the input back with its own copy) the input's value after the call is one
    more compared tensor, equal to eager's, and the cell notes the mutation; the twin that
    scales out of place has neither (issue 39)."""
    out = check(tmp_path, run_env, "run", "mutates_input.py", "--backend", "aot_eager", *QUICK)
    report = json.loads((out / "report.json").read_text())
    cells = {c["id"]: c for c in report["cells"]}
    for mode in ("eval", "train"):
        mutating = cells[f"net/b4/{mode}/in_place=True"]
        entry = mutating["variants"]["default"]
        assert entry["mutated_inputs"] == ["input.0"]
        (row,) = [t for t in entry["tensors"] if t["name"] == "mutated input.0"]
        assert row["passed"] and row["shape"] == [4, 16], row
        assert [n for n in mutating["notes"] if "mutates input.0 in place" in n], mutating
        plain = cells[f"net/b4/{mode}/in_place=False"]
        assert plain["variants"]["default"]["mutated_inputs"] == []
        assert not [n for n in plain["notes"] if "mutates" in n]
    assert "mutates input.0 in place" in (out / "report.html").read_text()
    # The notes are printed under the cell table, wrapped at the terminal's width.
    assert "mutates input.0 in place" in " ".join((out / "stdout.txt").read_text().split())


def test_a_training_loss_curve_leaves_eager_s_band_at_the_step_known_by_construction() -> None:
    """late_divergence.py: 50 SGD steps; the compiled model (a backend that scales sin by 1.5)
    computes as eager until the counter passes 30, then adds a scaled sin. The alignment's
    loss curve has eager, fp64 and compiled at every step, and leaves eager's band exactly at
    step 30 (0-based); the cell's note says so (step 31 of 50)."""
    import importlib.util

    import torch

    from pt2doctor.cases.align import align_cell
    from pt2doctor.cases.case import cells
    from pt2doctor.check.report import cell_notes

    path = Path(__file__).resolve().parents[1] / "programs" / "check" / "late_divergence.py"
    spec = importlib.util.spec_from_file_location("late_divergence", path)
    assert spec is not None and spec.loader is not None
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    [case] = program.CASES
    [cell] = cells(case)
    torch.compiler.reset()
    found = align_cell(case, cell, lambda m: torch.compile(m, backend=program.sin_scaling_backend))
    curve = found["loss_curve"]
    assert curve["steps"] == len(curve["eager"]) == len(curve["compiled"]) == 50
    assert curve["left_at"] == program.LATE
    assert curve["compiled"][: program.LATE] == pytest.approx(curve["eager"][: program.LATE])
    assert found["verdict"] == "fail"
    notes = cell_notes({"verdict": "fail", "case": "late", "axes": {"train": True},
                        "variants": {"default": found}}, [])  # fmt: skip
    assert any("leaves eager's band at step 31 of 50" in note for note in notes), notes
    import base64

    from pt2doctor.report.charts import draw_chart

    uri = draw_chart({"kind": "loss", "title": "loss", **curve})
    svg = base64.b64decode(uri.split(",", 1)[1]).decode()
    assert svg.count("<polyline") == 3 and "leaves the band at step 31" in svg
