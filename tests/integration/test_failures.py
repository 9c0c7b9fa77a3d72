"""The failure corpus (tests/programs/failures): fourteen failing programs of different kinds,
each ablated as a user would, from the program's own folder and from another one, in script
mode (``pt2doctor ablate -- python prog.py``) and, for the case files among them, in case mode
(``pt2doctor ablate prog.py``). For each run the conclusion is asserted (category, kind, the
op, pass or line named). From its own folder, ablate's own check of the repro must find the
program's failure signature; from another folder, the repro folder is copied alone into an
empty folder (the original removed) and run with plain ``python -I``: it must fail with the
same signature, and with the user's fix applied to the copy (the fix the report prints, or
the planted bug turned off) it must not reproduce, so the check can fail.

Cost on 2 CPU cores: 3-10 s for a failure at the dynamo layer, 15-25 s for one in Inductor
(four rungs, opcheck, the repro)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.ablate.signature import failure_signature, repro_signature

pytestmark = pytest.mark.torch_run

FAILURES = Path(__file__).resolve().parents[1] / "programs" / "failures"
TIMEOUT_S = 600
INDUCTOR_FAILS = ["ok", "ok", "ok"]


@dataclass(frozen=True)
class Failure:
    program: str
    ladder: list[str]
    """The rungs' statuses (script mode), up to the failing one."""
    category: str | None
    kind: str | None
    """conclusion.user_side.kind (None: not the user's code)."""
    named: dict[str, str]
    """What user_side names (op, function, where), or for a compiler bug the failing rung's
    backend."""
    expected: str
    """How the failure signature starts."""
    source: str
    """How the script-mode repro is made (repro.source)."""
    fix: tuple[str, str]
    """The user's fix: text in the repro folder's copies replaced by the fixed text."""
    accuracy: bool = False
    """Wrong numbers: the program saves its outputs, check_saved.py compares them."""
    case: bool = False
    """Also a case file: ablated in case mode too."""
    case_conclusion: dict[str, Any] = field(default_factory=dict)


CORPUS = [
    Failure(
        "inline_pass", [*INDUCTOR_FAILS, "crash"], "user_side", "user_pass",
        {"function": "layout_pass"}, "RuntimeError: layout_pass: addmm needs a", "fx_graph_runnable",
        ('raise RuntimeError(f"layout_pass: {node.name} needs a 4-d input")', "pass"),
    ),
    Failure(
        "inline_wrong_pass", [*INDUCTOR_FAILS, "diverged"], "user_side", "user_pass",
        {"function": "relu_to_identity"}, "diverged from eager", "fx_graph_runnable",
        ("node.replace_all_uses_with(node.args[0])  # MARK:wrong\n            graph.erase_node(node)",
         "pass"),
        accuracy=True,
    ),
    Failure(
        "inline_custom_op", [*INDUCTOR_FAILS, "crash"], "user_side", "custom_op_fake",
        {"op": "pt2doctor_inline.row_norm.default"}, "AssertionError: wrong number of dimensions",
        "fx_graph_runnable",
        ("return torch.empty_like(x)  # MARK:wrong_fake", "return x.new_empty(x.shape[:-1])"),
        case=True,
    ),
    Failure(
        "mutation_op", [*INDUCTOR_FAILS, "diverged"], "user_side", "custom_op_schema",
        {"op": "pt2doctor_failures.scale_.default"}, "diverged from eager", "fx_graph_runnable",
        ("mutates_args=()", 'mutates_args=("x",)'), accuracy=True, case=True,
    ),
    Failure(
        "autocast_op", [*INDUCTOR_FAILS, "diverged"], "user_side", "custom_op_fake",
        {"op": "pt2doctor_failures.row_max.default"}, "diverged from eager", "fx_graph_runnable",
        ("torch.empty(x.shape[:-1])", "x.new_empty(x.shape[:-1])"), accuracy=True, case=True,
    ),
    Failure(
        "fake_rank", ["crash"], "user_side", "custom_op_fake",
        {"op": "pt2doctor_failures.fused_attention.default"},
        "TorchRuntimeError: RuntimeError when making fake tensor call", "program",
        ("return q.new_empty(q.shape[0], q.shape[1], v.shape[-1])", "return torch.empty_like(q)"),
    ),
    Failure(
        "no_autograd_op", ["eager_error", "not run", "not run", "not run"], "user_side",
        "custom_op_autograd", {"op": "pt2doctor_failures.scaled_tanh.default"},
        "RuntimeError: Trying to backward through pt2doctor_failures.scaled_tanh", "program",
        ("class Net(nn.Module):",
         "scaled_tanh.register_autograd(\n"
         "    lambda ctx, grad: grad * 2 * (1 - torch.tanh(ctx.saved_tensors[0]) ** 2),\n"
         "    setup_context=lambda ctx, inputs, output: ctx.save_for_backward(inputs[0]),\n"
         ")\n\n\nclass Net(nn.Module):"),
        case=True,
    ),
    Failure(
        "data_dependent", ["crash"], "user_side", "data_dependent",
        {"where": "data_dependent.py:12"}, "UserError: Consider annotating your code", "program",
        ("    if n > 0:  # MARK:branch", "    torch._check(n > 0)\n    if n > 0:"),
    ),
    Failure(
        "dynamic_only", ["crash"], "user_side", "dynamic_specialized",
        {"where": "dynamic_only.py:16"}, "ConstraintViolationError: Constraints violated",
        "program", ("torch._dynamo.mark_dynamic(x, 0)", "torch._dynamo.maybe_mark_dynamic(x, 0)"),
    ),
    Failure(
        "user_backend", [*INDUCTOR_FAILS, "crash"], "user_side", "user_backend",
        {"function": "strict_backend"}, "NotImplementedError: strict_backend: no lowering for tanh",
        "program", ('raise NotImplementedError("strict_backend: no lowering for tanh")', "pass"),
    ),
    Failure(
        "planted_backend", [*INDUCTOR_FAILS, "crash"], "compiler_bug", None,
        {"backend": "relu_compile_error_TESTING_ONLY"}, "ReluCompileError", "minifier",
        ("backend='relu_compile_error_TESTING_ONLY'", "backend='aot_eager_decomp_partition'"),
    ),
    Failure(
        "planted_inductor", [*INDUCTOR_FAILS, "crash"], "compiler_bug", None,
        {"backend": "inductor"}, "CppCompileError: C++ compile error", "fx_graph_runnable",
        ("inject_relu_bug_TESTING_ONLY = 'compile_error'", "inject_relu_bug_TESTING_ONLY = None"),
    ),
    Failure(
        "planted_dynamo", ["crash"], "incompleteness", None, {"backend": "eager"},
        "Unsupported: missing BUILD_SET handler", "program",
        ("inject_BUILD_SET_unimplemented_TESTING_ONLY = True",
         "inject_BUILD_SET_unimplemented_TESTING_ONLY = False"),
    ),
]  # fmt: skip
# From another folder the repro is handed over and fixed (make test); from the program's own
# folder ablate's own check of it is asserted (make test-matrix: CI runs both tiers).
FOLDERS = [pytest.param("own folder", marks=pytest.mark.failure_matrix), "another folder"]


def _ablate(target: list[str], cwd: Path, out: Path, env: dict[str, str], *flags: str) -> Any:
    command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out), *flags, *target]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads((out / "report.json").read_text())


def _where(failure: Failure, folder: str, tmp: Path) -> tuple[Path, str]:
    """The folder ablate runs in, and how it names the program from there."""
    if folder == "own folder":
        return FAILURES, f"{failure.program}.py"
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    return elsewhere, str(FAILURES / f"{failure.program}.py")


def _handed_over(report: dict[str, Any], tmp: Path) -> Path:
    """The repro folder alone in an empty folder (the original removed)."""
    folder = Path(report["repro"]["path"]).parent
    copy = tmp / "empty" / "repro"
    shutil.copytree(folder, copy)
    shutil.rmtree(folder)
    return copy


def _run(repro: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The repro with plain python in the empty folder, the session's warm Inductor cache
    in the environment (the repro compiles afresh by itself)."""
    plain = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, "-I", str(repro / "repro.py")], cwd=repro.parent,
                          env=plain, capture_output=True, text=True, timeout=TIMEOUT_S,
                          check=False)  # fmt: skip


def _said(stdout: str) -> str:
    return next((line for line in stdout.splitlines() if line.startswith("REPRODUCED")), "")


def _apply_fix(copy: Path, fix: tuple[str, str]) -> None:
    """The user's fix, in whichever copied file holds the wrong text."""
    wrong, right = fix
    holders = [p for p in copy.rglob("*.py") if wrong in p.read_text()]
    assert holders, f"{wrong!r} is in no file of the repro"
    for path in holders:
        path.write_text(path.read_text().replace(wrong, right))


def _assert_conclusion(report: dict[str, Any], failure: Failure) -> None:
    verdict = report["conclusion"]
    assert verdict["category"] == failure.category, verdict
    user = verdict.get("user_side") or {}
    assert user.get("kind") == failure.kind, verdict
    failing = next(r for r in report["ladder"] if r["status"] not in ("ok", "not run"))
    for key, value in failure.named.items():
        assert (user if failure.kind else failing)[key] == value, (key, verdict, failing)
    if failure.kind:  # the user's code: its fix first, never "report it upstream"
        assert report["workarounds"][0] == user["fix"]
        assert not any("upstream" in advice for advice in report["workarounds"])


def _check_handed_over(report: dict[str, Any], failure: Failure, tmp: Path, env: dict[str, str]):
    """The repro alone fails with the program's signature; with the fix it does not fail."""
    failing = next(r for r in report["ladder"] if r["status"] not in ("ok", "not run"))
    expected = failure_signature(
        {**failing, "status": "crash" if failing["status"] == "eager_error" else failing["status"]}
    )
    copy = _handed_over(report, tmp)
    failed = _run(copy, env)
    assert failed.returncode == 1, failed.stdout[-1000:] + failed.stderr[-2000:]
    assert repro_signature(_said(failed.stdout)) == expected, (_said(failed.stdout), expected)
    assert expected.text().startswith(failure.expected)
    _apply_fix(copy, failure.fix)
    fixed = _run(copy, env)
    assert fixed.returncode == 0 and "not reproduced" in fixed.stdout, (
        fixed.stdout[-1000:] + fixed.stderr[-2000:]
    )


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("failure", CORPUS, ids=lambda f: f.program)
def test_script_mode(
    failure: Failure, folder: str, tmp_path: Path, run_env: dict[str, str]
) -> None:
    cwd, program = _where(failure, folder, tmp_path)
    out = tmp_path / "out"
    command = [sys.executable, program]
    flags: list[str] = [] if folder == "own folder" else ["--no-verify-repro"]
    if failure.accuracy:
        saved = tmp_path / "saved"
        flags += ["--accuracy-check", f"{sys.executable} {FAILURES / 'check_saved.py'} {saved}"]
        command.append(str(saved))
    report = _ablate(["--", *command], cwd, out, run_env, *flags)
    statuses = [row["status"] for row in report["ladder"]]
    assert statuses[: len(failure.ladder)] == failure.ladder, report["ladder"]
    _assert_conclusion(report, failure)
    repro = report["repro"]
    assert repro["written"] and repro["source"] == failure.source, repro
    assert repro["standalone"] and repro["lines"] < 150, repro
    if folder == "own folder":
        verified = repro["verified"]
        assert verified["reproduces"] and verified["same_failure"], verified
        assert verified["expected"].startswith(failure.expected), verified
        return
    _check_handed_over(report, failure, tmp_path, run_env)


CASE_FILES = [failure for failure in CORPUS if failure.case]


@pytest.mark.parametrize("folder", FOLDERS)
@pytest.mark.parametrize("failure", CASE_FILES, ids=lambda f: f.program)
def test_case_mode(failure: Failure, folder: str, tmp_path: Path, run_env: dict[str, str]) -> None:
    cwd, program = _where(failure, folder, tmp_path)
    flags = [] if folder == "own folder" else ["--no-verify-repro"]
    report = _ablate([program], cwd, tmp_path / "out", run_env, *flags)
    _assert_conclusion(report, failure)
    repro = report["repro"]
    if report["conclusion"]["failure"] == "eager_error":  # nothing compiled to hand over
        assert not repro["written"] and "fails without compiling" in repro["reason"]
        return
    assert repro["written"], repro
    if folder == "own folder":
        assert repro["verified"]["reproduces"], repro["verified"]
        return
    copy = _handed_over(report, tmp_path)
    failed = _run(copy, run_env)
    assert failed.returncode == 1 and "REPRODUCED" in failed.stdout, failed.stderr[-2000:]
    _apply_fix(copy, failure.fix)
    fixed = _run(copy, run_env)
    assert fixed.returncode == 0 and "not reproduced" in fixed.stdout, fixed.stderr[-2000:]


@pytest.mark.failure_matrix
def test_a_pass_the_repro_cannot_carry_is_named_and_torchs_minifier_is_the_last_rung(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """closure_pass.py's pass is a closure made while the program runs: the repro says it
    cannot carry it, and does not reproduce; torch's minifier runs as the last rung, and its
    repro (it lacks the pass too) is checked the same way and reported, not trusted."""
    cwd, program = _where(Failure("closure_pass", [], None, None, {}, "", "", ("", "")),
                          "another folder", tmp_path)  # fmt: skip
    report = _ablate(["--", sys.executable, program], cwd, tmp_path / "out", run_env)
    verdict = report["conclusion"]
    assert (verdict["category"], verdict["user_side"]["kind"]) == ("user_side", "user_pass")
    assert verdict["user_side"]["function"] == "make_pass.<locals>.check_fanout"
    repro = report["repro"]
    assert repro["source"] == "fx_graph_runnable" and repro["standalone"] is False
    assert repro["not_standalone_because"] == [
        "hook post_grad_custom_post_pass = make_pass.<locals>.check_fanout is a closure made by "
        "make_pass() while the program runs (its captured values exist only then); set it "
        "before running"
    ]
    assert repro["verified"]["reproduces"] is False
    assert repro["verified"]["expected"].startswith("RuntimeError: check_fanout: <name> has")
    last = repro["minifier"]
    assert last["source"] == "minifier" and last["minifier"]["after"] == "aot"
    assert last["minifier"]["launcher"].endswith("minifier_launcher.py")
    assert last["written"] and last["verified"]["reproduces"] is False
