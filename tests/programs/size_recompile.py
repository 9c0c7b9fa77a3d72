"""Plants a size recompile: one function called with sizes 4, 5, 6.

Dynamo compiles a static variant for size 4, recompiles with a dynamic size for 5 (automatic
dynamic shapes) and reuses that variant for 6.
Expected: one frame with 2 compiles (first_compile, recompile), the recompile's failed guard
is ``size`` pointing at MARK:size, no graph breaks.
"""

import torch


def step(x):
    return torch.cos(x) + x  # MARK:size


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    for n in (4, 5, 6):
        x = torch.randn(n)
        torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
