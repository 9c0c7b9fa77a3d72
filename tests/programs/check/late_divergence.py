"""A training case whose compiled loss leaves eager's at a step known by construction.

``Late`` counts its calls in a buffer and from call LATE + 1 on adds ``sin(x)`` (a
``torch.where`` on the counter: one graph, no recompile). ``sin_scaling_backend`` (a planted
compiler bug) runs the captured graph with every ``torch.sin`` scaled by 1.5. Before then
compiled and eager compute the same; from 0-based training step LATE on, the compiled loss
is off. 50 steps of SGD.
"""

import operator
from typing import Any

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix

LATE, STEPS = 30, 50


class Late(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        h = self.lin(x)
        return torch.where(self.calls > LATE, h + torch.sin(h), h)


def sin_scaling_backend(gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Any:
    for node in list(gm.graph.nodes):
        if node.target is torch.sin:
            with gm.graph.inserting_after(node):
                scaled = gm.graph.call_function(operator.mul, (node, 1.5))
            node.replace_all_uses_with(
                scaled, delete_user_cb=lambda user, new=scaled: user is not new
            )
    gm.recompile()
    return gm.forward


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    model = Late().train(cell.train)
    return Built(model, (torch.randn(16, 8),), loss=lambda out: out.pow(2).mean())


CASES = [Case("late", build, Matrix(shapes={"b16": 16}, train=(True,)), steps=STEPS)]
