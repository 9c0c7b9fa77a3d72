"""The call-level axes: memory layout, grad mode and autocast vary inside one group (one model,
one compiled artifact), so warmup compiles a variant for each layout, grad mode and autocast
state that Dynamo guards on."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.norm(self.conv(x))).mean(dim=(2, 3))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(ConvNet().eval(), (torch.randn(2, 3, cell.shape, cell.shape),))


CASES = [
    Case(
        "conv",
        build,
        Matrix(
            shapes={"s8": 8},
            layouts=("contiguous", "channels_last"),
            grad=(False, True),
            autocast=(None, "bfloat16"),
        ),
    )
]
