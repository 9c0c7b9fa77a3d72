# Token-sparse attention: a router picks the "active" tokens of each sequence,
# only those tokens compute a query and attend over the whole sequence;
# the other tokens pass through unchanged (mixture-of-depths style).
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
STEPS = int(os.environ.get("STEPS", "30"))


class SparseAttention(nn.Module):
    def __init__(self, dim, heads, threshold=0.0):
        super().__init__()
        self.heads = heads
        self.threshold = threshold
        self.router = nn.Linear(dim, 1)
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        B, T, D = x.shape
        h = self.norm(x)
        score = self.router(h).squeeze(-1)                # (B, T)
        active = score > self.threshold                    # (B, T) bool
        b_idx, t_idx = torch.nonzero(active, as_tuple=True)  # (N,), (N,)
        q = self.q(h[b_idx, t_idx])                        # (N, D)
        k, v = self.kv(h).chunk(2, dim=-1)                 # (B, T, D)
        q = q.view(-1, self.heads, 1, D // self.heads)     # (N, H, 1, Dh)
        k = k[b_idx].view(-1, T, self.heads, D // self.heads).transpose(1, 2)
        v = v[b_idx].view(-1, T, self.heads, D // self.heads).transpose(1, 2)
        o = F.scaled_dot_product_attention(q, k, v)        # (N, H, 1, Dh)
        o = self.proj(o.reshape(-1, D))
        gate = torch.sigmoid(score[b_idx, t_idx]).unsqueeze(-1)
        out = x.clone()
        out[b_idx, t_idx] = x[b_idx, t_idx] + gate * o
        return out


class Model(nn.Module):
    def __init__(self, vocab=512, dim=128, heads=4, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList(SparseAttention(dim, heads) for _ in range(layers))
        self.mlps = nn.ModuleList(
            nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
            for _ in range(layers))
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        x = self.emb(tokens)
        for attn, mlp in zip(self.blocks, self.mlps):
            x = attn(x)
            x = x + mlp(x)
        return self.head(x)


def make_batches(n, B=8, T=64, vocab=512):
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, vocab, (B, T + 1), generator=g) for _ in range(n)]


def train(model, step_fn, batches):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    losses, times = [], []
    for batch in batches:
        t0 = time.perf_counter()
        logits = step_fn(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(loss.item())
    return losses, times


if __name__ == "__main__":
    torch.manual_seed(0)
    model = Model()
    compiled = torch.compile(model, backend=backend)
    losses, times = train(model, compiled, make_batches(STEPS))
    for i in range(0, STEPS, 5):
        print(f"step {i:3d} loss {losses[i]:.4f}")
    print(f"final loss {losses[-1]:.4f}")
    steady = sorted(times[10:])
    print(f"steady-state step: {steady[len(steady) // 2]:.2f} ms (median of {len(steady)})")
    print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
