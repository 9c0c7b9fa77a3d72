"""Fixes for a tensor value read in Python (.item(), .tolist()), applied: tests/fixproof.py."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from fixproof import prove  # noqa: E402


def scale_by_max(compile):
    def step(x):
        return x * x.abs().max().item()

    step = compile(step)
    return [step(torch.randn(4, 3)) for _ in range(3)]


def scale_by_max_kept(compile):
    return scale_by_max(compile)


def test_capture_scalar_outputs_keeps_a_scale_in_the_graph() -> None:
    proof = prove(
        "scalar.capture_scalar_outputs",
        scale_by_max,
        scale_by_max_kept,
        config={"capture_scalar_outputs": True},
    )
    assert proof.after.count("graph_breaks") == 0
