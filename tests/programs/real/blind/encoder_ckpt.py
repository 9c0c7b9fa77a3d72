"""Small transformer encoder trained with per-block activation checkpointing, compiled as a whole."""
import copy
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
VOCAB, SEQ, BATCH, D, HEADS, LAYERS, N_CLS = 1000, 64, 16, 64, 4, 4, 10


class Block(nn.Module):
    def __init__(self, d=D, heads=HEADS):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, attn_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self, grad_ckpt=True):
        super().__init__()
        self.grad_ckpt = grad_ckpt
        self.tok = nn.Embedding(VOCAB, D, padding_idx=0)
        self.pos = nn.Parameter(torch.randn(SEQ, D) * 0.02)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = nn.LayerNorm(D)
        self.head = nn.Linear(D, N_CLS)

    def forward(self, ids):
        keep = ids != 0
        attn_mask = keep[:, None, None, :]
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            if self.grad_ckpt and self.training:
                x = checkpoint(blk, x, attn_mask, use_reentrant=True)
            else:
                x = blk(x, attn_mask)
        x = self.ln_f(x)
        pooled = (x * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)
        return self.head(pooled)


def make_batches(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        ids = torch.randint(1, VOCAB, (BATCH, SEQ), generator=g)
        lengths = torch.randint(SEQ // 2, SEQ + 1, (BATCH,), generator=g)
        ids[torch.arange(SEQ)[None, :] >= lengths[:, None]] = 0
        out.append((ids, torch.randint(0, N_CLS, (BATCH,), generator=g)))
    return out


def train(model, fn, batches):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, ms = [], []
    for ids, y in batches:
        t = time.perf_counter()
        loss = F.cross_entropy(fn(ids), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        ms.append((time.perf_counter() - t) * 1e3)
        losses.append(loss.item())
    return losses, ms


model = Encoder()
eager_model = copy.deepcopy(model)
model.train()
eager_model.train()
cmodel = torch.compile(model, backend=backend)
batches = make_batches(16)

losses, ms = train(model, cmodel, batches)
e_losses, e_ms = train(eager_model, eager_model, batches)
print(f"compiled losses {[round(v, 4) for v in losses[::3]]}")
print(f"eager    losses {[round(v, 4) for v in e_losses[::3]]}")
print(f"compiled: first step {ms[0]:.1f} ms, steady median {statistics.median(ms[4:]):.2f} ms/step")
print(f"eager   : steady median {statistics.median(e_ms[4:]):.2f} ms/step")
print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
