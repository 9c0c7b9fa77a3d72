"""A frame with many variants and hot guards, beside one whose guards are negligible.

``pick(x, mode)`` is compiled once per ``mode`` string (8 modes: 8 variants, guarded by
``mode == '...'``) and called 400 times per mode on a 4-element tensor, so each call spends
more time checking guards than inside its tiny graph. ``heavy(a, b)`` has one variant, a
256x256 matmul, called 20 times: its guards are a negligible share.
Run it with ``--backend eager``. Prints ``COUNTS {json}`` with the calls of each function,
and ``checksum`` of pick's results. ``PT2D_FEWER_VARIANTS=1`` applies guard_overhead's fix
(fewer variants: the changing Python value kept out of the compiled function, which is given
the one number it uses, the mode's length): one variant.
"""

import json
import os

import torch

MODES = [f"mode{i}" for i in range(8)]


def pick(x, mode):
    return x + len(mode)  # MARK:pick


def pick_length(x, length):
    return x + length


def heavy(a, b):
    return (a @ b).relu()  # MARK:heavy


def main():
    fewer = os.environ.get("PT2D_FEWER_VARIANTS") == "1"
    compiled_pick = torch.compile(pick_length if fewer else pick)
    compiled_heavy = torch.compile(heavy)
    x = torch.ones(4)
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    rounds = 400
    total = 0.0
    for _ in range(rounds):
        for mode in MODES:
            total += float(compiled_pick(x, len(mode) if fewer else mode).sum())
    for _ in range(20):
        compiled_heavy(a, b)
    print("COUNTS " + json.dumps({"pick": rounds * len(MODES), "heavy": 20}))
    print(f"checksum {total:.1f}")


if __name__ == "__main__":
    main()
