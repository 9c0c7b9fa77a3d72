import os

import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)


class CropPooler(nn.Module):
    """Encodes a variable number of crops per sample and pools them."""

    def __init__(self, dim=24):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, 48), nn.GELU(), nn.Linear(48, dim))
        self.head = nn.Linear(dim, 1)

    def forward(self, crops):  # crops: list[Tensor], each (dim,)
        x = torch.stack(crops, dim=0)          # (n_crops, dim)
        z = self.enc(x)
        pooled = z.mean(dim=0)
        return self.head(pooled).squeeze(-1)


model = CropPooler()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
compiled = torch.compile(model, backend=BACKEND)

# each sample comes with 1..6 crops (e.g. multi-crop augmentation / segments)
n_crops_per_step = [3, 1, 5, 2, 6, 4, 3, 2, 5, 1, 6, 4]
for step, n in enumerate(n_crops_per_step):
    crops = [torch.randn(24) for _ in range(n)]
    target = torch.randn(())
    pred = compiled(crops)
    loss = (pred - target) ** 2
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"result: {loss.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
