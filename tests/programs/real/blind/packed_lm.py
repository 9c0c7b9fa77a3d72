# Tiny causal LM trained on packed sequences: several documents are packed
# into one fixed-size row, and the model gets the document lengths so that
# attention never crosses a document boundary.
import os
import random
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
random.seed(0)

VOCAB, D, HEADS, LAYERS, PACK_LEN = 512, 64, 4, 2, 256


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x, seqlens):
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        outs, start = [], 0
        for n in seqlens:  # one causal attention per packed document
            qs, ks, vs = (t[start:start + n].view(n, HEADS, D // HEADS).transpose(0, 1)
                          for t in (q, k, v))
            o = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
            outs.append(o.transpose(0, 1).reshape(n, D))
            start += n
        x = x + self.proj(torch.cat(outs))
        return x + self.mlp(self.ln2(x))


class PackedLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, D)
        self.pos = nn.Embedding(PACK_LEN, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.head = nn.Linear(D, VOCAB)

    def forward(self, tokens, seqlens):
        # positions restart at 0 in every document
        pos = torch.cat([torch.arange(n) for n in seqlens])
        x = self.tok(tokens) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x, seqlens)
        return self.head(x)


def packed_batches(num):
    """Greedy packing of random-length documents into PACK_LEN tokens."""
    for _ in range(num):
        seqlens, left = [], PACK_LEN
        while left > 0:
            n = min(random.randint(16, 120), left)
            seqlens.append(n)
            left -= n
        tokens = torch.randint(0, VOCAB, (PACK_LEN,))
        yield tokens, seqlens


def loss_fn(logits, tokens, seqlens):
    # next-token loss, never predicting across a document boundary
    tgt = tokens.roll(-1).clone()
    ends = torch.tensor(seqlens).cumsum(0) - 1
    tgt[ends] = -100
    return F.cross_entropy(logits, tgt, ignore_index=-100)


model = PackedLM()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
cmodel = torch.compile(model, backend=backend)

step_ms = []
for step, (tokens, seqlens) in enumerate(packed_batches(40)):
    t0 = time.perf_counter()
    loss = loss_fn(cmodel(tokens, seqlens), tokens, seqlens)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    step_ms.append((time.perf_counter() - t0) * 1e3)
    if step % 5 == 0 or step == 39:
        print(f"step {step:2d} docs {len(seqlens)} loss {loss.item():.4f}")

print(f"ms/step (median of last 20): {statistics.median(step_ms[-20:]):.2f}")
# same last batch, forward+backward only: compiled vs not compiled
def fwd_bwd():
    t0 = time.perf_counter()
    loss_fn(cmodel(tokens, seqlens), tokens, seqlens).backward()
    opt.zero_grad(set_to_none=True)
    return (time.perf_counter() - t0) * 1e3
comp = [fwd_bwd() for _ in range(12)]
with torch.compiler.set_stance("force_eager"):
    eager = [fwd_bwd() for _ in range(12)]
print(f"fwd+bwd ms, compiled {statistics.median(comp):.2f} vs eager {statistics.median(eager):.2f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
