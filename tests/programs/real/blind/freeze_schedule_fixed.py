import os
import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class MLP(nn.Module):
    def __init__(self, dim=32, depth=6, n_cls=4):
        super().__init__()
        self.blocks = nn.ModuleList(
            [nn.Sequential(nn.Linear(dim, dim), nn.GELU()) for _ in range(depth)]
        )
        self.head = nn.Linear(dim, n_cls)

    def forward(self, x):
        for blk in self.blocks:
            x = x + blk(x)
        return self.head(x)


model = MLP()
loss_fn = nn.CrossEntropyLoss()

# start with everything frozen except the head.
# Keep requires_grad=True on every parameter (flipping it changes a guard and
# recompiles train_step); "frozen" params just get their grad dropped below.
frozen = set(model.blocks.parameters())

opt = torch.optim.SGD(model.parameters(), lr=0.05)


@torch.compile(backend=BACKEND)
def train_step(x, y):
    logits = model(x)
    return loss_fn(logits, y)


data = torch.randn(64, 32)
target = torch.randint(0, 4, (64,))

UNFREEZE_EVERY = 3
groups = list(reversed(model.blocks))  # top-down gradual unfreezing
for step in range(24):
    if step > 0 and step % UNFREEZE_EVERY == 0 and groups:
        g = groups.pop(0)
        frozen.difference_update(g.parameters())  # unfreeze next group
    opt.zero_grad(set_to_none=True)
    loss = train_step(data, target)
    loss.backward()
    for p in frozen:
        p.grad = None  # SGD skips params with grad None -> stays frozen
    opt.step()
    print(f"step {step} result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters

    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
