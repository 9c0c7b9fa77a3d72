"""Serving a small encoder whose pooling walks the lengths in Python (``lengths.tolist()``: a
graph break, and the code after it compiled per batch size), the way a blind-written server
did. ``PT2D_FIXED=1`` is the fix, a masked mean in the graph: the break is gone, and the
graph of ``forward`` now covers the pooling A ran eagerly, so it has more kernels and more
time per call, and the program less (tests/integration/test_diff_extent.py). Prints a
checksum of the outputs, the same both ways. ``PT2D_BATCHES`` sets the batch sizes: nine
distinct ones take the code after the break past the recompile limit."""

import os

import torch
from torch import nn


class Pool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.proj(x))
        if os.environ.get("PT2D_FIXED") == "1":  # the fix pt2doctor prints, as printed
            keep = torch.arange(h.shape[1], device=h.device)[None, :] < lengths[:, None]
            pooled = (h * keep[..., None]).sum(1) / lengths[:, None]
        else:
            rows = []
            for i, n in enumerate(lengths.tolist()):  # MARK:break
                rows.append(h[i, :n].mean(0))
            pooled = torch.stack(rows)
        return self.head(pooled)


torch.manual_seed(0)
model = Pool().eval()
compiled = torch.compile(model)
total = 0.0
with torch.no_grad():
    batches = os.environ.get("PT2D_BATCHES", "2,3,4,3,2")  # a server's batch sizes
    for batch in map(int, batches.split(",")):
        lengths = torch.randint(2, 9, (batch,))
        x = torch.randn(batch, 8, 16)
        total += float(compiled(x, lengths).sum())
print(f"checksum: {total:.5f}")
