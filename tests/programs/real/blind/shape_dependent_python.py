import math
import os
import torch
import torch.nn as nn

BACKEND = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
P = 4  # patch length


class PatchEncoder(nn.Module):
    def __init__(self, d=16):
        super().__init__()
        self.proj = nn.Linear(P * d, d)
        self.small = nn.Linear(d, d)
        self.big = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        # x: (batch, seq, d)
        b, s, d = x.shape
        n_patches = s // P
        x = x[:, : n_patches * P].reshape(b, n_patches, P * d)
        h = self.proj(x)
        scale = math.sqrt(h.size(-1))
        attn = (h @ h.transpose(1, 2)) / scale
        h = attn.softmax(-1) @ h
        if x.shape[0] > 16:
            h = self.big(h)
        else:
            h = self.small(h)
        return h.mean()


model = PatchEncoder()
cmodel = torch.compile(model, backend=BACKEND)

batch_sizes = [4, 8, 12, 20, 24, 32, 6, 28]
seq_lens = [16, 20, 24, 32, 16, 28, 36, 40]
with torch.no_grad():
    for b, s in zip(batch_sizes, seq_lens):
        x = torch.randn(b, s, 16)
        out = cmodel(x)
        print(f"result: {out.item():.4f}")

if os.environ.get("COUNT") == "1":
    from torch._dynamo.utils import counters
    print(dict(counters["stats"]))
    print(dict(counters["graph_break"]))
