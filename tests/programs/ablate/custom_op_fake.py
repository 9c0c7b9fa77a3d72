"""A custom op with a wrong fake kernel: ``register_fake`` returns ``torch.empty_like(x)``
(shape [rows, features]) while the kernel returns one value per row (shape [rows]). Eager and
the lower rungs run the real kernel; Inductor trusts the fake shape and its generated code's
``assert_size_stride`` fails. Only ``Scorer`` (``blocks.1``) calls the op."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


@torch.library.custom_op("pt2doctor_test::rms_score", mutates_args=())
def rms_score(x: torch.Tensor) -> torch.Tensor:
    return x.pow(2).mean(dim=-1).sqrt()


@rms_score.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)  # MARK: wrong fake


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(24, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Scorer(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_score(x)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Encoder(), Scorer())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().eval(), (torch.randn(cell.shape, 24),))


CASES = [Case("fake", build, Matrix(shapes={"b10": 10}))]
