"""A mixture-of-experts layer compiled with fullgraph=True, the way its users write it: an
expert that got no token is skipped with ``if mask.any():``, a Python branch on a tensor's
value, which fullgraph=True cannot trace (the program crashes). Without fullgraph the branch
is a graph break and the program runs. Prints ``result: <sum>``."""

import torch


class MoE(torch.nn.Module):
    def __init__(self, width: int = 8, experts: int = 4) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(width, experts)
        self.experts = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(experts))

    def forward(self, x):
        chosen = self.gate(x).argmax(dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            mask = chosen == index
            if mask.any():  # MARK:branch
                out[mask] = expert(x[mask])
        return out


torch.manual_seed(0)
model = torch.compile(MoE(), fullgraph=True)
print(f"result: {float(model(torch.randn(16, 8)).sum()):.4f}")
