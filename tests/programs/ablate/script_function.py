"""A program for ``pt2doctor ablate -- python script_function.py OUT_DIR``: a compiled
function (not a module) that calls the model; the model's FF calls relu."""

import json
import sys
from pathlib import Path

import torch
from torch import nn


class FF(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(8, 16), nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.relu(self.up(x)))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.ff = nn.LayerNorm(8), FF()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ff(self.norm(x))


@torch.compile
def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return model(x * 2).softmax(-1)


torch.manual_seed(0)
model = Net().eval()
x = torch.randn(4, 8)
with torch.no_grad():
    expected = model(x * 2).softmax(-1)
    got = predict(model, x)
    predict(model, x)  # a second call: compiled
results = {"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}
(Path(sys.argv[1]) / "outputs.json").write_text(json.dumps(results))
