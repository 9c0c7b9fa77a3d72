"""Tiny CTR model: each user's click history is a variable-length bag of item ids,
pooled with nn.EmbeddingBag (flat indices + offsets), dense MLP on top. Trained compiled."""
import copy
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
backend = os.environ.get("BACKEND", "inductor")

NUM_ITEMS = 5000
EMB_DIM = 32
BATCH = 64
N_DENSE = 13
N_USERS = 1220          # 19 full batches of 64 + a last batch of 4
EPOCHS = 2


class CTRModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(NUM_ITEMS, EMB_DIM, mode="mean")
        self.dense = nn.Sequential(nn.Linear(N_DENSE, EMB_DIM), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(2 * EMB_DIM, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, dense_x, indices, offsets):
        pooled = self.bag(indices, offsets)
        d = self.dense(dense_x)
        return self.top(torch.cat([pooled, d], dim=1)).squeeze(1)


# --- synthetic dataset: user -> (dense features, click history, label) ---
gen = torch.Generator().manual_seed(1234)
lengths_all = torch.randint(1, 21, (N_USERS,), generator=gen)       # 1..20 clicks
histories = [torch.randint(0, NUM_ITEMS, (int(n),), generator=gen) for n in lengths_all]
dense_all = torch.randn(N_USERS, N_DENSE, generator=gen)
labels_all = (torch.rand(N_USERS, generator=gen) < 0.3).float()


def collate(user_ids):
    bags = [histories[i] for i in user_ids]
    lengths = torch.tensor([len(b) for b in bags])
    indices = torch.cat(bags)
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
    return dense_all[user_ids], indices, offsets, labels_all[user_ids]


def loader():
    for start in range(0, N_USERS, BATCH):
        yield collate(list(range(start, min(start + BATCH, N_USERS))))


model = CTRModel()
eager_model = copy.deepcopy(model)          # same init, for the eager timing baseline
opt = torch.optim.Adagrad(model.parameters(), lr=0.05)
cmodel = torch.compile(model, backend=backend)


def train_step(m, o, batch):
    dense_x, indices, offsets, labels = batch
    # FIX: the number of ids per batch always varies and the last batch is short:
    # say so up front instead of letting Dynamo find out by recompiling twice.
    torch._dynamo.mark_dynamic(indices, 0)
    torch._dynamo.mark_dynamic(offsets, 0)
    torch._dynamo.mark_dynamic(dense_x, 0)
    logits = m(dense_x, indices, offsets)
    loss = F.binary_cross_entropy_with_logits(logits, labels)
    o.zero_grad(set_to_none=True)
    loss.backward()
    o.step()
    return loss


times, losses = [], []
t_start = time.perf_counter()
for epoch in range(EPOCHS):
    for step, batch in enumerate(loader()):
        t0 = time.perf_counter()
        loss = train_step(cmodel, opt, batch)
        losses.append(loss.item())
        times.append((time.perf_counter() - t0) * 1000)
    print(f"epoch {epoch} last loss {losses[-1]:.4f} mean loss {statistics.mean(losses[-20:]):.4f}")
    if epoch == 0:
        print(f"epoch 0 wall (incl. compiles): {(time.perf_counter() - t_start) * 1000:.0f} ms")

print(f"emb weight sum {model.bag.weight.sum().item():.4f}  top bias {model.top[2].bias.item():.4f}")
print(f"compiled steady ms/step (median, epoch 1 full batches): {statistics.median(times[-20:-1]):.3f} ms")

# eager baseline, same process, same batches
eopt = torch.optim.Adagrad(eager_model.parameters(), lr=0.05)
etimes = []
for batch in loader():
    t0 = time.perf_counter()
    train_step(eager_model, eopt, batch)
    etimes.append((time.perf_counter() - t0) * 1000)
print(f"eager    steady ms/step (median): {statistics.median(etimes[1:-1]):.3f} ms")
print("unique_graphs", torch._dynamo.utils.counters["stats"]["unique_graphs"])
