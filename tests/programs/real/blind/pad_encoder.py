import os
import time

import torch
import torch.nn as nn

backend = os.environ.get("BACKEND", "inductor")

VOCAB, D, HEADS, LAYERS, PAD = 200, 64, 4, 2, 0


class EncoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(D, HEADS, batch_first=True)
        self.ln1 = nn.LayerNorm(D)
        self.ff = nn.Sequential(nn.Linear(D, 2 * D), nn.ReLU(), nn.Linear(2 * D, D))
        self.ln2 = nn.LayerNorm(D)

    def forward(self, x, key_padding_mask=None):
        a, _ = self.attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
        x = self.ln1(x + a)
        return self.ln2(x + self.ff(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.layers = nn.ModuleList(EncoderLayer() for _ in range(LAYERS))
        self.cls = nn.Linear(D, 2)

    def forward(self, ids, key_padding_mask=None):
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x, key_padding_mask)
        if key_padding_mask is None:
            pooled = x.mean(dim=1)
        else:
            keep = (~key_padding_mask).unsqueeze(-1).float()
            pooled = (x * keep).sum(1) / keep.sum(1)
        return self.cls(pooled)


def make_batch(g, padded):
    B, T = 16, 32
    ids = torch.randint(1, VOCAB, (B, T), generator=g)
    if not padded:
        return ids, None
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] >= lengths[:, None]   # True = padding
    ids = ids.masked_fill(mask, PAD)
    return ids, mask


torch.manual_seed(0)
model = Encoder()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
cmodel = torch.compile(model, backend=backend)

g = torch.Generator().manual_seed(1)
# mixed stream: short-text buckets come pre-packed (no padding), the rest are padded
batches = [make_batch(g, padded=(i % 3 != 0)) for i in range(12)]
labels = [torch.randint(0, 2, (16,), generator=g) for _ in range(12)]

times = []
for step in range(24):
    ids, mask = batches[step % 12]
    t0 = time.perf_counter()
    logits = cmodel(ids, key_padding_mask=mask)
    loss = nn.functional.cross_entropy(logits, labels[step % 12])
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    print(f"step {step:2d} {'pad ' if mask is not None else 'full'} loss {loss.item():.4f}")

steady = sorted(times[6:])
print(f"median ms/step (steps 6+): {steady[len(steady) // 2] * 1e3:.2f}")
from torch._dynamo.utils import counters
print("unique_graphs", counters["stats"]["unique_graphs"])
