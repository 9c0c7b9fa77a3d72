# Tiny regression model trained with a linear LR-style warmup on the loss scale.
import os
import torch
import torch.nn as nn

torch.manual_seed(0)
BACKEND = os.environ.get("BACKEND", "inductor")

WARMUP_STEPS = 20
GLOBAL_STEP = 0  # incremented by the training loop (only read outside the compiled step)


class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, x):
        return self.net(x)


model = MLP()
opt = torch.optim.SGD(model.parameters(), lr=0.05)

# synthetic data: y = x @ w + noise
w_true = torch.randn(16, 1)
data = [torch.randn(32, 16) for _ in range(30)]
targets = [x @ w_true + 0.1 * torch.randn(32, 1) for x in data]


@torch.compile(backend=BACKEND)
def compute_loss(x, y, warmup):
    pred = model(x)
    loss = ((pred - y) ** 2).mean()
    return loss, loss * warmup


for x, y in zip(data, targets):
    opt.zero_grad()
    warmup = torch.tensor(min(1.0, (GLOBAL_STEP + 1) / WARMUP_STEPS))
    loss, scaled = compute_loss(x, y, warmup)
    scaled.backward()
    opt.step()
    if GLOBAL_STEP % 5 == 0 or GLOBAL_STEP == 29:
        print(f"step {GLOBAL_STEP:2d} loss {loss.item():.4f}")
    GLOBAL_STEP += 1

with torch.no_grad():
    print(f"final eval loss {((model(data[0]) - targets[0]) ** 2).mean().item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print("unique_graphs", counters["stats"]["unique_graphs"])
    print("graph_breaks", sum(counters["graph_break"].values()), dict(counters["graph_break"]))
