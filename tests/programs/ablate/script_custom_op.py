"""A program for ``pt2doctor ablate -- python script_custom_op.py``: compiles a model that
calls a custom op with a wrong fake kernel (from ``script_ops.py``); Inductor crashes."""

import torch
from script_ops import rms_score
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(24, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_score(torch.tanh(self.lin(x)))


torch.manual_seed(0)
model = Net().eval()
with torch.no_grad():
    print(torch.compile(model)(torch.randn(10, 24)).shape)
