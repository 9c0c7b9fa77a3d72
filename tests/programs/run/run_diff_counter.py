"""Two versions of one inference module for ``pt2doctor diff`` in both directions
(tests/integration/test_diff.py). As written: a data-dependent branch (a graph break) and a call
counter on the module after it, so the frame Dynamo resumes after the break (one per way the
branch goes) recompiles for every count until the recompile limit. ``--fixed``: the branch as ``torch.where`` and no
counter (one graph, no recompile); the same outputs."""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv


class Clipper(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        if FIXED:
            return torch.where(h.abs().max() > 4.0, h / 4.0, h)
        if h.abs().max() > 4.0:  # MARK:branch
            h = h / 4.0
        self.calls += 1
        return h * (self.calls > 0)


torch.manual_seed(0)
model = torch.compile(Clipper(), backend="eager")
total = 0.0
with torch.no_grad():
    for step in range(12):  # two large batches late: the branch goes the other way twice
        total += float(model(torch.randn(4, 8) * (1 + 4 * (step in (9, 11)))).sum())
print(f"CHECKSUM {total:.5f}")
