"""``pt2doctor ablate -- python inline_pass.py``: the team's Inductor pass is defined in the
training script itself, with a helper and a constant it needs, and raises while the model
compiles. A repro cannot import this file (that would train): ablate copies the pass out of
its source (tests/integration/test_failures.py)."""

import torch
from torch import nn

MATMULS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default)


def is_matmul(node: torch.fx.Node) -> bool:
    return node.target in MATMULS


def layout_pass(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if is_matmul(node):
            raise RuntimeError(f"layout_pass: {node.name} needs a 4-d input")  # MARK:raise


torch._inductor.config.post_grad_custom_post_pass = layout_pass

model = nn.Sequential(nn.Linear(8, 8), nn.ReLU())
for _step in range(2):
    with torch.no_grad():
        torch.compile(model)(torch.randn(4, 8))
