"""A compiled optimizer step under an LR scheduler, as the PyTorch tutorial on compiling the
optimizer writes it (the learning rate a tensor, so a new rate is not a recompile), over a
few training steps (tests/integration/test_real_programs.py). Prints the graphs Dynamo
compiled."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
optimizer = torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))
scheduler = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=5)


@torch.compile(backend="eager")
def step() -> None:
    optimizer.step()  # MARK:step
    scheduler.step()


for _ in range(5):
    model(torch.randn(8, 16)).sum().backward()
    step()
    optimizer.zero_grad()
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
