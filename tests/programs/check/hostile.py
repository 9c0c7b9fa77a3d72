"""A case file whose names, error message and guarded string are HTML and script, for the
check report's safety tests (tests/integration/test_check_reports.py): each payload, if it ever
ran in a browser, would set the title to PWNED-n or add ``data-pwned`` to <body>.

- the case name is markup (case names cannot hold '/', so no closing tags there);
- the shape bucket is markup too, so every cell id is;
- a second case (its name markup again) fails to build with a script in the error message (its
  own case: a build error stops its whole group's benchmark);
- the training loss flips a string attribute the compiled forward compares (``self.tag``) after
  warmup: a recompile whose failed guard quotes the payload string;
- the model has two blocks of one class, so the regional variant runs too.
"""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix

CASE_NAME = "<img src=x onerror=document.title='PWNED-1'>"
BUCKET = "<svg onload=document.title='PWNED-2'>"
BROKEN_NAME = "broken <b onmouseover=document.title='PWNED-5'>"
ERROR = "</script><script>document.title='PWNED-3'</script><b onclick=x>"
TAG = "<script>document.body.setAttribute('data-pwned','4')</script>"


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Tagged(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.tag = TAG
        self.steps = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x * 2 if self.tag == TAG else x  # MARK: tag


def build_broken(cell: Cell) -> Built:
    raise RuntimeError(ERROR)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    model = Tagged().train()

    def loss(out: torch.Tensor) -> torch.Tensor:
        model.steps += 1
        if model.steps == 4:
            model.tag = "plain"
        return out.pow(2).mean()

    return Built(model, (torch.randn(cell.shape, 8),), loss=loss)


CASES = [
    Case(CASE_NAME, build, Matrix(shapes={BUCKET: 4}, train=(True,))),
    Case(BROKEN_NAME, build_broken, Matrix(shapes={"b3": 3})),
]
