"""Two graph breaks on consecutive lines of one compiled function (tests/integration/
test_diff.py deletes the first, the fix, and diffs: the second moves up onto the first's line
number, and must still be matched as itself, by its code)."""

import torch


def step(x):
    y = x * 2
    print("first", y.sum().item())  # MARK:first
    print("second", y.mean().item())  # MARK:second
    return y + 1


compiled = torch.compile(step, backend="eager")
for _ in range(3):
    compiled(torch.ones(4))
print("DONE")
