"""An eager optimizer's fix timed in the program (torchcompat/optimizer_trial.py), in process
with real torch optimizers: the variant it times, what it skips, and that the program's own
parameters, gradients and optimizer state come out of it untouched."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")

from pt2doctor.torchcompat.optimizer_trial import (  # noqa: E402
    PAIRS,
    optimizer_trial,
    try_optimizer_steps,
)


def _model_with_grads() -> Any:
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(6)])
    model(torch.randn(4, 8)).sum().backward()
    return model


def _snapshot(model: Any, opt: Any) -> list[Any]:
    return [
        [p.detach().clone() for p in model.parameters()],
        [p.grad.detach().clone() for p in model.parameters()],
        {
            k: {n: v.clone() if torch.is_tensor(v) else v for n, v in s.items()}
            for k, s in opt.state.items()
        },
    ]


def _same(a: list[Any], b: list[Any]) -> bool:
    params = all(torch.equal(x, y) for x, y in zip(a[0] + a[1], b[0] + b[1], strict=True))
    states = a[2].keys() == b[2].keys() and all(
        all(torch.equal(v, b[2][k][n]) if torch.is_tensor(v) else v == b[2][k][n]
            for n, v in s.items())
        for k, s in a[2].items()
    )  # fmt: skip
    return params and states


def test_an_adamw_loop_is_timed_against_fused_and_the_program_state_is_untouched() -> None:
    model = _model_with_grads()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    opt.step()  # the program's own state exists (exp_avg, step) before the trial
    before = _snapshot(model, opt)
    result = optimizer_trial(opt, pairs=3)
    assert result["optimizer"] == "AdamW" and result["variant"] == "fused=True"
    assert len(result["default_ms"]) == len(result["variant_ms"]) == 3
    assert all(ms > 0 for ms in result["default_ms"] + result["variant_ms"])
    assert _same(before, _snapshot(model, opt))
    assert opt.param_groups[0]["fused"] is None  # the program's optimizer is not reconfigured


def test_what_cannot_be_tried_says_why() -> None:
    model = _model_with_grads()
    fused = optimizer_trial(torch.optim.AdamW(model.parameters(), fused=True))
    assert fused["skipped"] == "the optimizer is already fused"
    model.zero_grad(set_to_none=True)
    no_grads = optimizer_trial(torch.optim.SGD(model.parameters(), lr=0.1))
    assert "no parameter had a gradient" in no_grads["skipped"]
    # A class with neither a fused nor a foreach step: LBFGS takes no such argument.
    model = _model_with_grads()
    lbfgs = optimizer_trial(torch.optim.LBFGS(model.parameters()))
    assert "takes neither fused=True nor foreach=True" in lbfgs["skipped"]


def test_a_foreach_optimizer_is_only_tried_fused() -> None:
    model = _model_with_grads()
    result = optimizer_trial(torch.optim.Adam(model.parameters(), foreach=True), pairs=2)
    assert result["variant"] == "fused=True"


def test_the_hook_tries_each_optimizer_once_when_ready_and_never_recurses() -> None:
    model = _model_with_grads()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    results: list[dict[str, Any]] = []
    ready = [False]
    remove = try_optimizer_steps(results.append, ready=lambda: ready[0])
    assert remove is not None
    try:
        opt.step()
        assert results == []  # not ready: the profile window is still open
        ready[0] = True
        opt.step()  # the trial: PAIRS timed pairs back to back
        opt.step()
    finally:
        remove()
    assert [r["optimizer"] for r in results] == ["SGD"]  # once, and not for its own steps
    assert results[0]["variant"] in ("fused=True", "foreach=True")
    assert len(results[0]["default_ms"]) == len(results[0]["variant_ms"]) == PAIRS
    opt.step()
    assert len(results) == 1  # removed
