"""A refinement count passed as an argument of the compiled function and used as a Python loop
count: Dynamo unrolls the loop, so each count is its own graph however it arrives (an int
argument that drives ``range()`` never becomes dynamic), until the recompile limit.
``--fixed``: the loop runs in Python over a compiled step, one graph for every count; the
same numbers (tests/integration/test_run.py)."""

import sys

import torch

FIXED = "--fixed" in sys.argv


def refine_step(probs: torch.Tensor) -> torch.Tensor:
    return (probs * probs).softmax(-1)


def score(logits: torch.Tensor, n_refine: int) -> torch.Tensor:
    probs = logits.softmax(-1)
    for _ in range(n_refine):  # MARK:loop
        probs = refine_step(probs)
    return probs.max(-1).values


if FIXED:
    refine_step = torch.compile(refine_step, backend="eager")  # type: ignore[assignment]
    run = score
else:
    run = torch.compile(score, backend="eager")
torch.manual_seed(0)
total = 0.0
for request in range(12):
    total += float(run(torch.randn(2, 16), n_refine=1 + request).sum())
print(f"CHECKSUM {total:.5f}")
