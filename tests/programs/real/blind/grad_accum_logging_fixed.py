# Small MLP classifier trained with gradient accumulation (4 micro-batches per
# optimizer step). The compiled loss function clips loss spikes relative to the
# running average of the logged loss.
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)

ACCUM = 4
STEPS = 10

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)

X = torch.randn(STEPS * ACCUM, 32, 16)
W_true = torch.randn(16, 4)
Y = (X @ W_true).argmax(-1)


@torch.compile
def compute_loss(x, y, running_avg):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    # clip loss spikes at 3x the running average
    loss = torch.clamp(loss, max=3.0 * running_avg)
    return loss / ACCUM


running_avg = 1.5  # initial guess
logged = []
t0 = time.time()
for step in range(STEPS):
    for micro in range(ACCUM):
        i = step * ACCUM + micro
        loss = compute_loss(X[i], Y[i], torch.tensor(running_avg))
        loss.backward()
        l = loss.item() * ACCUM
        running_avg = 0.9 * running_avg + 0.1 * l
        logged.append(l)
    opt.step()
    opt.zero_grad()
    print(f"step {step}: loss {l:.4f} running avg {running_avg:.4f}")
print(f"{(time.time() - t0) * 1000 / (STEPS * ACCUM):.1f} ms/micro-step")
checksum = sum(logged) + sum(p.detach().abs().sum().item() for p in model.parameters())
print(f"result: {checksum:.4g}")
