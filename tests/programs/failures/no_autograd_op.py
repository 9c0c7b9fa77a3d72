"""``pt2doctor ablate -- python no_autograd_op.py``: a training step through a custom op that
has no ``register_autograd``: AOTAutograd traces the backward and raises ("no autograd formula
was registered"). Also a case file (a training cell)."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


@torch.library.custom_op("pt2doctor_failures::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x) * 2


@scaled_tanh.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return scaled_tanh(self.lin(x))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Net(), (torch.randn(cell.shape, 8),), loss=lambda out: out.pow(2).mean())


CASES = [Case("no_autograd", build, Matrix(shapes={"b4": 4}, train=[True]))]

if __name__ == "__main__":
    torch.manual_seed(0)
    model = Net()
    compiled = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _step in range(2):
        loss = compiled(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
