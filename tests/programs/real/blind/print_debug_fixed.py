# Small residual MLP trained on a synthetic classification task.
# While chasing a NaN last week, debug logging was added to every block.
import logging
import os
import torch
import torch.nn as nn
import torch.nn.functional as F

logging.basicConfig(level=logging.INFO, format="%(message)s")
log = logging.getLogger("model")

torch.manual_seed(0)
BACKEND = os.environ.get("BACKEND", "inductor")


class Block(nn.Module):
    def __init__(self, idx, d=32):
        super().__init__()
        self.idx = idx
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, x):
        h = self.fc2(F.gelu(self.fc1(self.norm(x))))
        if not torch.compiler.is_compiling():  # debug stats only when running eagerly
            log.debug("block %d: mean=%.4f std=%.4f", self.idx, h.mean().item(), h.std().item())
        return x + h


class Net(nn.Module):
    def __init__(self, d_in=16, d=32, n_blocks=4, n_classes=4):
        super().__init__()
        self.inp = nn.Linear(d_in, d)
        self.blocks = nn.ModuleList([Block(i, d) for i in range(n_blocks)])
        self.head = nn.Linear(d, n_classes)

    def forward(self, x):
        x = self.inp(x)
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


model = Net()
cmodel = torch.compile(model, backend=BACKEND)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)

# synthetic data: label = argmax of a fixed random projection
proj = torch.randn(16, 4)
xs = [torch.randn(64, 16) for _ in range(20)]
ys = [(x @ proj).argmax(-1) for x in xs]

for step, (x, y) in enumerate(zip(xs, ys)):
    logits = cmodel(x)
    loss = F.cross_entropy(logits, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 4 == 0 or step == 19:
        print(f"step {step:2d} loss {loss.item():.4f}")

model.eval()
with torch.no_grad():
    acc = (cmodel(xs[0]).argmax(-1) == ys[0]).float().mean().item()
print(f"train acc (batch 0) {acc:.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print("unique_graphs", counters["stats"]["unique_graphs"])
    print("frames", dict(counters["frames"]))
    print("graph_breaks", sum(counters["graph_break"].values()))
    for k, v in counters["graph_break"].items():
        print("  ", v, k.splitlines()[0])
