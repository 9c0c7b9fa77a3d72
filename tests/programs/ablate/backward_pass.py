"""A wrong gradient planted inside Inductor: a custom post-grad pass that, in a backward
graph (it has ``tangents`` inputs), scales tanh's derivative (``1 - y*y``, a ``sub`` from 1)
by 1.1. Only ``squash`` calls tanh, so the forward is right, ``head``'s gradients are right,
and the gradients first leave eager's at ``squash.lin`` (training cell)."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


def scale_tanh_derivative(graph: torch.fx.Graph) -> None:
    if not any(n.op == "placeholder" and n.name.startswith("tangents") for n in graph.nodes):
        return
    for node in list(graph.nodes):
        if node.target is torch.ops.aten.sub.Tensor and node.args[0] == 1:
            with graph.inserting_after(node):
                scaled = graph.call_function(torch.ops.aten.mul.Tensor, (node, 1.1))
            node.replace_all_uses_with(
                scaled, delete_user_cb=lambda user, new=scaled: user is not new
            )


torch._inductor.config.post_grad_custom_post_pass = scale_tanh_derivative


class Squash(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inp, self.squash, self.head = nn.Linear(16, 16), Squash(), nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.squash(torch.relu(self.inp(x))))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model(), (torch.randn(8, 16),), loss=lambda out: out.pow(2).mean())


CASES = [Case("train", build, Matrix(shapes={"b8": 8}, train=(True,)), steps=1)]
