"""A small model served over batches of 4, 8, then 1, 3, 1 (tests/integration/
test_break_handover.py): the batch goes dynamic at 8, and a batch of 1 still compiles a variant
of its own (Dynamo specializes sizes 0 and 1; the failed guard reads ``2 <= x.size()[0]``).
``PT2D_FIXED=1`` applies the fix pt2doctor prints, ``mark_unbacked`` on the batch dim before
each call: one graph, the same checksum."""

import os

import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2)).eval()
compiled = torch.compile(model, backend="eager")
total = 0.0
with torch.no_grad():
    for batch in (4, 8, 1, 3, 1):
        x = torch.randn(batch, 8)
        if os.environ.get("PT2D_FIXED") == "1":
            torch._dynamo.decorators.mark_unbacked(x, 0)
        total += float(compiled(x).sum())  # MARK:call
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
print(f"checksum: {total:.5f}")
