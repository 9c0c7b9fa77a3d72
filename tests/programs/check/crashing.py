"""Cells that crash the process (a segfault), hang, or whose factory raises, next to cells that
work: each bad cell gets its verdict and the others complete."""

import ctypes
import time

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


class Fragile(nn.Module):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.kind = kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    if cell.bucket == "bad":
        if cell.state["kind"] == "segfault":
            ctypes.string_at(0)  # SIGSEGV
        elif cell.state["kind"] == "raises":
            raise ValueError("no weights for this bucket")
        else:
            time.sleep(3600)
    return Built(Fragile(cell.state["kind"]).eval(), (torch.randn(cell.shape, 8),))


CASES = [
    Case(
        "fragile",
        build,
        Matrix(shapes={"bad": 3, "good": 4}, state={"kind": ("segfault", "hang", "raises")}),
    )
]
