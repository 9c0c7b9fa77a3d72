"""Plants a recompile-limit hit: ``recompile_limit = 3`` and 6 distinct string constants.

Each new string fails the ``mode == '...'`` guard of every cached variant; after 3 variants
Dynamo stops compiling the frame and runs it eagerly.
Expected: one frame with ``limit_hit``, 3 variants, a ``recompile_limit`` failure and a
``recompile_limit_hit`` finding; recompiles blame ``python_constant`` at MARK:mode.
"""

import torch
import torch._dynamo


def step(x, mode):
    if mode == "a":  # MARK:mode
        return x + 1
    return x * len(mode)


def main():
    torch.manual_seed(0)
    torch._dynamo.config.recompile_limit = 3
    compiled = torch.compile(step, backend="eager")
    x = torch.randn(4)
    for mode in ("a", "bb", "ccc", "dddd", "eeeee", "ffffff"):
        torch.testing.assert_close(compiled(x, mode), step(x, mode))


if __name__ == "__main__":
    main()
