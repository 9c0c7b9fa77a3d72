"""A model that repeats one block class: check adds a regional variant that compiles each block
instead of the whole model, and says whether the blocks share one compiled artifact."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tanh(self.lin(x))


class Stack(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Stack().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("stack", build, Matrix(shapes={"b4": 4}))]
