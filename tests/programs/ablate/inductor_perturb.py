"""A wrong result planted inside Inductor: a custom post-grad pass adds 1 to every sigmoid
(only ``Gate``, ``blocks.1``, calls torch.sigmoid). Lower rungs never run post-grad passes."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix


def perturb_sigmoid(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.target is torch.ops.aten.sigmoid.default:
            with graph.inserting_after(node):
                bumped = graph.call_function(torch.ops.aten.add.Tensor, (node, 1.0))
            node.replace_all_uses_with(
                bumped, delete_user_cb=lambda user, new=bumped: user is not new
            )


torch._inductor.config.post_grad_custom_post_pass = perturb_sigmoid


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


CASES = [Case("perturbed", build, Matrix(shapes={"b4": 4}))]
