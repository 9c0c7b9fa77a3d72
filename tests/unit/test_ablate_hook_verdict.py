"""ablate's "hooks changed after compile" verdict as pure functions (ablate/hook_verdict.py,
ablate/hook_changes.py): proven by the ``skip_nnmodule_hook_guards=False`` toggle only, named
from the hook changes the failing rung saw after its first compile, ahead of analysis/
userside's proofs, and never a compiler bug. The real runs are in
tests/integration/test_ablate_hooks.py."""

from __future__ import annotations

from typing import Any

from pt2doctor.ablate.hook_changes import distinct, late_hook_changes
from pt2doctor.ablate.hook_verdict import FIX, KIND, TOGGLE, hook_change_verdict
from pt2doctor.ablate.report import build_ablate_report
from pt2doctor.trace.types import ProbeData

ADDED = {"action": "add", "method": "register_forward_hook", "module": "Sequential",
         "file": "/home/u/train.py", "line": 64, "function": "count_step",
         "code": "self.frozen = self.encoder.register_forward_hook(detach_output)"}  # fmt: skip


def rung(status: str = "diverged", **extra: Any) -> dict[str, Any]:
    return {"backend": "eager", "layer": "dynamo", "status": status, **extra}


def test_the_toggle_that_clears_it_proves_it_and_the_changes_name_it() -> None:
    verdict = hook_change_verdict([{"name": TOGGLE, "status": "ok"}], [{**ADDED, "count": 1}])
    assert verdict is not None and verdict["kind"] == KIND
    assert verdict["detail"].startswith("by design: module hooks changed after compile")
    assert "register_forward_hook registered on Sequential at train.py:64" in verdict["detail"]
    assert "`self.frozen = self.encoder.register_forward_hook(detach_output)`" in verdict["detail"]
    assert "compiled code does not see hooks changed after compile" in verdict["detail"]
    assert verdict["where"] == "train.py:64"
    assert "skip_nnmodule_hook_guards = False" in verdict["evidence"][0]
    assert verdict["evidence"][1].startswith("after the first compile: register_forward_hook")
    # Both fixes: the hooks before compiling (or a reset), and the guard on hooks.
    assert "before the first compiled call" in FIX and "torch._dynamo.reset()" in FIX
    assert "torch._dynamo.config.skip_nnmodule_hook_guards = False before compiling" in FIX


def test_no_verdict_without_the_toggle_passing() -> None:
    assert hook_change_verdict([], [ADDED]) is None
    assert hook_change_verdict([{"name": TOGGLE, "status": "diverged"}], [ADDED]) is None
    assert hook_change_verdict([{"name": "fallback_random=True", "status": "ok"}], [ADDED]) is None


def test_a_removed_hook_and_repeated_changes_read_as_such() -> None:
    removed = {**ADDED, "action": "remove", "count": 3}
    verdict = hook_change_verdict([{"name": TOGGLE, "status": "ok"}], [removed])
    assert verdict is not None
    assert "register_forward_hook removed on Sequential at train.py:64" in verdict["detail"]
    assert ", 3 times" in verdict["detail"]


def test_changes_before_the_first_compile_are_no_suspects() -> None:
    """Script mode: the eager model's own hook (before any compile) is traced with the rest;
    only the compiled model's, after the compile, counts, once per line with its count."""
    probes = ProbeData()
    probes.compiled = {"0/0": {"t": 2.0}, "1/0": {"t": 5.0}}
    probes.module_hooks = [{**ADDED, "t": 1.0}, {**ADDED, "t": 2.5}, {**ADDED, "t": 3.0},
                           {**ADDED, "action": "remove", "t": 4.0}]  # fmt: skip
    changes = late_hook_changes(probes)
    assert [(c["action"], c["count"]) for c in changes] == [("add", 2), ("remove", 1)]
    assert late_hook_changes(ProbeData()) == []
    assert distinct([ADDED] * 20)[0]["count"] == 20


def test_the_report_calls_it_user_side_never_a_compiler_bug() -> None:
    """The hooks proof comes before analysis/userside's, in both modes' report."""
    pieces = {
        "rungs": [rung(hook_changes=[{**ADDED, "count": 1}]), {"backend": "aot_eager",
                                                               "status": "not run"}],
        "toggles": [{"name": TOGGLE, "backend": "eager", "status": "ok"}],
        "modules": None,
        "bisect": None,
    }  # fmt: skip
    report = build_ablate_report(pieces, {"mode": "case"}, {"backend": "inductor"}, "out")
    verdict = report["conclusion"]
    assert (verdict["category"], verdict["failure"], verdict["layer"]) == (
        "user_side", "diverged", "dynamo",
    )  # fmt: skip
    assert verdict["user_side"] is not None and verdict["user_side"]["kind"] == KIND
    assert verdict["user_side"]["detail"] in verdict["sentence"]
    assert report["workarounds"][0] == FIX
    assert not any("upstream" in advice for advice in report["workarounds"])
    # Without the toggle's pass the same rung stays a compiler bug: evidence, not a guess.
    pieces["toggles"] = [{"name": TOGGLE, "backend": "eager", "status": "diverged"}]
    report = build_ablate_report(pieces, {"mode": "case"}, {"backend": "inductor"}, "out")
    assert report["conclusion"]["category"] == "compiler_bug"
