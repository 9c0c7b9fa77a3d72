"""``pt2doctor ablate`` on real compiles: each test runs the real CLI in a subprocess on a
model of several submodules under tests/programs/ablate with a failure planted at one layer
and one submodule (torch's relu_*_TESTING_ONLY backends, custom Inductor post-grad passes),
then runs the repro it wrote with plain python in a fresh process.

Cost on 2 CPU cores: ~30 s per relu backend (4 ladder processes + module bisection), ~70 s for
the Inductor pass with compiler_bisector, ~40 s without it, ~25 s for the script ladder."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracles import gone_within, marker_in
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

ABLATE_DIR = Path(__file__).resolve().parents[1] / "programs" / "ablate"
TIMEOUT_S = 600


def ablate(tmp: Path, env: dict[str, str], *args: str) -> tuple[dict[str, Any], Any]:
    out = tmp / "out"
    command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out), *args]
    done = subprocess.run(
        command, cwd=tmp, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
    )
    assert (out / "report.json").is_file(), done.stderr[-3000:]
    return json.loads((out / "report.json").read_text()), done


def run_repro(report: dict[str, Any], env: dict[str, str], *flags: str) -> Any:
    """The repro in a fresh process, plain python, without pt2doctor on the path."""
    path = Path(report["repro"]["path"])
    plain = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-I", str(path), *flags],
        cwd=path.parent,
        env=plain,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def assert_plain_torch(report: dict[str, Any]) -> None:
    folder = Path(report["repro"]["path"]).parent
    for name in ("repro.py", "model_source.py"):
        text = (folder / name).read_text()
        assert "import pt2doctor" not in text and "from pt2doctor" not in text
    assert report["repro"]["lines"] < 100


def assert_self_contained_page(page: str, out: Path, extra_md: Path) -> None:
    """``--format html`` printed the page it wrote into --out, self-contained and script-free;
    report.json and report.md were written too, and ``--md`` got the same Markdown."""
    assert page.startswith("<!DOCTYPE html>") and "pt2doctor ablate report" in page
    assert "Content-Security-Policy" in page and "<script" not in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing loaded from elsewhere
    assert "blocks.2.act" in page and "relu_accuracy_error_TESTING_ONLY" in page
    assert (out / "report.html").read_text() == page
    assert (out / "report.md").read_text() == extra_md.read_text()
    assert json.loads((out / "report.json").read_text())["conclusion"]["layer"] == "backend"


@pytest.mark.parametrize(
    ("backend", "failure", "root_type"),
    [
        ("relu_compile_error_TESTING_ONLY", "crash", "ReluCompileError"),
        ("relu_runtime_error_TESTING_ONLY", "crash", "AssertionError"),
        ("relu_accuracy_error_TESTING_ONLY", "diverged", None),
    ],
)
def test_relu_backends_localize_to_the_backend_and_the_relu_submodule(
    tmp_path: Path, run_env: dict[str, str], backend: str, failure: str, root_type: str | None
) -> None:
    verify = "--verify-repro" if failure == "diverged" else "--no-verify-repro"
    # One of the runs also prints its report as HTML (and writes an extra Markdown copy).
    html = ("--format", "html", "--md", str(tmp_path / "extra.md")) if failure == "diverged" else ()
    report, done = ablate(
        tmp_path, run_env, str(ABLATE_DIR / "layered.py"), "--backend", backend, verify, *html
    )
    assert done.returncode == 1, done.stderr[-3000:]
    if html:
        assert_self_contained_page(done.stdout, tmp_path / "out", tmp_path / "extra.md")
    ladder = [(row["backend"], row["layer"], row["status"]) for row in report["ladder"]]
    assert ladder == [
        ("eager", "dynamo", "ok"),
        ("aot_eager", "aot", "ok"),
        ("aot_eager_decomp_partition", "decomp_partition", "ok"),
        (backend, "backend", failure),
    ]
    verdict = report["conclusion"]
    assert (verdict["layer"], verdict["failure"], verdict["category"]) == (
        "backend",
        failure,
        "compiler_bug",
    )
    assert "blocks.2.act" in verdict["sentence"] and backend in verdict["sentence"]
    assert report["ladder"][-1]["root_type"] == root_type
    if failure == "diverged":  # relu(y) became y + 1, then * 0.5: an error of exactly 0.5
        assert report["ladder"][-1]["worst"]["max_abs_error"] == pytest.approx(0.5, abs=1e-4)
    trials = [(t["module"], t["reproduced"]) for t in report["module"]["trials"]]
    assert trials == [
        ("blocks.0", False),
        ("blocks.1", False),
        ("blocks.2", True),
        ("blocks.2.act", True),
    ]
    assert report["module"]["module"] == "blocks.2.act"
    assert report["repro"]["module_class"] == "Act"
    assert_plain_torch(report)
    if failure == "diverged":  # ablate ran it, plain python without pt2doctor: no second run
        assert report["repro"]["verified"]["reproduces"] is True
    else:
        reproduced = run_repro(report, run_env)
        assert reproduced.returncode == 1 and "REPRODUCED" in reproduced.stdout, reproduced.stderr
    if root_type == "ReluCompileError":  # the same repro, with a backend that works, passes
        passed = run_repro(report, run_env, "--backend", "aot_eager")
        assert passed.returncode == 0, passed.stdout + passed.stderr[-2000:]


def test_inductor_pass_that_perturbs_one_submodule(tmp_path: Path, run_env: dict[str, str]) -> None:
    # The copied repro below is the check that it reproduces (the tool's own run of it, in
    # place, is asserted on the relu and script-mode tests).
    report, done = ablate(
        tmp_path, run_env, str(ABLATE_DIR / "inductor_perturb.py"), "--no-verify-repro"
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert [row["status"] for row in report["ladder"]] == ["ok", "ok", "ok", "diverged"]
    assert report["conclusion"]["layer"] == "inductor"
    assert report["module"]["module"] == "blocks.1"  # Gate, the only sigmoid
    bisect = report["bisect"]
    assert bisect["available"] is True and bisect["backend"] == "inductor"
    assert bisect["subsystem"] == "post_grad_passes"
    assert bisect["debug_info"] == "post_grad_custom_post_pass"
    assert "post_grad_passes" in report["conclusion"]["sentence"]
    # The pass is the program's own: user side, named with its file and line, turned off first.
    user = assert_user_pass(report, "inductor_perturb.py", "perturb_sigmoid")
    assert "compiler_bisector points at post_grad_custom_post_pass" in " ".join(user["evidence"])
    assert {t["name"]: t["status"] for t in report["toggles"]} == {"without user hooks": "ok"}
    assert_plain_torch(report)
    copied = run_copied_repro(report, tmp_path, run_env)
    assert copied.returncode == 1 and "REPRODUCED" in copied.stdout, copied.stderr[-2000:]
    # Where the numbers diverge: Gate introduces the error alone on eager's input, in its own
    # code (the sigmoid is Gate's, not its Linear's); the pass off clears it; the numerics
    # repro, copied to an empty folder, reproduces with torch only.
    numerics = report["numerics"]
    assert [step["name"] for step in numerics["path"]] == ["", "blocks", "blocks.1"]
    assert numerics["culprit"] == "blocks.1" and numerics["own_code"] is True
    assert numerics["cleared_by"] == "post_grad_custom_post_pass=None"
    gate = numerics["path"][-1]
    assert gate["compiled_rmse"] > 1000 * gate["eager_rmse"]
    # Its kernels, by Inductor's provenance: the sigmoid's is named with Gate's line.
    line = next(n for n, text in enumerate((ABLATE_DIR / "inductor_perturb.py").read_text()
                                           .splitlines(), 1) if "torch.sigmoid(self.lin" in text)  # fmt: skip
    sigmoid = [k for k in numerics["kernels"] if "sigmoid" in k["ops"]]
    assert sigmoid and sigmoid[0]["kind"] == "generated", numerics["kernels"]
    assert any(f"inductor_perturb.py:{line}:" in said for said in sigmoid[0]["lines"])
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "Where the numbers diverge" in markdown
    named = sigmoid[0]["name"].replace("_", "\\_")  # as Markdown escapes it
    assert f"- kernel {named} (generated: " in markdown
    assert f"perturb.py:{line}: return x \\* torch.sigmoid(self.lin(x))" in markdown
    header = next(text for text in markdown.splitlines() if "introduces alone" in text)
    assert "file:line" in header and "inherited" in header
    assert "Where the numbers diverge" in (tmp_path / "out" / "report.html").read_text()
    ran = run_numerics_repro_alone(numerics, tmp_path, run_env)
    assert ran.returncode == 1 and "WRONG NUMBERS" in ran.stdout, ran.stderr[-2000:]
    # Gate's weights travel as its state_dict beside its structure (saved on the meta device):
    # loaded into it, the repro's errors against fp64 are the search's own.
    printed = re.search(r"eager RMSE vs fp64 (\S+), compiled (\S+),", ran.stdout)
    assert printed is not None, ran.stdout
    assert float(printed[1]) == pytest.approx(gate["eager_rmse"], rel=0.01)
    assert float(printed[2]) == pytest.approx(gate["compiled_rmse"], rel=0.01)
    # The same case with the pass line removed (the fix), ablated too: `diff` of the two names
    # each regression one way only, and as improvements the other way.
    fixed_dir = tmp_path / "fixed"
    fixed_dir.mkdir()
    source = (ABLATE_DIR / "inductor_perturb.py").read_text()
    pass_line = "torch._inductor.config.post_grad_custom_post_pass = perturb_sigmoid\n"
    assert pass_line in source
    (fixed_dir / "inductor_perturb.py").write_text(source.replace(pass_line, ""))
    fixed_out = tmp_path / "fixed_out"
    done = subprocess.run([sys.executable, "-m", "pt2doctor", "ablate", "--out", str(fixed_out),
                           str(fixed_dir / "inductor_perturb.py"), "--no-verify-repro"],
                          cwd=tmp_path, env=run_env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    kinds = {}
    for a, b in ((fixed_out, tmp_path / "out"), (tmp_path / "out", fixed_out)):
        shown = subprocess.run([sys.executable, "-m", "pt2doctor", "diff", str(a), str(b),
                                "--format", "json"], env=run_env, capture_output=True,
                               text=True, timeout=TIMEOUT_S)  # fmt: skip
        changes = json.loads(shown.stdout)["changes"]
        kinds[a == fixed_out] = {c["kind"]: c for c in changes if c["kind"] != "environment"}
    broke, fixed = kinds[True], kinds[False]
    assert set(broke) == set(fixed) == {"rung_status", "failing_layer", "failing_module",
                                        "diverging_module"}  # fmt: skip
    assert all(change["regression"] for change in broke.values())
    assert not any(change["regression"] for change in fixed.values())
    assert (broke["diverging_module"]["before"], broke["diverging_module"]["after"]) == (
        None, "blocks.1",
    )  # fmt: skip
    assert broke["rung_status"]["after"] == "diverged" and fixed["rung_status"]["after"] == "ok"


def run_numerics_repro_alone(numerics: dict[str, Any], tmp: Path, env: dict[str, str]) -> Any:
    """The numerics repro copied to an empty folder, run with plain python, no pt2doctor."""
    alone = tmp / "numerics_alone"
    shutil.copytree(Path(numerics["repro"]["path"]).parent, alone)
    plain = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-I", "repro.py"], cwd=alone, env=plain,
                          capture_output=True, text=True, timeout=TIMEOUT_S)  # fmt: skip


def assert_first_forward_and_repro(
    numerics: dict[str, Any], program: str, tmp: Path, env: dict[str, str]
) -> None:
    """The culprit's source is the program's first ``def forward``, and the numerics repro,
    copied to an empty folder, reproduces alone."""
    lines = (ABLATE_DIR / program).read_text().splitlines()
    forward = next(n for n, text in enumerate(lines, 1) if "def forward" in text)
    assert numerics["culprit_source"].endswith(f"{program}:{forward}")
    ran = run_numerics_repro_alone(numerics, tmp, env)
    assert ran.returncode == 1 and "WRONG NUMBERS" in ran.stdout, ran.stderr[-2000:]


def assert_user_pass(report: dict[str, Any], program: str, function: str) -> dict[str, Any]:
    """The conclusion names the user's pass (function, file:line of its def, the hook) and
    the first workaround turns that hook off; nothing says "report it upstream"."""
    line = next(
        number
        for number, text in enumerate((ABLATE_DIR / program).read_text().splitlines(), 1)
        if text.startswith(f"def {function}(")
    )
    verdict = report["conclusion"]
    assert verdict["category"] == "user_side", verdict
    user = verdict["user_side"]
    assert (user["kind"], user["function"], user["line"]) == ("user_pass", function, line)
    assert user["hook"] == "post_grad_custom_post_pass"
    assert f"your compiler pass {function} ({program}:{line})" in verdict["sentence"]
    first = report["workarounds"][0]
    assert "torch._inductor.config.post_grad_custom_post_pass = None" in first
    assert not any("upstream" in advice for advice in report["workarounds"])
    hooks = [(h["hook"], h["function"], h["line"]) for h in report["compiler_hooks"]]
    assert hooks == [("post_grad_custom_post_pass", function, line)]
    return dict(user)


def run_copied_repro(report: dict[str, Any], tmp: Path, env: dict[str, str]) -> Any:
    """Copy the repro folder to another directory, remove the original, run the copy with
    plain python (``-I``: no PYTHONPATH, no user site, no case folder on the path)."""
    folder = Path(report["repro"]["path"]).parent
    copy = tmp / "elsewhere" / "handed-over"
    shutil.copytree(folder, copy)
    shutil.rmtree(folder)
    for path in copy.glob("*.py"):
        assert str(ABLATE_DIR.parents[1]) not in path.read_text(), path  # no path of this machine
    plain = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-I", str(copy / "repro.py")],
        cwd=tmp / "elsewhere",
        env=plain,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_inductor_pass_that_raises(tmp_path: Path, run_env: dict[str, str]) -> None:
    """Compiled as the user does, with ``--dynamic --mode reduce-overhead``: the toggles retry
    the failing rung with dynamic=False (the planted pass still raises) and say that the
    CUDA-graph toggle does not apply on CPU; the repro compiles with the same options."""
    report, done = ablate(
        tmp_path,
        run_env,
        str(ABLATE_DIR / "inductor_raise.py"),
        "--no-bisect",
        "--no-verify-repro",
        "--dynamic",
        "--mode",
        "reduce-overhead",
        "--format",
        "json",
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert (report["settings"]["dynamic"], report["settings"]["mode"]) == (True, "reduce-overhead")
    toggles = {toggle["name"]: toggle for toggle in report["toggles"]}
    assert toggles.keys() == {"dynamic=False", "no_cudagraphs", "without user hooks"}
    assert (toggles["dynamic=False"]["backend"], toggles["dynamic=False"]["status"]) == (
        "inductor",
        "crash",
    )
    assert "planted post-grad pass failure" in toggles["dynamic=False"]["error"]
    assert toggles["no_cudagraphs"]["status"] == "not applicable"
    repro = Path(report["repro"]["path"]).read_text()
    assert "'dynamic': True" in repro and "'mode': 'reduce-overhead'" in repro
    assert json.loads(done.stdout)["conclusion"] == report["conclusion"]
    last = report["ladder"][-1]
    assert (last["backend"], last["status"], last["root_type"]) == (
        "inductor",
        "crash",
        "RuntimeError",
    )
    assert "planted post-grad pass failure" in last["error"]
    assert report["conclusion"]["layer"] == "inductor"
    assert report["module"]["module"] == "blocks.0"  # Encoder, the only tanh
    assert report["bisect"] is None
    assert any("blocks.0" in advice for advice in report["workarounds"])
    user = assert_user_pass(report, "inductor_raise.py", "raise_on_tanh")
    assert user["evidence"][0].startswith(
        "the error was raised in raise_on_tanh (inductor_raise.py:"
    )
    assert toggles["without user hooks"]["status"] == "ok"
    copied = run_copied_repro(report, tmp_path, run_env)
    assert copied.returncode == 1 and "planted post-grad pass failure" in copied.stdout


def test_script_ladder_with_an_accuracy_check(tmp_path: Path, run_env: dict[str, str]) -> None:
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    check = f"{sys.executable} {ABLATE_DIR / 'check_outputs.py'} {outputs}"
    report, done = ablate(
        tmp_path,
        run_env,
        "--backend",
        "relu_accuracy_error_TESTING_ONLY",
        "--accuracy-check",
        check,
        "--",
        sys.executable,
        str(ABLATE_DIR / "script_relu.py"),
        str(outputs),
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["target"]["mode"] == "script"
    assert [row["status"] for row in report["ladder"]] == ["ok", "ok", "ok", "diverged"]
    assert report["conclusion"]["layer"] == "backend"
    # The environment is the program's, as its rungs recorded it: its own config change.
    environment = report["environment"]
    assert environment["config_changes"] == {"dynamo": {"recompile_limit": "4"}}
    assert environment["torch_version"] == importlib.metadata.version("torch")
    # Where the numbers diverge, from the program's own model and input (its first compiled
    # module's first call, searched at exit): Net's own relu; the repro reproduces alone.
    numerics = report["numerics"]
    assert numerics["completed"] and numerics["culprit"] == "" and numerics["own_code"] is True
    unit = "Net (torch.compile(module), the 1st compiled unit called)"
    assert numerics["unit"] == unit and f"in the program's {unit}" in done.stdout
    assert_first_forward_and_repro(numerics, "script_relu.py", tmp_path, run_env)


def test_a_program_that_exits_1_on_its_own_check_is_read_as_wrong_numbers(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """own_check.py compares its compiled result with eager and calls sys.exit(1) when they
    differ, with no --accuracy-check given: the failing rung is wrong numbers (no exception
    was raised), not a crash nor a compiler bug; where they diverge is searched (Head, whose
    own code calls relu, under the relu-planted backend); and the program repro, which exits
    1 the same way, reproduces."""
    report, done = ablate(tmp_path, run_env, "--backend", "relu_accuracy_error_TESTING_ONLY",
                          "--no-bisect", "--", sys.executable,
                          str(ABLATE_DIR / "own_check.py"))  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert [row["status"] for row in report["ladder"]][:4] == ["ok", "ok", "ok", "diverged"]
    failing = report["ladder"][3]
    assert failing["own_exit"] is True and failing["exit_code"] == 1
    assert "exited 1 on its own" in failing["error"]
    numerics = report["numerics"]
    assert numerics["completed"] and numerics["culprit"] == "head", numerics
    verified = report["repro"]["verified"]
    assert verified["reproduces"] is True and verified["same_failure"] is True, verified
    # Its output directory read again by `report`, in a piped 80-column terminal: the
    # numerics rows as lines, each number whole.
    again = subprocess.run([sys.executable, "-m", "pt2doctor", "report", str(tmp_path / "out")],
                           env={**run_env, "COLUMNS": "80"}, capture_output=True, text=True,
                           timeout=120, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    (row,) = [line for line in again.stdout.splitlines() if line.startswith("  head (Head, ")]
    assert row.startswith("  head (Head, own_check.py:") and "introduces alone yes (" in row


def test_a_backward_only_bug_is_searched_in_the_gradients_of_the_training_cell(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """backward_pass.py: a post-grad pass scales tanh's derivative in backward graphs only.
    The forward matches, so the numerics stage searches the gradients with the cell's loss:
    first in backward order at squash.lin (head's gradients do not pass through tanh), and
    squash, run alone from eager's output gradient, introduces it in its own code."""
    report, done = ablate(tmp_path, run_env, str(ABLATE_DIR / "backward_pass.py"), "--no-bisect",
                          "--no-verify-repro")  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    inductor = next(row for row in report["ladder"] if row["backend"] == "inductor")
    assert inductor["status"] == "diverged"
    numerics = report["numerics"]
    assert numerics["diverges"] is False  # the forward, compiled, matches eager
    gradients = numerics["gradients"]
    assert gradients["diverges"] and gradients["first"] == "squash.lin", gradients["summary"]
    passed = {row["module"]: row["passed"] for row in gradients["modules"]}
    assert passed["head"] is True and passed["squash.lin"] is False
    assert [step["name"] for step in gradients["path"]] == ["", "squash"]
    assert gradients["culprit"] == "squash" and gradients["own_code"] is True
    lines = (ABLATE_DIR / "backward_pass.py").read_text().splitlines()
    start = lines.index("class Squash(nn.Module):")
    forward = start + 1 + next(n for n, t in enumerate(lines[start:]) if "def forward" in t)
    assert gradients["culprit_source"].endswith(f"backward_pass.py:{forward}")
    said = " ".join(done.stdout.split())  # the terminal wraps at 80 columns
    assert "the gradients leave eager's, first in backward order at squash.lin" in said
    page = (tmp_path / "out" / "report.md").read_text()
    assert "gradients diverge in squash (Squash)" in page
    # The pass in the environment is named where it is defined, not by a memory address.
    hook = next(n for n, t in enumerate(lines, 1) if t.startswith("def scale_tanh_derivative"))
    changed = report["environment"]["config_changes"]["inductor"]["post_grad_custom_post_pass"]
    assert changed == f"<function scale_tanh_derivative (backward_pass.py:{hook})>"


def _script_numerics(program: str, tmp: Path, run_env: dict[str, str],
                     monkeypatch: pytest.MonkeyPatch,
                     backend: str = "relu_accuracy_error_TESTING_ONLY") -> dict[str, Any]:  # fmt: skip
    """Script mode's numerics run alone (ablate/script.py ``_numerics``): the program run once
    more with the numerics plugin, its units searched at exit with ``backend`` (the failing
    rung's; by default the relu-planted one)."""
    from pt2doctor.ablate.script import _numerics

    for key, value in run_env.items():
        monkeypatch.setenv(key, value)
    outputs = tmp / "outputs"
    outputs.mkdir()
    command = [sys.executable, str(ABLATE_DIR / program), str(outputs)]
    return _numerics(command, {"backend": backend}, tmp / "n", 600, None)


def test_script_numerics_searches_each_region_compiled_in_place_and_stops_at_the_wrong_one(
    tmp_path: Path, run_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regional compilation with ``block.compile()``: one unit per block; only block 2 calls
    relu, so blocks 0 and 1 match and block 2 is where the numbers leave eager's."""
    numerics = _script_numerics("script_regional.py", tmp_path, run_env, monkeypatch)
    assert numerics["completed"], numerics
    assert [unit["diverges"] for unit in numerics["searched"]] == [False, False, True]
    assert numerics["unit"].startswith("Block (module.compile(), the 3rd compiled unit called)")
    assert numerics["culprit"] == "" and numerics["own_code"] is True
    assert_first_forward_and_repro(numerics, "script_regional.py", tmp_path, run_env)


def test_script_numerics_finds_the_module_a_compiled_function_calls(
    tmp_path: Path, run_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A compiled function that calls the model: the model's first call inside it is kept,
    and its FF, whose own code calls relu, is named; the repro reproduces alone."""
    numerics = _script_numerics("script_function.py", tmp_path, run_env, monkeypatch)
    assert numerics["completed"], numerics
    assert numerics["unit"] == ("Net (called in the compiled function predict, the 1st "
                                "compiled unit called)")  # fmt: skip
    assert numerics["culprit"] == "ff" and numerics["own_code"] is True
    ran = run_numerics_repro_alone(numerics, tmp_path, run_env)
    assert ran.returncode == 1 and "WRONG NUMBERS" in ran.stdout, ran.stderr[-2000:]


BLIND = "blind"  # wrong-numbers programs written blind (tests/programs/ablate/blind/TRUTH.md)


def _line(program: str, code: str) -> int:
    lines = (ABLATE_DIR / program).read_text().splitlines()
    (line,) = [n for n, text in enumerate(lines, 1) if code in text]
    return line


def test_blind_regional_vit_is_found_in_the_third_block_and_cleared_by_its_pass_off(
    tmp_path: Path, run_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRUTH.md 1: every block compiled with block.compile(); a post-grad pass swaps sigmoid
    for a hard sigmoid, and only blocks.2.mlp (GatedMLP, forward at its line) calls sigmoid."""
    numerics = _script_numerics(
        f"{BLIND}/vit_regional.py", tmp_path, run_env, monkeypatch, "inductor"
    )
    assert numerics["completed"], numerics
    assert [unit["diverges"] for unit in numerics["searched"]] == [False, False, True]
    assert numerics["unit"].startswith("Block (module.compile(), the 3rd compiled unit called)")
    assert (numerics["culprit"], numerics["culprit_kind"]) == ("mlp", "GatedMLP")
    forward = _line(f"{BLIND}/vit_regional.py", "return self.down(torch.sigmoid") - 1
    assert numerics["culprit_source"].endswith(f"vit_regional.py:{forward}")  # its def forward
    assert numerics["cleared_by"] == "post_grad_custom_post_pass=None"


def test_blind_text_classifier_with_a_compiled_forward_and_a_pass_object(
    tmp_path: Path, run_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """TRUTH.md 3: ``model.forward = torch.compile(model.forward)`` and a CustomGraphPass
    instance (its uuid() hashes __file__) that rewrites tanh wrongly: only the head calls
    tanh. The copy searched runs its own forward; the repro makes the pass object again."""
    numerics = _script_numerics(
        f"{BLIND}/textcls_compile.py", tmp_path, run_env, monkeypatch, "inductor"
    )
    assert numerics["completed"], numerics
    assert numerics["unit"].startswith("TextClassifier (torch.compile(module.forward)")
    assert (numerics["culprit"], numerics["culprit_kind"]) == ("head", "ClassificationHead")
    assert numerics["cleared_by"] == "post_grad_custom_pre_pass=None"
    ran = run_numerics_repro_alone(numerics, tmp_path, run_env)
    assert ran.returncode == 1 and "WRONG NUMBERS" in ran.stdout, ran.stderr[-2000:]


def test_blind_forecaster_is_the_programs_own_traced_code_not_a_compiler_bug(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """TRUTH.md 2: a compiled function calls the model; RMSNorm branches on is_compiling()
    into a custom op whose kernel reduces the wrong dim. It fails at the Dynamo rung (backend
    eager): user code, at the branch, naming the op; the numerics repro defines the op and
    reproduces alone."""
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    check = f"{sys.executable} {ABLATE_DIR / BLIND / 'check_outputs.py'} {outputs}"
    program = ABLATE_DIR / BLIND / "forecast_predict.py"
    report, done = ablate(tmp_path, run_env, "--accuracy-check", check, "--no-verify-repro",
                          "--", sys.executable, str(program), str(outputs))  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    verdict = report["conclusion"]
    assert (verdict["layer"], verdict["category"]) == ("dynamo", "user_side"), verdict
    user = verdict["user_side"]
    branch = _line(f"{BLIND}/forecast_predict.py", "if torch.compiler.is_compiling():")
    assert user["kind"] == "traced_code" and user["where"] == f"forecast_predict.py:{branch}"
    assert "tsnet::rms_norm" in user["detail"] and "upstream" not in " ".join(report["workarounds"])
    numerics = report["numerics"]
    assert (numerics["culprit"], numerics["custom_ops"]) == ("encoder.norm", ["tsnet::rms_norm"])
    ran = run_numerics_repro_alone(numerics, tmp_path, run_env)
    assert ran.returncode == 1 and "WRONG NUMBERS" in ran.stdout, ran.stderr[-2000:]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["layered.py", "--cell", "nothing/like/this"], "no cell matches --cell nothing/like/this"),
        (["layered.py", "--backend", "no_such_backend"], "no_such_backend"),
        (["missing.py"], "missing.py"),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Argument handling only: in process, nothing is launched."""
    target = str(ABLATE_DIR / args[0]) if args[0] != "missing.py" else str(tmp_path / args[0])
    assert main(["ablate", "--out", str(tmp_path / "o"), target, *args[1:]]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.splitlines()
    assert line.startswith("pt2doctor: error:") and says in line, line
    assert not (tmp_path / "o").exists()


def test_a_program_that_does_not_exist_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Script mode: ``python missing.py`` is bad input, not a program that fails in eager."""
    missing = str(tmp_path / "missing.py")
    assert main(["ablate", "--out", str(tmp_path / "o"), "--", sys.executable, missing]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"pt2doctor: error: no such program: {missing}"
    assert not (tmp_path / "o").exists()


def test_fullgraph_incompleteness_is_dynamo_and_the_untraceable_submodule(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    report, done = ablate(
        tmp_path, run_env, str(ABLATE_DIR / "untraceable.py"), "--fullgraph", "--backend",
        "aot_eager", "--no-verify-repro",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    ladder = [(row["backend"], row["layer"], row["status"]) for row in report["ladder"]]
    assert ladder == [("eager", "dynamo", "crash"), ("aot_eager", "aot", "not run")]
    assert "Unsupported" in report["ladder"][0]["error_types"]
    verdict = report["conclusion"]
    assert (verdict["layer"], verdict["category"]) == ("dynamo", "incompleteness")
    assert report["module"]["module"] == "blocks.1"  # the submodule that calls print
    # Without fullgraph the same code compiles around the print (a graph break) and runs.
    assert [(t["name"], t["status"]) for t in report["toggles"]] == [("fullgraph=False", "ok")]
    assert report["workarounds"][0].startswith("Drop fullgraph=True")
    assert_plain_torch(report)
    reproduced = run_repro(report, run_env)
    assert reproduced.returncode == 1 and "REPRODUCED" in reproduced.stdout, reproduced.stderr
    assert "Unsupported" in reproduced.stdout + reproduced.stderr


def test_script_mode_timeout_stops_the_whole_process_group(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """A rung that hangs is a timeout; the program's grandchild goes with it. The program
    imports no torch: it has written the grandchild's pid well before --timeout. It hangs
    with torch.compile off too, so it fails without compiling (eager_error)."""
    pid_file = tmp_path / "grandchild.pid"
    program = ABLATE_DIR / "script_hang.py"
    report, done = ablate(
        tmp_path, run_env, "--timeout", "4", "--", sys.executable, str(program), str(pid_file)
    )
    assert done.returncode == 1, done.stderr[-3000:]
    first = report["ladder"][0]
    assert (first["backend"], first["status"], first["error"]) == (
        "eager",
        "eager_error",
        "timed out",
    )
    assert [row["status"] for row in report["ladder"][1:]] == ["not run"] * 3
    (without,) = report["toggles"]
    assert (without["name"], without["status"], without["error"]) == (
        "without torch.compile",
        "crash",
        "timed out",
    )
    assert report["conclusion"]["failure"] == "eager_error"
    assert gone_within(int(pid_file.read_text()))  # the toggle's grandchild, the last written


def test_case_mode_from_the_case_files_own_folder_writes_a_repro_that_reproduces(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """Regression (issue 26): run from the case file's folder, the repro stage used to die on
    torch.ops' relative ``__file__`` ("_ops.py" resolved into that folder), leaving
    ``repro: null`` with no word of why. Now the repro is written and reproduces."""
    out = tmp_path / "out"
    command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out), "layered.py",
               "--backend", "relu_compile_error_TESTING_ONLY", "--no-verify-repro"]  # fmt: skip
    done = subprocess.run(command, cwd=ABLATE_DIR, env=run_env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["repro"]["written"] is True, report["repro"]
    assert not (ABLATE_DIR / "_ops.py").exists()
    reproduced = run_repro(report, run_env)
    assert reproduced.returncode == 1 and "REPRODUCED" in reproduced.stdout, reproduced.stderr


def test_script_mode_retries_the_programs_own_fullgraph_and_never_offers_disable(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """A program that compiles with fullgraph=True itself (no --fullgraph flag): the failing
    rung is run again with fullgraph=False (the README's retry), which runs, so dropping it is
    the first workaround; torch.compiler.disable, an error under fullgraph too, is never one,
    and the rewrite the advice names (torch.cond / torch.where) is."""
    program = ABLATE_DIR / "fullgraph_moe.py"
    report, done = ablate(tmp_path, run_env, "--no-verify-repro", "--", sys.executable,
                          str(program))  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    assert report["conclusion"]["category"] == "incompleteness"
    assert report["ladder"][0]["status"] == "crash"
    (toggle,) = [t for t in report["toggles"] if t["name"] == "fullgraph=False"]
    assert toggle["status"] == "ok"
    # The truth: the program itself, fullgraph=False written in, runs.
    fixed = tmp_path / "fixed.py"
    fixed.write_text(program.read_text().replace("fullgraph=True", "fullgraph=False"))
    ran = subprocess.run([sys.executable, str(fixed)], env=run_env, capture_output=True,
                         text=True, timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert ran.returncode == 0 and "result:" in ran.stdout, ran.stderr[-2000:]
    workarounds = report["workarounds"]
    assert workarounds[0].startswith("Drop fullgraph=True")
    assert not any("torch.compiler.disable its" in w or "with torch.compiler.disable" in w
                   for w in workarounds)  # fmt: skip
    assert any("torch.cond" in w and "torch.where" in w for w in workarounds)


def test_case_mode_and_script_mode_agree_on_a_data_dependent_branch_under_fullgraph(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """Issue 39, 6e: the same MoE with ``if mask.any():`` as a program compiled with its own
    fullgraph=True and as a case ablated with --fullgraph: the same layer, category and
    failure, the same fullgraph=False retry (which runs), the same workarounds (drop fullgraph;
    torch.cond / torch.where or the check moved out; never torch.compiler.disable), and each
    names its own branch line."""
    modes = {}
    (tmp_path / "case").mkdir()
    modes["case"], done = ablate(tmp_path / "case", run_env,
                                 str(ABLATE_DIR / "fullgraph_moe_case.py"), "--fullgraph",
                                 "--backend", "eager", "--no-verify-repro")  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    (tmp_path / "script").mkdir()
    modes["script"], done = ablate(tmp_path / "script", run_env, "--backend", "eager",
                                   "--no-verify-repro", "--", sys.executable,
                                   str(ABLATE_DIR / "fullgraph_moe.py"))  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    same = ("layer", "category", "failure")
    verdicts = {
        mode: tuple(report["conclusion"][k] for k in same) for mode, report in modes.items()
    }
    assert verdicts["case"] == verdicts["script"] == ("dynamo", "incompleteness", "crash")
    for mode, report in modes.items():
        program = ABLATE_DIR / ("fullgraph_moe_case.py" if mode == "case" else "fullgraph_moe.py")
        where = f"{program}:{marker_in(program, 'branch')} in forward: if mask.any()"
        assert where in report["ladder"][0]["error"], (mode, report["ladder"][0]["error"])
        assert ("fullgraph=False", "ok") in [(t["name"], t["status"]) for t in report["toggles"]]
    assert modes["case"]["workarounds"][:2] == modes["script"]["workarounds"][:2]
    first, rewrite = modes["case"]["workarounds"][:2]
    assert first.startswith("Drop fullgraph=True") and "torch.cond" in rewrite
    assert not any("with torch.compiler.disable" in w for r in modes.values()
                   for w in r["workarounds"])  # fmt: skip
