"""An accuracy error planted by torch's relu_accuracy_error_TESTING_ONLY backend, which turns
every torch.relu in the graph into ``x + 1``: the cells whose model uses relu must fail
alignment, the tanh cells must pass."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Net(nn.Module):
    def __init__(self, act: str) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.act = act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return torch.relu(y) if self.act == "relu" else torch.tanh(y)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    model = Net(cell.state["act"]).train(cell.train)
    return Built(model, (torch.randn(cell.shape, 16),), loss=lambda out: out.sum())


CASES = [
    Case(
        "net", build, Matrix(shapes={"b4": 4}, train=(False, True), state={"act": ("relu", "tanh")})
    )
]
