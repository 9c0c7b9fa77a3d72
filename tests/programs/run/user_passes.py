"""An Inductor post-grad pass for ``run_user_pass.py`` (imported from there) that raises on
any graph with a convolution-free matmul: a team's layout pass with a bug."""

import torch


def channels_last_prep_pass(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if node.target is torch.ops.aten.mm.default or node.target is torch.ops.aten.addmm.default:
            raise RuntimeError("channels_last_prep_pass: expected a 4-d input")  # MARK: raise
