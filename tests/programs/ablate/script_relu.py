"""A program for ``pt2doctor ablate -- python script_relu.py OUT_DIR``: compiles a small model,
saves the compiled result and eager's next to each other for ``check_outputs.py``."""

import json
import sys
from pathlib import Path

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


# A config change of the program's own: the ablate report's environment is the program's.
torch._dynamo.config.recompile_limit = 4
torch.manual_seed(0)
model = Net().eval()
x = torch.randn(4, 8)
with torch.no_grad():
    expected = model(x)
    got = torch.compile(model)(x)
results = {"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}
(Path(sys.argv[1]) / "outputs.json").write_text(json.dumps(results))
