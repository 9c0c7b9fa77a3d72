import math
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

T = 1000
STEPS = 50


def timestep_embedding(t, dim, device):
    # sinusoidal embedding of a scalar timestep, as in the DDPM / ADM code
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=device, dtype=torch.float32) / half)
    args = t * freqs
    return torch.cat([torch.cos(args), torch.sin(args)])


class Block(nn.Module):
    def __init__(self, ch, tdim):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, ch)
        self.conv1 = nn.Conv2d(ch, ch, 3, padding=1)
        self.temb = nn.Linear(tdim, ch)
        self.norm2 = nn.GroupNorm(8, ch)
        self.conv2 = nn.Conv2d(ch, ch, 3, padding=1)

    def forward(self, x, temb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(temb)[None, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


class Denoiser(nn.Module):
    def __init__(self, ch=32, tdim=64):
        super().__init__()
        self.tdim = tdim
        self.time_mlp = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.blocks = nn.ModuleList([Block(ch, tdim) for _ in range(3)])
        self.out = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x, t: int):
        temb = self.time_mlp(timestep_embedding(t, self.tdim, x.device))
        h = self.inp(x)
        for blk in self.blocks:
            h = blk(h, temb)
        return self.out(h)


betas = torch.linspace(1e-4, 0.02, T)
alphas = 1.0 - betas
alphas_cumprod = torch.cumprod(alphas, dim=0)

model = Denoiser().eval()
cmodel = torch.compile(model, backend=backend)


@torch.no_grad()
def sample(net, n=4, size=16, seed=0, times=None):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, size, size, generator=g)
    ts = list(range(T - 1, -1, -T // STEPS))  # 999, 979, ..., 19
    for t in ts:
        t0 = time.perf_counter()
        eps = net(x, t)
        a, ab, b = alphas[t], alphas_cumprod[t], betas[t]
        mean = (x - b / torch.sqrt(1 - ab) * eps) / torch.sqrt(a)
        if t > ts[-1]:
            x = mean + torch.sqrt(b) * torch.randn(x.shape, generator=g)
        else:
            x = mean
        if times is not None:
            times.append(time.perf_counter() - t0)
    return x


ref = sample(model)
times = []
out = sample(cmodel, times=times)
times2 = []
out = sample(cmodel, times=times2)
eager_times = []
sample(model, times=eager_times)
med = lambda v: sorted(v)[len(v) // 2] * 1e3
print(f"sample: mean={out.mean().item():.6f} std={out.std().item():.6f} absmax={out.abs().max().item():.6f}")
print(f"max |compiled - eager| = {(out - ref).abs().max().item():.2e}")
print(f"first pass: total {sum(times):.2f}s, first step {times[0]*1e3:.1f} ms, second step {times[1]*1e3:.1f} ms")
print(f"steady ms/step compiled (2nd pass, median of {len(times2)}): {med(times2):.3f}")
print(f"steady ms/step eager (median of {len(eager_times)}): {med(eager_times):.3f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
