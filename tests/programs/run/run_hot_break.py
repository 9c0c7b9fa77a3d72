"""A small inference loop with a hot graph break and a cold one, for ``pt2doctor run``.

Every layer's forward checks its output for NaN/inf with ``.item()`` (MARK:hot): a data-dependent break that
runs once per layer per step. ``setup`` runs once at startup and prints inside compiled code
(MARK:startup): a break that runs once. Each layer is compiled on its own, under no_grad, so no
recompile muddies the counts. The program counts its own calls, times them from outside
(``compiled_call_s``: an upper bound of the time spent inside compiled graphs) and prints them as
one line ``COUNTS {json}`` at the end.
Usage: run_hot_break.py [STEPS] [LAYERS]
"""

import json
import sys
import time

import torch


class Layer(torch.nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, x):
        y = self.linear(x)
        if not torch.isfinite(y).all().item():  # MARK:hot
            y = torch.nan_to_num(y)
        return torch.tanh(y)


def setup(x):
    y = x * 2
    print("setup done")  # MARK:startup
    return y + 1


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    width, n_layers = 8, int(sys.argv[2]) if len(sys.argv) > 2 else 3
    torch.manual_seed(0)
    layers = [Layer(width) for _ in range(n_layers)]
    compiled = [torch.compile(layer, backend="eager") for layer in layers]
    counts = {"steps": 0, "layer_calls": 0, "setup_calls": 0}
    timed = 0.0
    with torch.no_grad():
        start = time.perf_counter()
        x = torch.compile(setup, backend="eager")(torch.randn(4, width))
        timed += time.perf_counter() - start
        counts["setup_calls"] += 1
        for _ in range(steps):
            h = x + torch.randn(4, width)
            for layer in compiled:
                start = time.perf_counter()
                h = layer(h)
                timed += time.perf_counter() - start
                counts["layer_calls"] += 1
            counts["steps"] += 1
    counts["compiled_call_s"] = timed
    print("COUNTS " + json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
