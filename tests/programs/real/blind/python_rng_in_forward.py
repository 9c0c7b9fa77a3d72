# Residual MLP trained with LayerDrop / stochastic depth: during training each
# block is skipped with probability DROP, decided with Python's random module
# (the classic fairseq-style implementation).
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)

DROP = 0.3


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        return self.ff(self.norm(x))


class Net(nn.Module):
    def __init__(self, d=32, depth=4):
        super().__init__()
        self.inp = nn.Linear(8, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(depth)])
        self.out = nn.Linear(d, 1)

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            if self.training and random.random() < DROP:
                continue  # drop this layer for this step
            x = x + blk(x)
        return self.out(x)


model = Net()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
cmodel = torch.compile(model)

X = torch.randn(30, 64, 8)
Y = X.sum(-1, keepdim=True).sin()

losses = []
t0 = time.time()
model.train()
for step in range(30):
    pred = cmodel(X[step])
    loss = F.mse_loss(pred, Y[step])
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if step % 10 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
print(f"{(time.time() - t0) * 1000 / 30:.1f} ms/step")
checksum = sum(losses) + sum(p.detach().abs().sum().item() for p in model.parameters())
print(f"result: {checksum:.4g}")
