"""The case-mode twin of fullgraph_moe.py: the same mixture-of-experts layer, whose
``if mask.any():`` skips an expert that got no token (a Python branch on a tensor's value),
as a case. Ablated with ``--fullgraph`` it fails at Dynamo, as the program does with its own
``fullgraph=True``: the two modes must give the same verdict and the same first workaround."""

import torch

from pt2doctor.cases import Built, Case, Cell, Matrix


class MoE(torch.nn.Module):
    def __init__(self, width: int = 8, experts: int = 4) -> None:
        super().__init__()
        self.gate = torch.nn.Linear(width, experts)
        self.experts = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(experts))

    def forward(self, x):
        chosen = self.gate(x).argmax(dim=-1)
        out = torch.zeros_like(x)
        for index, expert in enumerate(self.experts):
            mask = chosen == index
            if mask.any():  # MARK:branch
                out[mask] = expert(x[mask])
        return out


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(MoE().eval(), (torch.randn(cell.shape, 8),))


CASES = [Case("moe", build, Matrix(shapes={"b16": 16}))]
