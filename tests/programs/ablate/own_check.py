"""A program for ``pt2doctor ablate -- python own_check.py`` with no ``--accuracy-check``: it
checks its compiled result against eager itself and ``sys.exit(1)`` when they differ, as a
script that guards its own numbers does (ablate reads that exit, with no exception, as wrong
numbers, not a crash)."""

import sys

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 8)
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.inp(x)))


torch.manual_seed(0)
model = Net().eval()
x = torch.randn(4, 8)
with torch.no_grad():
    expected = model(x)
    got = torch.compile(model)(x)
if not torch.allclose(expected, got, atol=1e-4, rtol=1e-4):
    print(f"MISMATCH: max abs error {(expected - got).abs().max().item():.3g}")
    sys.exit(1)
print("ok")
