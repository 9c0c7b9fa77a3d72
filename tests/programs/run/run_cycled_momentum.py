"""A compiled optimizer step under OneCycleLR, which cycles AdamW's betas[0] as well as the
learning rate (a tensor here, so only the momentum changes the guards): the step recompiles
at every momentum value until the recompile limit (tests/integration/test_momentum.py).
``PT2D_EAGER_STEP=1`` runs the step outside the compiled function (the fix that keeps the
results); ``PT2D_NO_CYCLE=1`` creates the scheduler with ``cycle_momentum=False`` (no
recompiles, other training). Prints the graphs Dynamo compiled and the parameters' sum."""

import os

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Linear(8, 2)
opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(0.01))
sched = torch.optim.lr_scheduler.OneCycleLR(
    opt, max_lr=0.01, total_steps=12, cycle_momentum=os.environ.get("PT2D_NO_CYCLE") != "1"
)


@torch.compile
def opt_step() -> None:
    opt.step()


x = torch.randn(16, 8)
for _ in range(12):
    loss = model(x).pow(2).mean()
    loss.backward()
    if os.environ.get("PT2D_EAGER_STEP") == "1":
        opt.step()
    else:
        opt_step()
    opt.zero_grad()
    sched.step()
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
print(f"checksum: {sum(float(p.detach().sum()) for p in model.parameters()):.6f}")
