"""Dropout in train mode: compiled code draws different random numbers than eager (the
decomposed dropout uses its own RNG calls), so the outputs differ by design; with Inductor's
``fallback_random=True`` they match."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.drop = nn.Dropout(0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(torch.relu(self.lin(x)))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), nn.Linear(16, 4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().train(), (torch.randn(cell.shape, 16),))  # MARK: train mode


CASES = [Case("dropout", build, Matrix(shapes={"b8": 8}))]
