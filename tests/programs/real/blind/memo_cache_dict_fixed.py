import math
import os

import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

POS_CACHE = {}


def make_positions(T, dim):
    pos = torch.arange(T, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(T, dim)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class Encoder(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.dim = dim
        self.inp = nn.Linear(16, dim)
        self.out = nn.Linear(dim, 1)

    def forward(self, x):  # x: (B, T, 16)
        T = x.shape[1]
        # no Python dict keyed by T inside the compiled region: the lookup pins T
        # to a constant (and guards on the dict); the compiled graph recomputes it cheaply
        h = self.inp(x) + make_positions(T, self.dim)
        h = torch.tanh(h)
        return self.out(h).mean(dim=(1, 2))


model = Encoder()
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
compiled = torch.compile(model, backend=BACKEND)

seq_lens = [8, 12, 8, 16, 20, 12, 24, 8, 28, 16, 32, 20]
for step, T in enumerate(seq_lens):
    x = torch.randn(4, T, 16)
    y = torch.randn(4)
    loss = ((compiled(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
