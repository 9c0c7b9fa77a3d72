"""``pt2doctor run -- python run_opt_loop.py [--foreach]``: a compiled Adam step over the 24
parameters of 12 Linear layers. Without ``--foreach`` Adam runs its single-tensor loop, which
Dynamo unrolls once per parameter (torch 2.13 still does); ``--foreach`` is the fix the
``unrolled_loop`` finding prints, applied (tests/integration/test_built.py)."""

import sys

import torch
from torch import nn

LAYERS = 12
model = nn.Sequential(*[nn.Linear(16, 16) for _ in range(LAYERS)])
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, foreach="--foreach" in sys.argv)


@torch.compile
def step() -> None:
    optimizer.step()


for _ in range(3):
    model(torch.randn(4, 16)).sum().backward()
    step()
    optimizer.zero_grad()
