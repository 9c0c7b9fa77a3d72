import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)

IN_DIM, HIDDEN, N_CLASSES = 64, 128, 10
STEPS, WARMUP, BATCH = 40, 5, 32


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(IN_DIM, HIDDEN)
        self.fc2 = nn.Linear(HIDDEN, HIDDEN)
        self.head = nn.Linear(HIDDEN, N_CLASSES)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = F.gelu(self.fc2(x))
        return self.head(x)


def lr_lambda(step):
    if step < WARMUP:
        return (step + 1) / WARMUP
    progress = (step - WARMUP) / max(1, STEPS - WARMUP)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


model = MLP()
optimizer = torch.optim.AdamW(model.parameters(), lr=torch.tensor(3e-3), weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)


@torch.compile
def train_step(x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    scheduler.step()
    return loss


g = torch.Generator().manual_seed(1)
xs = torch.randn(STEPS, BATCH, IN_DIM, generator=g)
w_true = torch.randn(IN_DIM, N_CLASSES, generator=g)
ys = (xs @ w_true).argmax(-1)

times = []
losses = []
for step in range(STEPS):
    t0 = time.perf_counter()
    loss = train_step(xs[step], ys[step])
    losses.append(loss.item())
    times.append((time.perf_counter() - t0) * 1000)
    if step % 10 == 0:
        print(f"step {step:3d}  loss {losses[-1]:.4f}  lr {scheduler.get_last_lr()[0]:.5f}")

print(f"result: {sum(losses[-10:]) / 10:.4g}")
print(f"ms_per_step: {statistics.median(times[STEPS // 2:]):.2f}")
