"""An Inductor program with its own post-grad pass, set as a plain function, the way a team
first writes one: Inductor cannot key its FX graph cache on a plain function, so every start
bypasses the cache and compiles afresh (torch/_inductor/codecache.py _check_custom_passes).

``PT2D_PASS_UUID=1`` applies the fix pt2doctor's ``cache_bypass`` finding prints: the same pass
as a ``CustomGraphPass`` whose ``uuid()`` hashes this file. Prints ``result: <checksum>`` and
``passes: <graphs the pass saw>``.
"""

import os

import torch
import torch._inductor.config as inductor_config
from torch._inductor.custom_graph_pass import CustomGraphPass, get_hash_for_files

SEEN = []


def count_nodes(graph):  # MARK:pass
    SEEN.append(len(graph.nodes))


class CountNodes(CustomGraphPass):
    def __call__(self, graph):
        count_nodes(graph)

    def uuid(self):
        return get_hash_for_files((__file__,))


def step(x, w):
    return torch.tanh(x @ w).mean(dim=-1)


def main():
    if os.environ.get("PT2D_PASS_UUID"):
        inductor_config.post_grad_custom_post_pass = CountNodes()
    else:
        inductor_config.post_grad_custom_post_pass = count_nodes  # MARK:set
    torch.manual_seed(0)
    compiled = torch.compile(step)
    x, w = torch.randn(8, 16), torch.randn(16, 16)
    total = sum(float(compiled(x, w).sum()) for _ in range(3))
    print(f"result: {total:.6f}")
    print(f"passes: {len(SEEN)}")


if __name__ == "__main__":
    main()
