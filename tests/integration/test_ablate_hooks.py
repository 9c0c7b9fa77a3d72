"""``pt2doctor ablate`` on a module hook registered after the model was compiled (issue 39,
item 6a and 6e): by design, not a compiler bug, in case mode and in script mode alike.

tests/programs/ablate/hook_freeze.py freezes its encoder after the first training step with a
forward hook its own bookkeeping registers (MARK:hook_added); hook_freeze_case.py is the same
model as a training cell. Dynamo does not guard on module hooks, so the compiled forward keeps
running without the hook. The truth is measured here, not read from pt2doctor: as written,
compiled differs from eager; with either fix (``skip_nnmodule_hook_guards = False`` before
compiling, or the hook registered before compiling and switched by a flag) it equals eager.
Both modes must then give the same class, name the user's line and give both fixes.

Backend eager throughout: the failure is Dynamo's (the first rung). Cost on 2 loaded CPU
cores: ~10 s of truth runs, ~8 s case mode, ~15-25 s script mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_ablate import ABLATE_DIR, TIMEOUT_S, ablate

from oracles import marker_in
from pt2doctor.ablate.hook_verdict import KIND, TOGGLE

pytestmark = pytest.mark.torch_run

PROGRAM = ABLATE_DIR / "hook_freeze.py"
CASE_FILE = ABLATE_DIR / "hook_freeze_case.py"
CHECK = ABLATE_DIR.parent / "failures" / "check_saved.py"

# The case's own cell trained eagerly and compiled (backend eager), with and without the guard
# on hooks: plain torch, no pt2doctor alignment; prints [as written equal, fixed equal].
CASE_TRUTH = """
import copy, json, runpy, sys
import torch
from pt2doctor.cases.case import cells
from pathlib import Path
sys.path.insert(0, str(Path(sys.argv[1]).parent))  # the case imports hook_freeze beside it
case = runpy.run_path(sys.argv[1])["CASES"][0]
cell = cells(case)[0]

def train(model, built):
    optimizer = built.optimizer(list(model.parameters()))
    for _ in range(case.steps):
        optimizer.zero_grad()
        built.loss(model(*built.inputs)).backward()
        optimizer.step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])

def equal(guard_hooks):
    torch._dynamo.reset()
    built = case.build(cell)
    compiled = copy.deepcopy(built.model)
    with torch._dynamo.config.patch(skip_nnmodule_hook_guards=not guard_hooks):
        compiled.compile(backend="eager")
        got = train(compiled, built)
    return bool(torch.allclose(train(built.model, built), got, rtol=1e-4, atol=1e-5))

print(json.dumps([equal(False), equal(True)]))
"""


def program_matches_eager(tmp: Path, env: dict[str, str], fix: str) -> bool:
    """hook_freeze.py with ``FIX=fix``, compiled with backend eager: does the accuracy check
    (compiled parameters against eager's) pass?"""
    saved = tmp / f"truth-{fix or 'as-written'}"
    ran = subprocess.run([sys.executable, str(PROGRAM), str(saved)], cwd=tmp,
                         env={**env, "FIX": fix, "BACKEND": "eager"}, capture_output=True,
                         text=True, timeout=TIMEOUT_S, check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    checked = subprocess.run([sys.executable, str(CHECK), str(saved)], capture_output=True,
                             timeout=TIMEOUT_S, check=False)  # fmt: skip
    return checked.returncode == 0


def assert_hooks_by_design(report: dict[str, Any]) -> dict[str, Any]:
    """Hooks changed after compile, proven by the toggle, at the program's line, both fixes."""
    statuses = [row["status"] for row in report["ladder"]]
    assert statuses[:2] == ["diverged", "not run"], statuses
    assert {t["name"]: t["status"] for t in report["toggles"]}[TOGGLE] == "ok", report["toggles"]
    verdict = report["conclusion"]
    assert verdict["category"] == "user_side", verdict
    user = verdict["user_side"]
    assert user["kind"] == KIND and user["detail"] in verdict["sentence"]
    line = marker_in(PROGRAM, "hook_added")
    assert user["where"] == f"hook_freeze.py:{line}"
    assert (
        f"register_forward_hook registered on Sequential at hook_freeze.py:{line}"
        in (user["detail"])
    )
    assert "self.encoder.register_forward_hook(detach_output)" in user["detail"]
    assert "compiled code does not see hooks changed after compile" in user["detail"]
    fix = report["workarounds"][0]
    assert fix == user["fix"]
    assert "Register the hooks before the first compiled call" in fix
    assert "torch._dynamo.reset()" in fix
    assert "torch._dynamo.config.skip_nnmodule_hook_guards = False before compiling" in fix
    assert not any("upstream" in advice for advice in report["workarounds"])
    return dict(user)


def test_the_truth_both_fixes_give_eagers_numbers(tmp_path: Path, run_env: dict[str, str]) -> None:
    """Measured, as the case and as the program: as written compiled leaves eager (the case;
    the program's ablate ladder below shows it with the program's own check); the guard on
    hooks, or the hook registered before compiling, gives eager's parameters."""
    assert program_matches_eager(tmp_path, run_env, "flag")
    assert program_matches_eager(tmp_path, run_env, "before")
    ran = subprocess.run([sys.executable, "-c", CASE_TRUTH, str(CASE_FILE)], cwd=tmp_path,
                         env=run_env, capture_output=True, text=True, timeout=TIMEOUT_S,
                         check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert json.loads(ran.stdout.splitlines()[-1]) == [False, True]


def test_case_mode_and_script_mode_agree_it_is_by_design(
    tmp_path: Path, run_env: dict[str, str]
) -> None:
    """The same failure as a case and as a program: the same class, the same user line."""
    (tmp_path / "case").mkdir()
    case, done = ablate(tmp_path / "case", run_env, str(CASE_FILE), "--no-verify-repro")
    assert done.returncode == 1, done.stderr[-3000:]
    by_case = assert_hooks_by_design(case)
    assert case["ladder"][0]["worst"]["name"].startswith("param.encoder.")
    saved = tmp_path / "saved"
    check = f"{sys.executable} {CHECK} {saved}"
    (tmp_path / "script").mkdir()
    script, done = ablate(tmp_path / "script", run_env, "--no-verify-repro", "--accuracy-check",
                          check, "--", sys.executable, str(PROGRAM), str(saved))  # fmt: skip
    assert done.returncode == 1, done.stderr[-3000:]
    by_script = assert_hooks_by_design(script)
    assert script["ladder"][0]["error"] == "accuracy check exit 1"
    same = ("category", "layer", "failure")
    assert [case["conclusion"][k] for k in same] == [script["conclusion"][k] for k in same]
    assert (by_case["kind"], by_case["where"]) == (by_script["kind"], by_script["where"])
