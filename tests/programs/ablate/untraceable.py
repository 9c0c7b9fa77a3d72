"""A model compiled with ``fullgraph=True`` whose ``blocks.1`` calls something Dynamo cannot put
in a graph (``print``): with fullgraph, Dynamo raises Unsupported already on the first rung
(incompleteness, layer dynamo); without fullgraph the same code runs with a graph break."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Scale(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Noisy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        print("step")  # MARK: untraceable
        return y * 2


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Scale(), Noisy(), Scale())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("untraceable", build, Matrix(shapes={"b4": 4}))]
