# Imbalanced classification: class weights are recomputed from each batch's label
# counts and a fresh nn.CrossEntropyLoss(weight=...) is handed to the compiled step.
import os, time, statistics
import torch
import torch.nn as nn

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)

N_CLASSES, D_IN, BATCH, STEPS = 6, 40, 256, 80

# imbalanced synthetic data: class priors 40/25/15/10/6/4 %
priors = torch.tensor([0.40, 0.25, 0.15, 0.10, 0.06, 0.04])
Y_all = torch.multinomial(priors, BATCH * STEPS, replacement=True)
centers = 0.35 * torch.randn(N_CLASSES, D_IN)
X_all = centers[Y_all] + torch.randn(BATCH * STEPS, D_IN)

model = nn.Sequential(nn.Linear(D_IN, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, N_CLASSES))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


@torch.compile(backend=backend)
def train_step(x, y, criterion):
    logits = model(x)
    loss = criterion(logits, y)
    acc = (logits.argmax(1) == y).float().mean()
    return loss, acc


def batch_class_weights(y):
    counts = torch.bincount(y, minlength=N_CLASSES).float()
    return counts.sum() / (N_CLASSES * counts.clamp(min=1.0))   # "balanced" weights


times = []
for step in range(STEPS):
    t0 = time.perf_counter()
    x = X_all[step * BATCH:(step + 1) * BATCH]
    y = Y_all[step * BATCH:(step + 1) * BATCH]
    criterion = nn.CrossEntropyLoss(weight=batch_class_weights(y))
    loss, acc = train_step(x, y, criterion)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
    if step % 20 == 19:
        print(f"step {step+1}: weighted loss {loss.item():.4g} acc {acc.item():.4g}")

print(f"steady-state step: {statistics.median(times[10:]) * 1e3:.2f} ms (median of {len(times) - 10})")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
