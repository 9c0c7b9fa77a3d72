"""A step that logs a tensor's value in an f-string with a format spec: ``.item()`` breaks the
graph, the float it read goes to the code after the break, and once that float changes the
recompile makes it dynamic, and Dynamo cannot format a symbolic float (``BUILD_STRING type
error``): it gives up on that recompile and runs the frame eagerly. ``PT2D_FIXED=1`` logs
behind ``torch.compiler.is_compiling()``, the fix pt2doctor prints
(tests/integration/test_break_handover.py)."""

import os

import torch


def step(x: torch.Tensor, scale: float) -> torch.Tensor:
    y = x * scale
    if os.environ.get("PT2D_FIXED") != "1" or not torch.compiler.is_compiling():
        print(f"rms {y.pow(2).mean().sqrt().item():.4f}")  # MARK:log
    return y + 1


compiled = torch.compile(step, backend="eager")
torch.manual_seed(0)
total = 0.0
for i in range(4):
    total += float(compiled(torch.randn(8), 0.5 + i).sum())
print(f"checksum: {total:.5f}")
