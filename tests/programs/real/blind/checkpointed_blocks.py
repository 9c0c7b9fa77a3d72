import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)

D_MODEL, N_HEADS, N_BLOCKS, SEQ, BATCH = 64, 4, 3, 32, 8
STEPS = 20
DEBUG_SHAPES = True


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.attn = nn.MultiheadAttention(D_MODEL, N_HEADS, batch_first=True)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.ff = nn.Sequential(nn.Linear(D_MODEL, 4 * D_MODEL), nn.GELU(), nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x):
        if DEBUG_SHAPES:
            print(f"block input {tuple(x.shape)}")
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList(Block() for _ in range(N_BLOCKS))
        self.head = nn.Linear(D_MODEL, 1)

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return self.head(x.mean(dim=1)).squeeze(-1)


model = Encoder()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
compiled = torch.compile(model)

g = torch.Generator().manual_seed(1)
xs = torch.randn(STEPS, BATCH, SEQ, D_MODEL, generator=g)
ys = xs.mean(dim=(2, 3)) * 10

times = []
losses = []
for step in range(STEPS):
    t0 = time.perf_counter()
    loss = F.mse_loss(compiled(xs[step]), ys[step])
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    times.append((time.perf_counter() - t0) * 1000)
    losses.append(loss.item())

print(f"result: {sum(losses[-4:]) / 4:.4g}")
print(f"ms_per_step: {statistics.median(times[STEPS // 2:]):.2f}")
