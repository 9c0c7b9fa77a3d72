"""Mixed-precision training on CPU (bfloat16 autocast).

FIX: no GradScaler -- bfloat16 has the same exponent range as float32, so loss
scaling buys nothing (the grads, in float32, are bit-identical without it);
GradScaler methods are on Dynamo's skip list, so each call was a graph break.
The compiled regions are the ones Dynamo can capture whole: forward+loss
(its backward is compiled by AOTAutograd) and the optimizer step; backward()
and zero_grad() stay in plain Python.
"""
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")

torch.manual_seed(0)
model = nn.Sequential(
    nn.Linear(64, 256), nn.GELU(),
    nn.Linear(256, 256), nn.GELU(),
    nn.Linear(256, 10),
)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


@torch.compile(backend=backend)
def compute_loss(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return F.cross_entropy(model(x), y)


@torch.compile(backend=backend)
def opt_step():
    opt.step()


def train_step(x, y):
    loss = compute_loss(x, y)
    loss.backward()
    opt_step()
    opt.zero_grad(set_to_none=True)
    return loss


def main():
    g = torch.Generator().manual_seed(1)
    w_true = torch.randn(64, 10, generator=g)
    data = []
    for _ in range(8):
        x = torch.randn(128, 64, generator=g)
        data.append((x, (x @ w_true).argmax(-1)))

    times = []
    for step in range(30):
        x, y = data[step % len(data)]
        t0 = time.perf_counter()
        loss = train_step(x, y)
        times.append((time.perf_counter() - t0) * 1e3)
        if step % 5 == 0 or step == 29:
            print(f"step {step:2d}: loss {loss.item():.4f}")
    with torch.no_grad():
        acc = sum((model(x).argmax(-1) == y).float().mean().item() for x, y in data) / len(data)
    print(f"final train acc {acc:.4f}  weight norm {sum(p.norm().item() for p in model.parameters()):.4f}")
    print(f"first step incl. compile: {times[0]:.0f} ms")
    print(f"steady compiled: {statistics.median(times[10:]):.3f} ms/step (median over {len(times[10:])})")
    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])


if __name__ == "__main__":
    main()
