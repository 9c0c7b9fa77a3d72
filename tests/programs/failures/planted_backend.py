"""``pt2doctor ablate -- python planted_backend.py``: torch's planted compiler bug at the backend
layer: the program compiles with ``relu_compile_error_TESTING_ONLY``, a backend that raises
when a graph calls ``torch.relu``. The lower rungs run; the program's own backend fails."""

import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) * 0.5


compiled = torch.compile(Gate(), backend="relu_compile_error_TESTING_ONLY")
with torch.no_grad():
    print(compiled(torch.randn(4, 8)).shape)
