"""A normalizer whose statistics are Python floats computed from an unseeded sample at start-up
(``self.mean = float(sample.mean())``): Dynamo bakes module attributes that are floats into the
graph as constants, so every process builds a different graph, and its FX graph cache key
never matches the entries an earlier start wrote. The second start against a full cache dir
misses everything, as the first did against an empty one. ``PT2D_AS_BUFFER=1`` applies the
fix pt2doctor prints: the statistics are buffers, inputs of the graph, not constants.
``PT2D_SEEDED=1`` applies its other half: a fixed seed, so the same floats at every start."""

import os

import torch
from torch import nn


class Normalize(nn.Module):
    def __init__(self, sample: torch.Tensor) -> None:
        super().__init__()
        if os.environ.get("PT2D_AS_BUFFER") == "1":  # the fix
            self.register_buffer("mean", sample.mean())
            self.register_buffer("std", sample.std())
        else:
            self.mean = float(sample.mean())  # MARK:stats
            self.std = float(sample.std())
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.proj((x - self.mean) / self.std))


if os.environ.get("PT2D_SEEDED") == "1":
    torch.manual_seed(0)
model = Normalize(torch.randn(256, 16)).eval()  # no seed: other statistics at every start
compiled = torch.compile(model)
with torch.no_grad():
    for _ in range(3):
        compiled(torch.randn(8, 16))
print("done")
