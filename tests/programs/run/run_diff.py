"""Two versions of one program for ``pt2doctor diff``: ``run_diff.py`` (A) and
``run_diff.py --worse`` (B). B has exactly one more recompile (``scaled`` also sees
``flag=False``: a python_constant guard fails, 2 variants instead of 1) and one new graph break
(MARK:break, in ``normed``). Everything else is the same.
"""

import sys

import torch

WORSE = "--worse" in sys.argv


def scaled(x, flag):
    if flag:
        return x + 1
    return x - 1


def normed(x):
    y = x * 2
    if WORSE:
        torch._dynamo.graph_break()  # MARK:break
    return y / y.norm()


def main() -> None:
    x = torch.randn(8)
    compiled_scaled = torch.compile(scaled, backend="eager")
    compiled_normed = torch.compile(normed, backend="eager")
    flags = (True, True, False) if WORSE else (True, True, True)
    for flag in flags:
        compiled_scaled(x, flag)
        compiled_normed(x)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
