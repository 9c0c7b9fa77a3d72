"""``pt2doctor ablate --accuracy-check "python check_saved.py OUT" -- python inline_wrong_pass.py
OUT``: the team's Inductor pass, defined in the script, turns every ReLU into an identity, so
the compiled numbers are wrong and nothing crashes. The program saves eager's and the
compiled outputs for the check (tests/integration/test_failures.py)."""

import json
import sys
from pathlib import Path

import torch
from torch import nn


def relu_to_identity(graph: torch.fx.Graph) -> None:
    for node in graph.nodes:
        if node.target is torch.ops.aten.relu.default:
            node.replace_all_uses_with(node.args[0])  # MARK:wrong
            graph.erase_node(node)


torch._inductor.config.post_grad_custom_post_pass = relu_to_identity

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)).eval()
x = torch.randn(4, 8)
with torch.no_grad():
    expected = model(x)
    got = torch.compile(model)(x)
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
saved = {"expected": expected.flatten().tolist(), "got": got.flatten().tolist()}
(out / "outputs.json").write_text(json.dumps(saved))
