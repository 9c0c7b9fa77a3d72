"""Plants a Python-constant recompile: a bool flag argument, first True then False.

Dynamo specializes on the flag (``if flag:`` at MARK:flag) and guards ``flag == True``.
Expected: one frame with 2 compiles, the recompile's failed guard is ``python_constant``.
"""

import torch


def step(x, flag):
    if flag:  # MARK:flag
        return x + 1
    return x - 1


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    x = torch.randn(4)
    for flag in (True, False):
        torch.testing.assert_close(compiled(x, flag), step(x, flag))


if __name__ == "__main__":
    main()
