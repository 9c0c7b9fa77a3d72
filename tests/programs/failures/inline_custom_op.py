"""``pt2doctor ablate -- python inline_custom_op.py``: a custom op defined in the script itself
whose ``register_fake`` returns the wrong shape; Inductor crashes. ablate copies the op out of
the script's source into the repro (tests/integration/test_failures.py). Also a case file."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


@torch.library.custom_op("pt2doctor_inline::row_norm", mutates_args=())
def row_norm(x: torch.Tensor) -> torch.Tensor:
    return x.pow(2).sum(dim=-1).sqrt()


@row_norm.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)  # MARK:wrong_fake


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return row_norm(torch.tanh(self.lin(x)))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Net().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("fake", build, Matrix(shapes={"b6": 6}))]

if __name__ == "__main__":
    torch.manual_seed(0)
    with torch.no_grad():
        print(torch.compile(Net().eval())(torch.randn(6, 16)).shape)
