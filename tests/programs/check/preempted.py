"""One call stalled by the machine: the process is stopped for 0.2 s once (``kill -STOP`` then
``-CONT`` from a shell, as a busy machine's scheduler would), on the 40th call of the model,
eager or compiled, which with ``--iterations 30`` falls among the steady iterations
(tests/integration/test_check.py)."""

import os
import subprocess

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix

STALL_AT = 40
calls = 0


@torch.compiler.disable
def count_call() -> None:
    global calls
    calls += 1
    if calls == STALL_AT:
        pid = os.getpid()
        subprocess.Popen(["sh", "-c", f"kill -STOP {pid}; sleep 0.2; kill -CONT {pid}"]).wait()


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up, self.down = nn.Linear(32, 128), nn.Linear(128, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        count_call()
        return self.down(torch.relu(self.up(x)))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Mlp().eval(), (torch.randn(4, 32),))


CASES = [Case("stalled", build, Matrix(shapes={"b4": 4}))]
