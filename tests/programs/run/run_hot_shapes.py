"""A scaler compiled with ``dynamic=False`` and called with eight sequence lengths, 300 times
each on tiny inputs: eight variants of one frame, guarded by the length, whose guard checks
cost as much as the one fused op they choose. Run it with ``--backend eager``. Prints ``checksum``.
``PT2D_DYNAMIC=1`` applies guard_overhead's fix (fewer variants: the changing dimension marked
dynamic, and ``dynamic=False`` dropped): one variant for every length.
"""

import os

import torch

DYNAMIC = os.environ.get("PT2D_DYNAMIC") == "1"


def score(x):
    return x * 2 + 1  # MARK:score


def main():
    compiled = torch.compile(score) if DYNAMIC else torch.compile(score, dynamic=False)
    inputs = [
        torch.randn(2, length, 4, generator=torch.Generator().manual_seed(length))
        for length in range(3, 11)
    ]
    if DYNAMIC:
        for x in inputs:
            torch._dynamo.mark_dynamic(x, 1)
    total = 0.0
    for _ in range(300):
        for x in inputs:
            total += float(compiled(x)[:, 0, 0].sum())
    print(f"checksum {total:.4f}")


if __name__ == "__main__":
    main()
