"""A scoring head that computes log-sum-exp by hand (no max subtracted), in float32 and float16
(tests/integration/test_check.py): in float16, ``exp`` of logits above ~11 overflows, so eager's
scores are all inf where the fp64 reference is finite, and compiled's are the same inf. The
cells pass (compiled computes what eager does) and the float16 one says that eager's output
is inf there (outside review, 2026-12-07: the terminal crashed on the inf, and nothing said)."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Matrix


class Scorer(nn.Module):
    def __init__(self, width: int = 128, classes: int = 512) -> None:
        super().__init__()
        self.proj = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.proj(x) * 4.0
        return torch.log(torch.exp(logits).sum(-1))


def build(cell):  # type: ignore[no-untyped-def]
    torch.manual_seed(0)
    dtype = getattr(torch, cell.dtype)
    model = Scorer().to(dtype).eval()
    return Built(model=model, inputs=(torch.randn(*cell.shape, 128, dtype=dtype) * 3,))


CASES = [
    Case(
        name="lse",
        build=build,
        matrix=Matrix(shapes={"b64": (64,)}, dtypes=("float32", "float16")),
    )
]
