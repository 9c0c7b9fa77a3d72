import os
import torch
import torch.nn as nn
import torch.nn.functional as F

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class TinyMoE(nn.Module):
    """Top-1 routing: each token goes to one expert chosen by the router."""

    def __init__(self, d=32, n_experts=4):
        super().__init__()
        self.router = nn.Linear(d, n_experts)
        self.experts = nn.ModuleList(
            nn.Sequential(nn.Linear(d, d), nn.GELU()) for _ in range(n_experts)
        )
        self.head = nn.Linear(d, 1)

    @torch.compiler.disable  # fixed: data-dependent routing runs eagerly, no per-routing recompiles
    def _route(self, x, probs, expert_ids):
        outs = []
        for i, e in enumerate(expert_ids.tolist()):
            tok = x[i:i + 1]
            outs.append(self.experts[e](tok) * probs[i:i + 1, e:e + 1])
        return torch.cat(outs, dim=0)

    def forward(self, x):
        probs = F.softmax(self.router(x), dim=-1)
        expert_ids = probs.argmax(dim=-1)
        h = self._route(x, probs, expert_ids) + x
        return self.head(h).squeeze(-1)


model = TinyMoE()
cmodel = torch.compile(model, backend=BACKEND)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)

for step in range(20):
    x = torch.randn(8, 32)
    y = x.sum(-1) * 0.1
    loss = F.mse_loss(cmodel(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}")
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
