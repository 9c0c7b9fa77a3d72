"""Two graph breaks in the compiled forward: one the budget allows with a written reason
(the trade-off record), one it does not."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Chatty(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        print("step")  # MARK: allowed
        scale = y.abs().max().item()  # MARK: unexplained
        return y / (scale + 1)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Chatty().eval(), (torch.randn(cell.shape, 8),))


CASES = [Case("chatty", build, Matrix(shapes={"b4": 4}))]
