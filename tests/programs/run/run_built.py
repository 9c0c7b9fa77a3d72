"""``pt2doctor run --kernels -- python run_built.py``: a block whose kernels map to its lines,
with an op that has no Inductor lowering on CPU (``cumsum``) and a Python loop that Dynamo
unrolls STEPS times into most of the graph (tests/integration/test_built.py).
The cumsum line's comment is HTML and script: the report shows the line as text (the HTML
panel's browser test). ``--max-fusion-size N`` sets Inductor's max_fusion_size: fewer nodes per kernel, more kernels
(the graph-aware diff's config change)."""

import sys

import torch
from torch import nn

STEPS = 24


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(32)
        self.up = nn.Linear(32, 64)
        self.down = nn.Linear(64, 32)
        self.gains = nn.Parameter(torch.linspace(0.1, 0.2, STEPS))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm(x)  # MARK:norm
        h = nn.functional.gelu(self.up(h))  # MARK:gelu
        h = self.down(h).cumsum(dim=-1)  # <script>document.title='PWNED-K'</script> # MARK:cumsum
        for i in range(STEPS):
            h = h + self.gains[i] * torch.sin(h)  # MARK:loop
        return x + h


if "--max-fusion-size" in sys.argv:
    size = int(sys.argv[sys.argv.index("--max-fusion-size") + 1])
    torch._inductor.config.max_fusion_size = size

model = torch.compile(Block())
with torch.no_grad():
    for _ in range(3):
        model(torch.randn(4, 32))
