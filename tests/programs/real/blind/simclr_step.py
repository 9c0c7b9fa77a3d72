"""SimCLR-style contrastive pre-training of a small MLP encoder on tabular features."""
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
N_SAMPLES, N_FEAT, BATCH, EPOCHS, TEMP = 3000, 32, 128, 3, 0.2


class SimCLR(nn.Module):
    def __init__(self, d_in=N_FEAT, d_hid=128, d_proj=32):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(d_in, d_hid), nn.ReLU(), nn.Linear(d_hid, d_hid), nn.ReLU())
        self.projector = nn.Sequential(nn.Linear(d_hid, d_hid), nn.ReLU(), nn.Linear(d_hid, d_proj))

    def forward(self, x1, x2):
        z1 = F.normalize(self.projector(self.encoder(x1)), dim=1)
        z2 = F.normalize(self.projector(self.encoder(x2)), dim=1)
        logits = z1 @ z2.T / TEMP
        labels = torch.arange(z1.shape[0], device=z1.device)  # positives on the diagonal
        return 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels))


def augment(x, g):
    """Feature-level augmentation: random scaling + gaussian noise + feature dropout."""
    scale = 1 + 0.2 * torch.randn(x.shape, generator=g)
    keep = (torch.rand(x.shape, generator=g) > 0.1).float()
    return (x * scale + 0.1 * torch.randn(x.shape, generator=g)) * keep


data = torch.randn(N_SAMPLES, N_FEAT, generator=torch.Generator().manual_seed(1))
loader = DataLoader(TensorDataset(data), batch_size=BATCH, shuffle=True,
                    generator=torch.Generator().manual_seed(2))

model = SimCLR()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
cmodel = torch.compile(model, backend=backend)
aug_gen = torch.Generator().manual_seed(3)

step_ms = {}  # epoch -> list of ms for full-size batches
for epoch in range(EPOCHS):
    total, n = 0.0, 0
    for (x,) in loader:
        x1, x2 = augment(x, aug_gen), augment(x, aug_gen)
        t = time.perf_counter()
        loss = cmodel(x1, x2)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        dt = (time.perf_counter() - t) * 1e3
        if x.shape[0] == BATCH:
            step_ms.setdefault(epoch, []).append(dt)
        else:
            print(f"epoch {epoch} last batch of {x.shape[0]}: {dt:.1f} ms")
        total += loss.item() * x.shape[0]
        n += x.shape[0]
    print(f"epoch {epoch} mean loss {total / n:.4f} over {n} samples")
for epoch, v in step_ms.items():
    print(f"epoch {epoch} full-batch steps: median {statistics.median(v[1:]):.3f} ms (first {v[0]:.1f} ms)")
print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
