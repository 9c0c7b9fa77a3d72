import os
import torch
import torch.nn as nn
import torch.nn.functional as F

# FIX 2: let Dynamo trace loss.backward() into the graph (off by default)
torch._dynamo.config.trace_autograd_ops = True
BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

MAX_NORM = 1.0
SKIP_THRESHOLD = 50.0  # a pre-clip norm above this is a spike: skip the update

model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)


@torch.compile(backend=BACKEND)
def train_step(x, y):
    loss = F.mse_loss(model(x), y)
    loss.backward()
    total_norm = nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    # FIX: branchless skip -- zero the grads when the norm spikes, no Python `if` on a tensor
    spike = total_norm > SKIP_THRESHOLD
    for p in model.parameters():
        p.grad.masked_fill_(spike, 0.0)
    return loss.detach(), total_norm


for step in range(16):
    x = torch.randn(32, 16)
    y = x.sum(dim=1, keepdim=True)
    if step % 5 == 3:
        y = y * 20.0          # a bad batch every so often
    opt.zero_grad()
    loss, total_norm = train_step(x, y)
    opt.step()
    print(f"step {step} norm {total_norm.item():.3f}")
    print(f"result: {loss.item():.4f}")
print(f"result: {sum(p.sum() for p in model.parameters()).item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
