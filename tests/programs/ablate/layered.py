"""A model of several user-defined submodules for ``pt2doctor ablate``: only ``blocks.2.act``
calls ``torch.relu``, so torch's ``relu_*_TESTING_ONLY`` backends (which break relu) fail
there, and only when that piece is compiled."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.lin(x))


class Act(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 0.5


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 8)
        self.act = Act()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.lin(x)) + 1.0


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Encoder(), Gate(), Head())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("layered", build, Matrix(shapes={"b4": 4}))]
