"""``pt2doctor ablate --accuracy-check "python check_saved.py OUT" -- python
bf16_variance_script.py OUT``: a layer norm written as a one-pass variance in bfloat16
(``E[x^2] - E[x]^2``). Eager rounds every intermediate to bfloat16; Inductor fuses the
reduction and keeps float32 inside it, so the compiled numbers differ from eager's by more
than the check's tolerance. Nothing is wrong with the compiler: with Inductor's
``emulate_precision_casts=True`` compiled code rounds like eager and the check passes. The
program saves eager's and the compiled outputs for the check (tests/programs/failures/
check_saved.py)."""

import json
import sys
from pathlib import Path

import torch
from torch import nn


class OnePassNorm(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(-1, keepdim=True)
        var = (x * x).mean(-1, keepdim=True) - mean * mean  # MARK: one-pass variance
        return (x - mean) * torch.rsqrt(var + 1e-5)


class Block(nn.Module):
    """A residual block: its stream keeps the input's offset (values around 30), where the
    one-pass variance in bfloat16 loses most of its bits."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(64, 64)
        self.norm = OnePassNorm()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.proj(x) + x)


torch.manual_seed(0)
model = Block().to(torch.bfloat16).eval()
x = (torch.randn(32, 64) * 4 + 30).to(torch.bfloat16)
with torch.no_grad():
    expected = model(x)
    got = torch.compile(model)(x)
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
saved = {"expected": expected.float().flatten().tolist(), "got": got.float().flatten().tolist()}
(out / "outputs.json").write_text(json.dumps(saved))
