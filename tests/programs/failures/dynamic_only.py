"""``pt2doctor ablate -- python dynamic_only.py``: the batch dimension is marked dynamic, but
the model branches on it (``x.shape[0] == 4``), which specializes it: Dynamo raises
``ConstraintViolationError``. Without the mark (static shapes) the program runs."""

import torch
from torch import nn


class Pool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        if x.shape[0] == 4:  # MARK:specializes
            return h.reshape(2, -1, 8).mean(0)
        return h


model = torch.compile(Pool())
for _step in range(2):
    x = torch.randn(4, 8)
    torch._dynamo.mark_dynamic(x, 0)  # MARK:mark
    print(model(x).shape)
