# Multi-task tabular model: one shared trunk, one head per task, heads live in an
# nn.ModuleDict keyed by task name. Each batch comes from one task, sampled at random.
import os, random, statistics, time
import torch
import torch.nn as nn
import torch.nn.functional as F

backend = os.environ.get("BACKEND", "inductor")
torch.manual_seed(0)
random.seed(0)

# task name -> number of outputs (1 = regression)
TASKS = {
    "churn": 2, "fraud": 2, "segment": 5, "ltv": 1, "nps": 11,
    "upsell": 2, "region": 8, "tenure": 1, "complaint": 3, "default": 2,
}
IN_DIM, HID, BATCH, STEPS = 64, 256, 128, 120


class MultiTaskNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(
            nn.Linear(IN_DIM, HID), nn.GELU(), nn.LayerNorm(HID),
            nn.Linear(HID, HID), nn.GELU(), nn.LayerNorm(HID),
            nn.Linear(HID, HID), nn.GELU(),
        )
        self.heads = nn.ModuleDict({
            name: nn.Sequential(nn.Linear(HID, 64), nn.GELU(), nn.Linear(64, n))
            for name, n in TASKS.items()
        })

    def forward(self, x, task):
        h = self.trunk(x)
        return self.heads[task](h)


def make_batch(task):
    x = torch.randn(BATCH, IN_DIM)
    n = TASKS[task]
    y = torch.randn(BATCH, 1) if n == 1 else torch.randint(0, n, (BATCH,))
    return x, y


def loss_fn(out, y, task):
    if TASKS[task] == 1:
        return F.mse_loss(out, y)
    return F.cross_entropy(out, y)


model = MultiTaskNet()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
# Compile only the shared trunk: the per-task head is picked by a Python string
# outside the compiled region, so no graph is specialized on the task name.
model.trunk = torch.compile(model.trunk, backend=backend)
cmodel = model

task_names = list(TASKS)
times = {}
losses = []
for step in range(STEPS):
    task = random.choice(task_names)
    x, y = make_batch(task)
    t0 = time.perf_counter()
    out = cmodel(x, task)
    loss = loss_fn(out, y, task)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    dt = (time.perf_counter() - t0) * 1e3
    losses.append(loss.item())
    if step >= 60:  # steady state: every task has been seen many times
        times.setdefault(task, []).append(dt)
    else:
        warmup_ms = warmup_ms + dt if step else dt
    if step % 20 == 0:
        print(f"step {step:3d} task {task:9s} loss {loss.item():.4f}")

print(f"mean loss last 20: {sum(losses[-20:]) / 20:.4f}")
with torch.no_grad():
    torch.manual_seed(123)
    xe = torch.randn(8, IN_DIM)
    for name in task_names:
        print(f"eval {name:9s} out-sum {cmodel(xe, name).sum().item():.4f}")

print(f"warmup (steps 0-59, includes compiles) total: {warmup_ms:.0f} ms")
all_t = [t for v in times.values() for t in v]
print(f"steady-state median step: {statistics.median(all_t):.2f} ms")
for name in task_names:
    if name in times:
        print(f"  task {name:9s} median {statistics.median(times[name]):.2f} ms (n={len(times[name])})")
print("unique_graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
