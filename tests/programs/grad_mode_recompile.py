"""Plants a grad-mode recompile: the same function called with grad enabled, then under
``torch.no_grad()``.

Expected: one frame with 2 compiles, the recompile's failed guard is ``grad_mode``.
"""

import torch


def step(x):
    return torch.sigmoid(x) * x  # MARK:grad


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    x = torch.randn(4)
    torch.testing.assert_close(compiled(x), step(x))
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
