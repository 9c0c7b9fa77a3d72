import copy
import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

BASE_DECAY = 0.996
TOTAL = 40


def mlp(i, h, o):
    return nn.Sequential(nn.Linear(i, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Linear(h, o))


class Online(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU())
        self.projector = mlp(128, 256, 64)

    def forward(self, x):
        return self.projector(self.encoder(x))


online = Online()
predictor = mlp(64, 256, 64)
target = copy.deepcopy(online).requires_grad_(False)
opt = torch.optim.SGD(list(online.parameters()) + list(predictor.parameters()), lr=0.05, momentum=0.9)


def byol_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1).mean()


@torch.compile(backend=backend)
def train_step(x1, x2, decay):
    p1, p2 = predictor(online(x1)), predictor(online(x2))
    with torch.no_grad():
        z1, z2 = target(x1), target(x2)
    loss = byol_loss(p1, z2) + byol_loss(p2, z1)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    # EMA update of the target network
    with torch.no_grad():
        for po, pt in zip(online.parameters(), target.parameters()):
            pt.mul_(decay).add_(po, alpha=1 - decay)
    return loss.detach()


g = torch.Generator().manual_seed(0)
data = torch.randn(512, 64, generator=g)
losses, times = [], []
for step in range(TOTAL):
    idx = torch.randint(0, 512, (64,), generator=g)
    x = data[idx]
    x1 = x + 0.1 * torch.randn(x.shape, generator=g)
    x2 = x * (1 + 0.1 * torch.randn(x.shape, generator=g))
    decay = 1 - (1 - BASE_DECAY) * (math.cos(math.pi * step / TOTAL) + 1) / 2
    t0 = time.perf_counter()
    loss = train_step(x1, x2, decay)
    losses.append(loss.item())
    times.append(time.perf_counter() - t0)

tsum = sum(p.sum().item() for p in target.parameters())
print("losses:", " ".join(f"{l:.5f}" for l in losses[::8]), f"last={losses[-1]:.5f}")
print(f"target param sum: {tsum:.5f}")
print(f"first step {times[0]*1e3:.1f} ms; steady ms/step (median of last 20): {sorted(times[-20:])[10]*1e3:.3f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
