"""Multi-scale super-resolution: one network trained for several upscale factors.
Each batch picks a scale from SCALES; the net upsamples its features with
F.interpolate(scale_factor=scale) and a conv head refines the result."""
import copy
import os
import random
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
random.seed(0)
backend = os.environ.get("BACKEND", "inductor")

SCALES = [1.5, 2.0, 2.5, 3.0]
LR_SIZE = 24
BATCH = 8
STEPS = 48


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return x + self.conv2(F.relu(self.conv1(x)))


class MultiScaleSR(nn.Module):
    def __init__(self, c=16, n_blocks=2):
        super().__init__()
        self.head = nn.Conv2d(3, c, 3, padding=1)
        self.body = nn.Sequential(*[ResBlock(c) for _ in range(n_blocks)])
        self.tail = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, lr, scale):
        feat = self.head(lr)
        feat = feat + self.body(feat)
        up = F.interpolate(feat, scale_factor=scale, mode="bilinear", align_corners=False)
        base = F.interpolate(lr, scale_factor=scale, mode="bicubic", align_corners=False)
        return base + self.tail(up)


def make_batch(gen, scale):
    hr_size = int(LR_SIZE * scale)
    hr = torch.rand(BATCH, 3, hr_size, hr_size, generator=gen)
    lr = F.interpolate(hr, size=(LR_SIZE, LR_SIZE), mode="bilinear", align_corners=False, antialias=True)
    return lr, hr


model = MultiScaleSR()
eager_model = copy.deepcopy(model)  # same init, eager timing baseline
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
cmodel = torch.compile(model, backend=backend)

gen = torch.Generator().manual_seed(42)
plan = [random.choice(SCALES) for _ in range(STEPS)]
data = [(s, *make_batch(gen, s)) for s in plan]

def train_step(m, o, lr, hr, scale):
    sr = m(lr, scale)
    loss = F.l1_loss(sr, hr)
    o.zero_grad(set_to_none=True)
    loss.backward()
    o.step()
    return loss


eopt = torch.optim.Adam(eager_model.parameters(), lr=1e-3)
times, etimes, losses = [], [], []
for step, (scale, lr, hr) in enumerate(data):
    t0 = time.perf_counter()
    loss = train_step(cmodel, opt, lr, hr, scale)
    losses.append(loss.item())
    times.append((time.perf_counter() - t0) * 1000)
    t0 = time.perf_counter()                       # eager twin, same batch, for timing
    train_step(eager_model, eopt, lr, hr, scale).item()
    etimes.append((time.perf_counter() - t0) * 1000)
    if step % 12 == 0:
        print(f"step {step:3d} scale {scale} loss {loss.item():.4f}")

print(f"final loss {losses[-1]:.4f} mean loss (last 16) {statistics.mean(losses[-16:]):.4f}")
print(f"tail weight sum {model.tail.weight.sum().item():.4f}")
print(f"compiled ms/step (median, last 24 steps): {statistics.median(times[-24:]):.2f} ms")
print(f"eager    ms/step (median, last 24 steps): {statistics.median(etimes[-24:]):.2f} ms")
print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
