# Tiny transformer encoder that classifies variable-length token sequences.
# Sequences are padded to MAX_LEN; some batches happen to have no padding at all.
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)
random.seed(0)

PAD = 0
VOCAB = 100
MAX_LEN = 24
D = 32
HEADS = 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, mask):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        q = q.view(B, T, HEADS, D // HEADS).transpose(1, 2)
        k = k.view(B, T, HEADS, D // HEADS).transpose(1, 2)
        v = v.view(B, T, HEADS, D // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / (D // HEADS) ** 0.5
        if mask is not None:
            att = att.masked_fill(mask[:, None, None, :], float("-inf"))
        att = att.softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.proj(y)
        return x + self.mlp(self.ln2(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D, padding_idx=PAD)
        self.pos = nn.Parameter(torch.randn(MAX_LEN, D) * 0.02)
        self.blocks = nn.ModuleList([Block() for _ in range(2)])
        self.head = nn.Linear(D, 5)

    def forward(self, tokens):
        x = self.emb(tokens) + self.pos[: tokens.shape[1]]
        # only build a padding mask when the batch actually contains padding
        if (tokens == PAD).any():
            mask = tokens == PAD
        else:
            mask = None
        for blk in self.blocks:
            x = blk(x, mask)
        keep = (tokens != PAD).unsqueeze(-1).float()
        pooled = (x * keep).sum(1) / keep.sum(1)
        return self.head(pooled)


def make_batch(batch_size=8):
    toks = torch.randint(1, VOCAB, (batch_size, MAX_LEN))
    if random.random() < 0.5:  # about half the batches contain shorter sequences
        for i in range(batch_size):
            n = random.randint(4, MAX_LEN)
            toks[i, n:] = PAD
    return toks


model = Encoder().eval()
compiled = torch.compile(model)

outs = []
t0 = time.time()
with torch.no_grad():
    for step in range(30):
        tokens = make_batch()
        logits = compiled(tokens)
        outs.append(logits)
        if step % 10 == 0:
            print(f"step {step}: padded={bool((tokens == PAD).any())} "
                  f"logit0={logits[0, 0].item():.4f}")
print(f"{(time.time() - t0) * 1000 / 30:.1f} ms/step")
checksum = torch.cat(outs).abs().sum().item()
print(f"result: {checksum:.4g}")
