"""A noise-augmented encoder compiled with ``fullgraph=True``: its forward scales by a NumPy
random draw (``float(np.random.rand())``), which Dynamo traces as a tensor op, so the float is
a data-dependent value: under fullgraph=True the compile fails at that line. No branch is
there: the fix is the draw made outside and passed in (``--fixed``), with the same numbers
(NumPy's RNG seeded alike)."""

import sys

import numpy as np
import torch
from torch import nn

FIXED = "--fixed" in sys.argv


class NoisyEncoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, jitter: torch.Tensor | None = None) -> torch.Tensor:
        h = self.proj(x)
        if jitter is None:
            scale = np.sqrt(h.shape[-1]) * float(np.random.rand())  # MARK:draw
        else:
            scale = np.sqrt(h.shape[-1]) * jitter
        return h / scale


torch.manual_seed(0)
np.random.seed(0)
model = torch.compile(NoisyEncoder(), fullgraph=True)
total = 0.0
for _step in range(4):
    x = torch.randn(4, 16)
    y = model(x, torch.tensor(float(np.random.rand()))) if FIXED else model(x)
    total += float(y.sum())
print(f"CHECKSUM {total:.6f}")
