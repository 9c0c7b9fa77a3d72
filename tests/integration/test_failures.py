"""Failing programs that define what fails in the script itself (tests/programs/failures):
``ablate`` in script mode names the user's pass or op, and its repro, copied alone into an
empty folder and run with plain ``python -I``, fails the same way; the same repro with the
user's definition fixed does not fail, so the check can fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in

pytestmark = pytest.mark.torch_run

FAILURES = Path(__file__).resolve().parents[1] / "programs" / "failures"
TIMEOUT_S = 600


def _ablate(
    program: Path, cwd: Path, out: Path, env: dict[str, str], *flags: str
) -> dict[str, Any]:
    command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out), *flags, "--",
               sys.executable, str(program)]  # fmt: skip
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def _handed_over(report: dict[str, Any], tmp: Path) -> Path:
    """The repro folder alone in an empty folder (the original removed)."""
    folder = Path(report["repro"]["path"]).parent
    copy = tmp / "empty" / "repro"
    shutil.copytree(folder, copy)
    shutil.rmtree(folder)
    assert sorted(p.name for p in copy.iterdir()) == ["program_defs.py", "repro.py"]
    return copy


def _run(repro: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    plain = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-I", str(repro / "repro.py")], cwd=repro.parent,
                          env=plain, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)  # fmt: skip


def test_a_pass_defined_in_the_script_is_copied_into_a_repro_that_fails_the_same_way(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    program = FAILURES / "inline_pass.py"
    report = _ablate(program, FAILURES, tmp_path / "out", run_env, "--no-verify-repro")
    verdict = report["conclusion"]
    assert (verdict["category"], verdict["user_side"]["kind"]) == ("user_side", "user_pass")
    assert verdict["user_side"]["function"] == "layout_pass"
    repro = report["repro"]
    assert repro["standalone"] is True and repro["not_standalone_because"] == []
    copy = _handed_over(report, tmp_path)
    defs = (copy / "program_defs.py").read_text()
    assert "def layout_pass" in defs and "def is_matmul" in defs and "MATMULS = " in defs
    assert "torch.compile(model)" not in defs  # the training loop stays out
    failed = _run(copy, run_env)
    assert failed.returncode == 1, failed.stderr[-2000:]
    assert "REPRODUCED: compiling the graph raised RuntimeError: layout_pass: addmm needs a 4-d" \
        in failed.stdout  # fmt: skip
    raise_line = 'raise RuntimeError(f"layout_pass: {node.name} needs a 4-d input")'
    assert raise_line in program.read_text().splitlines()[marker_in(program, "raise") - 1]
    (copy / "program_defs.py").write_text(defs.replace(raise_line, "pass"))  # the user's fix
    fixed = _run(copy, run_env)
    assert fixed.returncode == 0 and "not reproduced" in fixed.stdout, fixed.stderr[-2000:]


def test_a_custom_op_defined_in_the_script_is_copied_and_its_fake_is_the_cause(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    program = FAILURES / "inline_custom_op.py"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    report = _ablate(program, elsewhere, tmp_path / "out", run_env)
    verdict = report["conclusion"]
    assert (verdict["category"], verdict["user_side"]["kind"]) == ("user_side", "custom_op_fake")
    assert verdict["user_side"]["op"] == "pt2doctor_inline.row_norm.default"
    verified = report["repro"]["verified"]
    assert verified["same_failure"] is True and verified["reproduces"] is True
    assert verified["expected"].startswith("AssertionError: wrong number of dimensions")
    copy = _handed_over(report, tmp_path)
    failed = _run(copy, run_env)
    assert failed.returncode == 1, failed.stderr[-2000:]
    assert "AssertionError: wrong number of dimensions" in failed.stdout
    assert "torch.ops.pt2doctor_inline.row_norm.default" in failed.stdout
    defs = (copy / "program_defs.py").read_text()
    wrong = "return torch.empty_like(x)  # MARK:wrong_fake"
    assert wrong in defs
    (copy / "program_defs.py").write_text(defs.replace(wrong, "return x.new_empty(x.shape[:-1])"))
    fixed = _run(copy, run_env)
    assert fixed.returncode == 0 and "not reproduced" in fixed.stdout, fixed.stderr[-2000:]


def test_wrong_numbers_from_a_pass_in_the_script_get_a_comparing_repro(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """Wrong numbers, no crash, in script mode with an accuracy check: the Inductor rung run
    again without the program's hooks passes, so the pass is the cause; the repro compares
    the compiled graph with the same graph run eagerly, and fails alone in an empty folder;
    with the pass fixed in program_defs.py it does not."""
    program = FAILURES / "inline_wrong_pass.py"
    saved = tmp_path / "saved"
    check = f"{sys.executable} {FAILURES / 'check_saved.py'} {saved}"
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out), "--accuracy-check",
               check, "--", sys.executable, str(program), str(saved)]  # fmt: skip
    done = subprocess.run(command, cwd=FAILURES, env=run_env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert [r["status"] for r in report["ladder"]] == ["ok", "ok", "ok", "diverged"]
    (toggle,) = report["toggles"]
    assert (toggle["name"], toggle["status"]) == ("without user hooks", "ok")
    verdict = report["conclusion"]
    assert (verdict["category"], verdict["user_side"]["kind"]) == ("user_side", "user_pass")
    assert verdict["user_side"]["function"] == "relu_to_identity"
    verified = report["repro"]["verified"]
    assert verified["reproduces"] is True and verified["expected"] == "diverged from eager"
    copy = _handed_over(report, tmp_path)
    failed = _run(copy, run_env)
    assert failed.returncode == 1 and "REPRODUCED: output differs from eager" in failed.stdout
    defs = (copy / "program_defs.py").read_text()
    wrong = (
        "node.replace_all_uses_with(node.args[0])  # MARK:wrong\n            graph.erase_node(node)"
    )
    assert wrong in defs
    (copy / "program_defs.py").write_text(defs.replace(wrong, "pass"))  # the user's fix
    fixed = _run(copy, run_env)
    assert fixed.returncode == 0 and "not reproduced" in fixed.stdout, fixed.stderr[-2000:]
