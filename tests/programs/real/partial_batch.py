"""A classifier trained over a DataLoader whose dataset (200 samples) is not a multiple of the
batch size (16): each epoch ends with a partial batch of 8, the one batch of another size
(tests/integration/test_real_programs.py). ``--drop-last`` applies the fix pt2doctor prints.
Prints the graphs Dynamo compiled."""

import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(200, 12), torch.randint(0, 3, (200,)))
loader = DataLoader(data, batch_size=16, shuffle=True, drop_last="--drop-last" in sys.argv)
model = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))
compiled = torch.compile(model, backend="eager")
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _epoch in range(2):
    for features, labels in loader:  # MARK:loop
        loss = nn.functional.cross_entropy(compiled(features), labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
