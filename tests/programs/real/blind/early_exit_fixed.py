import os
import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class EarlyExitNet(nn.Module):
    def __init__(self, dim=32, n_blocks=12, n_classes=10):
        super().__init__()
        self.embed = nn.Linear(16, dim)
        self.blocks = nn.ModuleList(Block(dim) for _ in range(n_blocks))
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x, depth):
        h = self.embed(x)
        for i in range(depth):          # run only the first `depth` blocks
            h = self.blocks[i](h)
        return self.head(h)


model = EarlyExitNet()
# FIX: compile the per-block work, keep the depth loop in Python: one graph for every
# depth instead of one graph (and one recompile) per depth value
for blk in model.blocks:
    blk.compile(backend=BACKEND)
cmodel = model
opt = torch.optim.SGD(model.parameters(), lr=0.05)
loss_fn = nn.CrossEntropyLoss()

for step in range(24):
    x = torch.randn(8, 16)
    y = torch.randint(0, 10, (8,))
    depth = 1 + step % 12               # budget chosen per batch: 1..12
    opt.zero_grad()
    loss = loss_fn(cmodel(x, depth), y)
    loss.backward()
    opt.step()
    print(f"step {step} depth {depth}")
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
