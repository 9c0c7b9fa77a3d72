"""``pt2doctor ablate --accuracy-check "python check_saved.py OUT" -- python autocast_op.py OUT``:
a custom op whose ``register_fake`` allocates float32 (``torch.empty``) where the kernel
returns its input's dtype. In float32 that is right; under ``torch.autocast`` (bfloat16) the
compiled code reads the kernel's bfloat16 output as float32 and the numbers are wrong. Also a
case file (an autocast cell)."""

import json
import sys
from pathlib import Path

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


@torch.library.custom_op("pt2doctor_failures::row_max", mutates_args=())
def row_max(x: torch.Tensor) -> torch.Tensor:
    return x.amax(dim=-1)


@row_max.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty(x.shape[:-1])  # MARK:fake_dtype


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return row_max(self.lin(x)) * 2


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Head().eval(), (torch.randn(cell.shape, 8),))


CASES = [Case("autocast", build, Matrix(shapes={"b4": 4}, autocast=["bfloat16"]))]

if __name__ == "__main__":
    torch.manual_seed(0)
    model = Head().eval()
    x = torch.randn(4, 8)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):  # MARK:autocast
        expected = model(x)
        got = torch.compile(model)(x)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    saved = {"expected": expected.float().flatten().tolist(),
             "got": got.float().flatten().tolist()}  # fmt: skip
    (out / "outputs.json").write_text(json.dumps(saved))
