"""Text classifier served with a compiled forward, then fine-tuned on user feedback in the same process."""
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
VOCAB, SEQ, BATCH, N_CLS = 1000, 32, 8, 4


class TextClassifier(nn.Module):
    def __init__(self, vocab=VOCAB, d=64, n_cls=N_CLS):
        super().__init__()
        self.emb = nn.Embedding(vocab, d, padding_idx=0)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, n_cls)

    def forward(self, ids):
        mask = (ids != 0).unsqueeze(-1).float()
        h = self.emb(ids)
        h = self.norm(h + self.ff(h))
        pooled = (h * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled)


def tokenize(texts):
    """Toy tokenizer: hash words to ids, pad every request batch to (BATCH, SEQ)."""
    rows = []
    for t in texts:
        ids = [1 + (sum(map(ord, w)) * 31 + len(w)) % (VOCAB - 1) for w in t.split()][:SEQ]
        rows.append(ids + [0] * (SEQ - len(ids)))
    rows += [[0] * SEQ] * (BATCH - len(rows))
    return torch.tensor(rows, dtype=torch.long)


WORDS = "the movie was great awful boring fun plot actor scene music slow fast love hate ok".split()
gen = torch.Generator().manual_seed(1)


def random_texts(n):
    out = []
    for _ in range(n):
        k = int(torch.randint(3, SEQ, (1,), generator=gen))
        out.append(" ".join(WORDS[int(i)] for i in torch.randint(0, len(WORDS), (k,), generator=gen)))
    return out


model = TextClassifier()
model.eval()
cmodel = torch.compile(model, backend=backend)

# --- server startup: warm up the compiled model so the first request is fast ---
t0 = time.perf_counter()
with torch.inference_mode():
    dummy = torch.zeros(BATCH, SEQ, dtype=torch.long)
    cmodel(dummy)
print(f"warmup took {(time.perf_counter() - t0) * 1e3:.1f} ms")


def serve(n_requests, tag):
    lat, preds = [], []
    for _ in range(n_requests):
        ids = tokenize(random_texts(BATCH))
        t = time.perf_counter()
        with torch.inference_mode():
            probs = cmodel(ids).softmax(-1)
        lat.append((time.perf_counter() - t) * 1e3)
        preds.append(probs)
    p = torch.cat(preds)
    print(f"[{tag}] first request {lat[0]:.1f} ms, steady median {statistics.median(lat[1:]):.3f} ms")
    print(f"[{tag}] mean prob per class {[round(v, 4) for v in p.mean(0).tolist()]}")


serve(12, "serve-1")

# --- fine-tune on feedback collected while serving ---
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
step_ms, losses = [], []
for step in range(14):
    ids = tokenize(random_texts(BATCH))
    labels = torch.randint(0, N_CLS, (BATCH,), generator=gen)
    t = time.perf_counter()
    loss = F.cross_entropy(cmodel(ids), labels)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    step_ms.append((time.perf_counter() - t) * 1e3)
    losses.append(loss.item())
print(f"[finetune] first step {step_ms[0]:.1f} ms, steady median {statistics.median(step_ms[2:]):.3f} ms")
print(f"[finetune] losses {[round(v, 4) for v in losses[::3]]}")

model.eval()
serve(12, "serve-2")
print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
