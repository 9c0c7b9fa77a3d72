"""A model that scales its input in place (``x.mul_(0.5)``, a normalization written to save a
copy) beside the same model written out of place. check compares the input's value after the
call too (compiled code must write it back) and notes that the model changes its input; the
out-of-place twin gets no note."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Net(nn.Module):
    def __init__(self, in_place: bool) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.in_place = in_place

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.mul_(0.5) if self.in_place else x * 0.5  # MARK: in place
        return torch.tanh(self.lin(x))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    model = Net(cell.state["in_place"]).train(cell.train)
    return Built(model, (torch.randn(cell.shape, 16),), loss=lambda out: out.sum())


CASES = [
    Case(
        "net",
        build,
        Matrix(shapes={"b4": 4}, train=(False, True), state={"in_place": (True, False)}),
    )
]
