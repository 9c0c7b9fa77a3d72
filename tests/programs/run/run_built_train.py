"""``pt2doctor run --kernels -- python run_built_train.py``: a training step, so one compile
has two Inductor graphs (forward and backward) whose provenance keys restart at 1 in each
(tests/integration/test_built.py)."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.gelu(self.up(x))  # MARK:gelu
        return torch.tanh(self.down(h)).sum()  # MARK:tanh


model = Block()
step = torch.compile(model)
for _ in range(2):
    step(torch.randn(4, 16)).backward()
