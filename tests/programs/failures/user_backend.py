"""``pt2doctor ablate -- python user_backend.py``: the team's own torch.compile backend (a
function in the program) has no lowering for tanh and raises. The stock backends below it run:
the failure is the user's backend, not torch's."""

import torch
from torch import nn


def strict_backend(gm: torch.fx.GraphModule, example_inputs: list[torch.Tensor]):  # type: ignore[no-untyped-def]
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is torch.tanh:
            raise NotImplementedError("strict_backend: no lowering for tanh")  # MARK:raise
    return gm.forward


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


with torch.no_grad():
    print(torch.compile(Block(), backend=strict_backend)(torch.randn(4, 8)).shape)
