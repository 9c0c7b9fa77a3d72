"""A tiny Inductor program whose compile cost is all cold start: two small functions, each
compiled once with Inductor (CPU, C++ kernels), run a few times.

Run it twice with the same TORCHINDUCTOR_CACHE_DIR: the first run misses every cache (an empty
dir), the second hits the FX graph and AOTAutograd caches. ``PT2D_CPP_SIMDLEN`` (optional) sets
one Inductor config value (``cpp.simdlen``), so two runs differ by exactly that key component.
Prints ``COUNTS {json}`` with the calls of each function.
"""

import json
import os

import torch
import torch._inductor.config as inductor_config


def mlp(x, w):
    return torch.relu(x @ w).sum(dim=-1)  # MARK:mlp


def norm(x):
    return (x - x.mean()) / (x.std() + 1e-5)  # MARK:norm


def main():
    simdlen = os.environ.get("PT2D_CPP_SIMDLEN")
    if simdlen:
        inductor_config.cpp.simdlen = int(simdlen)
    torch.manual_seed(0)
    compiled_mlp, compiled_norm = torch.compile(mlp), torch.compile(norm)
    x, w = torch.randn(8, 16), torch.randn(16, 16)
    calls = 5
    for _ in range(calls):
        torch.testing.assert_close(compiled_mlp(x, w), mlp(x, w))
        torch.testing.assert_close(compiled_norm(x), norm(x))
    print("COUNTS " + json.dumps({"mlp": calls, "norm": calls}))


if __name__ == "__main__":
    main()
