"""A mixture-of-experts layer as a blind-written one had it, after the fix pt2doctor gave for
its first break (``capture_dynamic_output_shape_ops``): each expert takes the tokens routed to
it (``torch.where``, an unbacked size) and skips itself when none are (``if
token_idx.numel() == 0: continue``), a data-dependent branch inside the expert loop, so Dynamo
runs the whole forward eagerly (its record says "graph break in loop"; the break under it,
"Data-dependent branching"). ``PT2D_FIXED=1`` drops the check, as pt2doctor says: the experts
run on zero rows too; no break, the same loss (tests/integration/test_break_handover.py)."""

import os

import torch
import torch._dynamo.config as dynamo_config
import torch.nn.functional as F
from torch import nn

dynamo_config.capture_dynamic_output_shape_ops = True
FIXED = os.environ.get("PT2D_FIXED") == "1"


class MoE(nn.Module):
    def __init__(self, d: int = 16, experts: int = 4) -> None:
        super().__init__()
        self.router = nn.Linear(d, experts)
        self.experts = nn.ModuleList(nn.Linear(d, d) for _ in range(experts))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights, idx = torch.topk(F.softmax(self.router(x), dim=-1), 2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(idx == e)
            if not FIXED:  # noqa: SIM102 (the check alone on its line, as users write it)
                if token_idx.numel() == 0:  # MARK:check
                    continue
            y = expert(x[token_idx])
            out.index_add_(0, token_idx, y * weights[token_idx, slot].unsqueeze(-1))
        return out


torch.manual_seed(0)
model = MoE()
compiled = torch.compile(model, backend="eager")
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(4):
    loss = compiled(torch.randn(12, 16)).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print(f"loss: {float(loss):.6f}")
