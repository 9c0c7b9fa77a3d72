"""``pt2doctor ablate --accuracy-check "python check_saved.py OUT" -- python mutation_op.py OUT``:
a custom op that doubles its input in place without declaring it (``mutates_args=()``). The
compiler assumes ``y`` is unchanged, so Inductor's ``y + scaled`` differs from eager's; nothing
crashes. Also a case file (``CASES``) for ``pt2doctor ablate mutation_op.py --cell ...``."""

import json
import sys
from pathlib import Path

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


@torch.library.custom_op("pt2doctor_failures::scale_", mutates_args=())  # MARK:mutates
def scale_(x: torch.Tensor) -> torch.Tensor:
    x.mul_(2.0)
    return x.clone()


@scale_.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


class Scaler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x) * 2
        scaled = scale_(y)
        return y + scaled


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Scaler().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("mutation", build, Matrix(shapes={"b8": 8}))]


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Scaler().eval()
    x = torch.randn(8, 16)
    with torch.no_grad():
        expected = model(x)
        got = torch.compile(model)(x)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    saved = {"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}
    (out / "outputs.json").write_text(json.dumps(saved))
