"""``pt2doctor ablate -- python closure_pass.py``: the team's Inductor pass is made by a factory
(a closure over the limit it was configured with) and raises while the model compiles. The
pass lives only while the program runs: the repro cannot carry it, says so, and torch's
minifier runs as the last rung."""

import torch
from torch import nn


def make_pass(limit: int):  # type: ignore[no-untyped-def]
    def check_fanout(graph: torch.fx.Graph) -> None:
        for node in graph.nodes:
            if len(node.users) > limit:
                raise RuntimeError(f"check_fanout: {node.name} has {len(node.users)} users")

    return check_fanout


torch._inductor.config.post_grad_custom_post_pass = make_pass(limit=0)

model = nn.Sequential(nn.Linear(8, 8), nn.Tanh())
with torch.no_grad():
    print(torch.compile(model)(torch.randn(4, 8)).shape)
