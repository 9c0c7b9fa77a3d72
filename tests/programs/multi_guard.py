"""Plants one recompile with three causes at once: dtype, size and a Python flag change together.

The second call changes float32 -> float64, size 4 -> 5 and flag True -> False. Dynamo's own
recompile reason names only the first failing guard; pt2doctor must list all three causes
(``size``, ``dtype``, ``python_constant``).
"""

import torch


def step(x, flag):
    y = x * 2  # MARK:tensor
    if flag:  # MARK:flag
        return y + 1
    return y - 1


def main():
    torch.manual_seed(0)
    compiled = torch.compile(step, backend="eager")
    for n, dtype, flag in ((4, torch.float32, True), (5, torch.float64, False)):
        x = torch.randn(n, dtype=dtype)
        torch.testing.assert_close(compiled(x, flag), step(x, flag))


if __name__ == "__main__":
    main()
