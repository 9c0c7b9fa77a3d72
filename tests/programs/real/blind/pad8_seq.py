# Sequence classifier trained on variable-length batches. The forward pads the
# time axis up to a multiple of 8 (friendlier GEMM shapes) and masks the pad.
# Compiled with dynamic=True since every batch has a different length.
import math
import os
import random
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
STEPS = int(os.environ.get("STEPS", "40"))
PAD_ID = 0


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, attn_mask):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        x = x + self.out(a.transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.ln2(x))


class SeqClassifier(nn.Module):
    def __init__(self, vocab=1000, dim=64, heads=4, layers=2, classes=5, max_len=256):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=PAD_ID)
        self.pos = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens):
        B, L = tokens.shape
        padded_len = math.ceil(L / 8) * 8
        tokens = F.pad(tokens, (0, padded_len - L), value=PAD_ID)
        keep = tokens != PAD_ID                                   # (B, T)
        x = self.emb(tokens) + self.pos(torch.arange(padded_len))
        attn_mask = keep[:, None, None, :]                        # (B, 1, 1, T)
        for blk in self.blocks:
            x = blk(x, attn_mask)
        x = self.ln(x)
        pooled = (x * keep.unsqueeze(-1)).sum(1) / keep.sum(1, keepdim=True)
        return self.head(pooled)


def make_batches(n, B=16, seed=1):
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        L = rng.randint(17, 120)
        tokens = torch.randint(1, 1000, (B, L), generator=g)
        labels = tokens[:, 0] % 5
        out.append((tokens, labels))
    return out


def train(model, step_fn, batches):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times = [], []
    for tokens, labels in batches:
        t0 = time.perf_counter()
        loss = F.cross_entropy(step_fn(tokens), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    return losses, times


if __name__ == "__main__":
    torch.manual_seed(0)
    model = SeqClassifier()
    compiled = torch.compile(model, backend=backend, dynamic=True)
    batches = make_batches(STEPS)
    losses, times = train(model, compiled, batches)
    for i in range(0, STEPS, 5):
        print(f"step {i:3d} len {batches[i][0].shape[1]:3d} loss {losses[i]:.4f}")
    print(f"final loss {losses[-1]:.4f}")
    steady = sorted(times[10:])
    print(f"steady-state step: {steady[len(steady) // 2]:.2f} ms (median of {len(steady)})")
    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
