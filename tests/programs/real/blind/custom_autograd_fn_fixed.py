# Quantization-aware training of a tiny MLP: weights and activations go through a
# fake-quantizer with a straight-through estimator (custom autograd.Function).
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)


class FakeQuantSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bits):
        qmax = 2 ** (bits - 1) - 1
        scale = x.abs().max() / qmax  # per-tensor scale
        scale = scale.clamp(min=1e-8)
        return torch.clamp(torch.round(x / scale), -qmax, qmax) * scale

    @staticmethod
    def backward(ctx, grad_out):
        # straight-through: pass the gradient unchanged
        return grad_out, None


class QLinear(nn.Linear):
    def forward(self, x):
        w = FakeQuantSTE.apply(self.weight, 8)
        x = FakeQuantSTE.apply(x, 8)
        return F.linear(x, w, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = QLinear(20, 64)
        self.fc2 = QLinear(64, 64)
        self.fc3 = QLinear(64, 3)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
cmodel = torch.compile(model)

X = torch.randn(512, 20)
Y = (X[:, :3] * 2 + X[:, 3:6]).argmax(-1)

losses = []
t0 = time.time()
for step in range(20):
    idx = torch.arange(step * 25, step * 25 + 25) % 512
    out = cmodel(X[idx])
    loss = F.cross_entropy(out, Y[idx])
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
    if step % 5 == 0:
        print(f"step {step}: loss {loss.item():.4f}")
print(f"{(time.time() - t0) * 1000 / 20:.1f} ms/step")
checksum = sum(losses) + sum(p.detach().abs().sum().item() for p in model.parameters())
print(f"result: {checksum:.4g}")
