"""Plants one graph break: ``print`` inside the compiled function.

Expected: one ``print_or_logging`` break at MARK:print, and a resume function compiled after it.
"""

import torch


def step(x):
    y = torch.sin(x)
    print("pt2doctor print_break: inside compiled fn")  # MARK:print
    return y * 3


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    x = torch.randn(4)
    torch.testing.assert_close(compiled(x), step(x))


if __name__ == "__main__":
    main()
