"""A custom op that writes to its input without declaring it: ``mutates_args=()`` while the
kernel doubles ``x`` in place. The compiler assumes ``x`` is unchanged, so Inductor's
result differs from eager's (eager: y is doubled before ``y + scaled``). Only ``Scaler``
(``blocks.1``) calls the op."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


@torch.library.custom_op("pt2doctor_test::scale_", mutates_args=())  # MARK: undeclared mutation
def scale_(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2.0)
    return x.clone()


@scale_.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


class Scaler(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * 2
        scaled = scale_(y)
        return y + scaled


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Encoder(), Scaler())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("mutation", build, Matrix(shapes={"b8": 8}))]
