# Train a small classifier for a few epochs; after each epoch run a compiled
# evaluation step over the validation loader that also fills a confusion matrix.
import os
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
NUM_CLASSES, FEATURES = 10, 32

# synthetic, learnable task
w_true = torch.randn(FEATURES, NUM_CLASSES)
def make_split(n):
    x = torch.randn(n, FEATURES)
    return TensorDataset(x, (x @ w_true + 0.5 * torch.randn(n, NUM_CLASSES)).argmax(1))

train_loader = DataLoader(make_split(4000), batch_size=64, shuffle=True)
val_loader = DataLoader(make_split(1000), batch_size=64)  # 15 full batches + 40

model = nn.Sequential(nn.Linear(FEATURES, 128), nn.ReLU(), nn.Linear(128, 128),
                      nn.ReLU(), nn.Linear(128, NUM_CLASSES))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


@torch.compile(backend=backend)
def eval_step(model, x, y):
    # tensors in, tensors out: no .item()/.tolist() inside the compiled region
    logits = model(x)
    loss = F.cross_entropy(logits, y, reduction="sum")
    preds = logits.argmax(dim=1)
    correct = (preds == y).sum()
    confusion = torch.zeros(NUM_CLASSES * NUM_CLASSES, dtype=torch.long, device=x.device)
    confusion.index_add_(0, y * NUM_CLASSES + preds, torch.ones_like(y))
    return loss, correct, confusion.view(NUM_CLASSES, NUM_CLASSES)


@torch.no_grad()
def evaluate(step_ms=None):
    model.eval()
    confusion = torch.zeros(NUM_CLASSES, NUM_CLASSES, dtype=torch.long)
    total_loss, total_correct, n = torch.zeros(()), torch.zeros((), dtype=torch.long), 0
    for x, y in val_loader:
        t0 = time.perf_counter()
        loss, correct, cm = eval_step(model, x, y)
        if step_ms is not None:
            step_ms.append((time.perf_counter() - t0) * 1e3)
        total_loss += loss  # accumulate on the device, sync once at the end
        total_correct += correct
        confusion += cm
        n += y.numel()
    model.train()
    return total_loss.item() / n, total_correct.item() / n, confusion.tolist()


step_ms = []
for epoch in range(3):
    for x, y in train_loader:
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    val_loss, acc, cm = evaluate(step_ms if epoch == 2 else None)
    print(f"epoch {epoch} val_loss {val_loss:.4f} acc {acc:.4f}")
print("confusion diag:", [cm[i][i] for i in range(NUM_CLASSES)])
print("confusion row sums:", [sum(r) for r in cm])
print(f"eval ms/step (median, epoch 2): {statistics.median(step_ms):.3f}")
eager_ms = []
with torch.compiler.set_stance("force_eager"):  # same eval, not compiled
    evaluate(eager_ms)
print(f"eager eval ms/step (median): {statistics.median(eager_ms):.3f}")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
