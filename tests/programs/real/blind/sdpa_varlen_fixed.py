# Small self-attention model over sequences of many different lengths
# (no padding, each batch has its own length), using F.scaled_dot_product_attention.
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)

D = 32
HEADS = 4


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.norm = nn.LayerNorm(D)

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.norm(x)).split(D, dim=-1)
        q = q.view(B, T, HEADS, -1).transpose(1, 2)
        k = k.view(B, T, HEADS, -1).transpose(1, 2)
        v = v.view(B, T, HEADS, -1).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, D)
        return x + self.out(y)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(Attn(), Attn())
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        return self.head(self.layers(x)).mean(dim=1)


model = Model().eval()
compiled = torch.compile(model)

lengths = [8 + 3 * i for i in range(17)]  # 17 distinct sequence lengths
random.shuffle(lengths)
total = 0.0
t0 = time.time()
with torch.no_grad():
    for step, T in enumerate(lengths + lengths):
        x = torch.randn(4, T, D)
        y = compiled(x)
        total += y.sum().item()
        if step % 8 == 0:
            print(f"step {step}: T={T} out={y.sum().item():.4f}")
print(f"{(time.time() - t0) * 1000 / (2 * len(lengths)):.1f} ms/step")
print(f"result: {total:.4g}")
