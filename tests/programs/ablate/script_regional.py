"""A program for ``pt2doctor ablate -- python script_regional.py OUT_DIR``: regional
compilation, each block compiled in place with ``Module.compile()``; only block 2 calls relu
(the others gelu), so a relu-planted backend is wrong in block 2 alone."""

import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, relu: bool) -> None:
        super().__init__()
        self.norm, self.lin = nn.LayerNorm(8), nn.Linear(8, 8)
        self.relu = relu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(self.norm(x))
        return x + (torch.relu(h) if self.relu else F.gelu(h))


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(relu=i == 2) for i in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


torch.manual_seed(0)
model = Net().eval()
x = torch.randn(4, 8)
with torch.no_grad():
    expected = model(x)
    for block in model.blocks:
        block.compile()
    got = model(x)
results = {"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}
(Path(sys.argv[1]) / "outputs.json").write_text(json.dumps(results))
