import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class ResidualBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)
        self.scale = nn.Parameter(torch.ones(dim) * 0.1)

    def forward(self, x):
        return x + self.scale * self.fc2(F.gelu(self.fc1(self.norm(x))))


class TabularNet(nn.Module):
    """A deep, narrow residual MLP for tabular regression."""

    def __init__(self, n_features=24, dim=32, depth=16):
        super().__init__()
        self.inp = nn.Linear(n_features, dim)
        self.blocks = nn.ModuleList([ResidualBlock(dim) for _ in range(depth)])
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h)
        return self.out(h).squeeze(-1)


def main():
    n, n_features = 4096, 24
    X = torch.randn(n, n_features)
    w = torch.randn(n_features)
    y = torch.sin(X @ w) + 0.1 * torch.randn(n)

    model = TabularNet(n_features)
    n_tensors = sum(1 for _ in model.parameters())
    print(f"{n_tensors} parameter tensors, {sum(p.numel() for p in model.parameters())} weights")
    cmodel = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01, fused=True)

    batch = 64
    times = []
    for step in range(40):
        i = (step * batch) % n
        xb, yb = X[i:i + batch], y[i:i + batch]
        t0 = time.perf_counter()
        loss = F.mse_loss(cmodel(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.4f}")

    steady = sorted(times[10:])
    print(f"ms_per_step: {1000 * steady[len(steady) // 2]:.3f}")
    print(f"result: {loss.item():.4g}")


if __name__ == "__main__":
    main()
