"""A crash planted inside Inductor: a custom post-grad pass raises on any tanh
(only ``Encoder``, ``blocks.0``, calls torch.tanh). Lower rungs never run post-grad passes."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


def raise_on_tanh(graph: torch.fx.Graph) -> None:
    if any(node.target is torch.ops.aten.tanh.default for node in graph.nodes):
        raise RuntimeError("planted post-grad pass failure on tanh")


torch._inductor.config.post_grad_custom_post_pass = raise_on_tanh


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.lin(x))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Encoder(), Gate(), nn.Linear(16, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("raising", build, Matrix(shapes={"b4": 4}))]
