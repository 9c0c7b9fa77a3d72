"""Plants a dtype recompile: one function called with float32, then float64.

Expected: one frame with 2 compiles, the recompile's failed guard is ``dtype`` at MARK:dtype.
"""

import torch


def step(x):
    return torch.tanh(x) * 2  # MARK:dtype


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    for dtype in (torch.float32, torch.float64):
        x = torch.randn(4, dtype=dtype)
        torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
