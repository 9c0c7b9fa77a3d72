"""An EMA update compiled with Inductor, its decay a Python float that changes every step and
feeds ``alpha=`` (a keyword that takes a plain number), the way a BYOL/EMA loop writes it.

In torch 2.13 Inductor makes ``1 - decay`` a constant and guards on it; the next value fails
the guard, Dynamo traces the same graph again, and the FX graph / AOTAutograd cache hands back
the code of the first compile, constant included, with no guard: every later step updates
with the old constant. The program measures that itself: each step it runs the same update
eagerly on a copy and prints the largest difference (``max error``).

``PT2D_FIX=1`` applies the fix pt2doctor's ``stale_cache_constant`` finding prints: decay as a
0-d tensor, the factor moved onto the tensor (no ``alpha=``).
"""

import math
import os

import torch

FIX = bool(os.environ.get("PT2D_FIX"))


def update(targets, online, decay):
    with torch.no_grad():
        for po, pt in zip(online, targets):  # noqa: B905 (as users write it)
            if FIX:
                pt.mul_(decay).add_(po * (1 - decay))
            else:
                pt.mul_(decay).add_(po, alpha=1 - decay)  # MARK:alpha


def main():
    torch.manual_seed(0)
    online = [torch.randn(64) for _ in range(3)]
    eager = [torch.zeros(64) for _ in range(3)]
    compiled = [torch.zeros(64) for _ in range(3)]
    step = torch.compile(update)
    worst = 0.0
    for i in range(10):
        decay = 1 - 0.004 * (math.cos(math.pi * i / 10) + 1) / 2
        update(eager, online, decay)
        step(compiled, online, torch.tensor(decay) if FIX else decay)
        worst = max(
            worst, max(float((a - b).abs().max()) for a, b in zip(eager, compiled, strict=True))
        )
    print(f"max error: {worst:.3g}")
    print(f"target sum: {sum(float(t.sum()) for t in eager):.5f}")


if __name__ == "__main__":
    main()
