import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")

VOCAB, D, HEADS, LAYERS, EOS, MAX_NEW = 96, 128, 4, 2, 2, 24


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.ln2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, HEADS, D // HEADS).transpose(1, 2) for t in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x))


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(64, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, VOCAB)

    def forward(self, ids):
        x = self.tok(ids) + self.pos(torch.arange(ids.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


torch.manual_seed(0)
model = TinyLM().eval()
with torch.no_grad():
    model.head.bias[EOS] += 1.0  # make EOS reasonably likely so sequences do finish


@torch.compile(backend=backend)
def decode_step(ids, finished):
    logits = model(ids)[:, -1, :]
    next_tok = logits.argmax(dim=-1)
    next_tok = torch.where(finished, torch.full_like(next_tok, EOS), next_tok)
    ids = torch.cat([ids, next_tok[:, None]], dim=1)
    finished = finished | (next_tok == EOS)
    return ids, finished        # stopping decision is made by the caller, outside the graph


@torch.no_grad()
def generate(prompt):
    ids = prompt
    finished = torch.zeros(prompt.shape[0], dtype=torch.bool)
    for _ in range(MAX_NEW):
        ids, finished = decode_step(ids, finished)
        if finished.all():      # host-side check: no graph break inside decode_step
            break
    return ids


g = torch.Generator().manual_seed(1)
prompts = [torch.randint(3, VOCAB, (4, 8), generator=g) for _ in range(6)]

step_times = []
for i, p in enumerate(prompts):
    t0 = time.perf_counter()
    out = generate(p)
    dt = time.perf_counter() - t0
    n_steps = out.shape[1] - p.shape[1]
    if i >= 2:
        step_times.append(dt / n_steps)
    print(f"prompt {i}: generated {n_steps} steps, tokens sum {int(out.sum())}, last col {out[:, -1].tolist()}")

step_times.sort()
print(f"median ms/decode step (prompts 2+): {step_times[len(step_times) // 2] * 1e3:.3f}")
from torch._dynamo.utils import counters
print("unique_graphs", counters["stats"]["unique_graphs"])
