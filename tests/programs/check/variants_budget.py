"""Two ways to break a variant budget.

``grow``: three shape buckets; Dynamo compiles the first static and recompiles the second with
a dynamic size (2 variants of forward). ``flip``: training code flips a module attribute the
compiled forward reads (a curriculum switch) on the 4th step, after warmup: one recompile in
steady state, whose failed guard names the attribute."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.double_output = False
        self.steps = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return y * 2 if self.double_output else y


def build_grow(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Scaled().eval(), (torch.randn(cell.shape, 8),))


def build_flip(cell: Cell) -> Built:
    torch.manual_seed(0)
    model = Scaled().train()

    def loss(out: torch.Tensor) -> torch.Tensor:
        model.steps += 1
        if model.steps == 4:  # MARK: flip
            model.double_output = True
        return out.pow(2).mean()

    return Built(model, (torch.randn(cell.shape, 8),), loss=loss)


CASES = [
    Case("grow", build_grow, Matrix(shapes={"b2": 2, "b3": 3, "b5": 5})),
    Case("flip", build_flip, Matrix(shapes={"b4": 4}, train=(True,))),
]
