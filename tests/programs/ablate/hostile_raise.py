"""Hostile text in an ablate report (for the HTML/Markdown safety tests): a custom Inductor
post-grad pass raises on any tanh with a message that is markup and script, and the only
submodule that calls tanh is registered under a name that is markup too. Lower rungs never run
post-grad passes, so the failure is localized to Inductor and to that submodule."""

import torch
from torch import nn

from pt2doctor.cases import Built, Case, Cell, Matrix

HOSTILE = "<script>document.title='PWNED-1'</script><img src=x onerror=document.title='PWNED-2'>"
HOSTILE_NAME = "enc<img src=x onerror=document['title']='PWNED-3'>"  # no dot in a module name


def raise_on_tanh(graph: torch.fx.Graph) -> None:
    if any(node.target is torch.ops.aten.tanh.default for node in graph.nodes):
        raise RuntimeError(f"planted failure {HOSTILE} | `tick` *star* [link](javascript:x)")


torch._inductor.config.post_grad_custom_post_pass = raise_on_tanh


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.lin(x))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add_module(HOSTILE_NAME, Encoder())
        self.head = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(getattr(self, HOSTILE_NAME)(x))


def build(cell: Cell) -> Built:
    torch.manual_seed(0)
    return Built(Model().eval(), (torch.randn(cell.shape, 16),))


CASES = [Case("hostile", build, Matrix(shapes={"b4": 4}))]
