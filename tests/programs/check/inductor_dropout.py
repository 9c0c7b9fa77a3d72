"""A small MLP with dropout, eval and train, two shape buckets, under Inductor.

Dropout in train mode must align: compiled code runs under fallback_random from the same seed
(without it Inductor draws its own masks and every train cell would fail)."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Dropout(0.3), nn.Linear(64, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    model = MLP().to(cell.torch_dtype).train(cell.train)
    x = torch.randn(cell.shape, 32, dtype=cell.torch_dtype)
    return Built(model, (x,), loss=lambda out: out.float().pow(2).mean())


CASES = [Case("mlp", build, Matrix(shapes={"b4": 4, "b16": 16}, train=(False, True)))]
