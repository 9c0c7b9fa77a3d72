import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Expert(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.w1 = nn.Linear(d, hidden)
        self.w2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)))


class MoE(nn.Module):
    """Top-k routed mixture of experts (Switch/Mixtral style)."""

    def __init__(self, d=64, hidden=128, n_experts=8, top_k=2):
        super().__init__()
        self.top_k = top_k
        self.router = nn.Linear(d, n_experts, bias=False)
        self.experts = nn.ModuleList([Expert(d, hidden) for _ in range(n_experts)])

    def forward(self, x):
        B, T, D = x.shape
        tokens = x.reshape(-1, D)
        gate_logits = self.router(tokens)
        weights, chosen = torch.topk(F.softmax(gate_logits, dim=-1), self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)

        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            token_idx, slot = torch.where(chosen == e)
            if token_idx.numel() == 0:
                continue  # nobody routed to this expert
            y = expert(tokens[token_idx]) * weights[token_idx, slot].unsqueeze(-1)
            out.index_add_(0, token_idx, y)
        return out.view(B, T, D)


class MoEBlock(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.moe = MoE(d)

    def forward(self, x):
        return x + self.moe(self.norm(x))


def main():
    model = MoEBlock().eval()
    # we want the whole block as one graph: fail loudly instead of silently breaking
    cmodel = torch.compile(model, fullgraph=True)

    batches = [torch.randn(4, 16, 64) for _ in range(20)]
    times, total = [], 0.0
    with torch.no_grad():
        for i, x in enumerate(batches):
            t0 = time.perf_counter()
            y = cmodel(x)
            times.append(time.perf_counter() - t0)
            total += y.abs().sum().item()
    steady = sorted(times[5:])
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {total:.4g}")


if __name__ == "__main__":
    main()
