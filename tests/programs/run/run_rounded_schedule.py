"""A dropout schedule already rounded to steps: ``p`` rises 0.0 → 0.3 in steps of 0.1 over the
first steps of training and is set on the module every step (MARK:store), so each step of
the schedule is one variant of the compiled forward, held for several calls, and the last
value for the rest of the run. Bounded by the schedule's steps, not "unbounded": it is not a
value that changes at every call (issue 39: "a schedule of 4 rounded values is called
unbounded"). Prints ``values: N`` (the distinct p values the run set) and ``result: X``.
"""

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Dropout(0.0), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
forward = torch.compile(model)
seen = []
for step in range(60):
    p = round(min(step / 40, 0.3), 1)  # 0.0, 0.1, 0.2, 0.3: four steps, each held a while
    model[2].p = p  # MARK:store
    seen.append(p)
    loss = forward(torch.randn(8, 16)).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"values: {len(set(seen))}")
print(f"result: {loss.item():.4f}")
