"""A training-style module that counts its calls in a Python int (``self.calls += 1``, read
by the compiled forward) and drops features at random (``torch.rand``): every call
recompiles until the recompile limit, then runs eagerly. ``--try-fixes`` tries
``allow_unspec_int_on_nn_module``: it helps, and the printed result changes, because the
calls past the limit are now compiled, and compiled code draws random numbers with Inductor's
generator. ``PT2D_FIX=1`` applies that setting; ``PT2D_FALLBACK_RANDOM=1`` sets
``torch._inductor.config.fallback_random``, under which both draw the same numbers
(tests/integration/test_break_handover.py). ``PT2D_SILENT=1`` prints no number: only what the
compiled code returned can tell that the results changed."""

import os

import torch
import torch._dynamo.config as dynamo_config
import torch._inductor.config as inductor_config
from torch import nn

if os.environ.get("PT2D_FIX") == "1":
    dynamo_config.allow_unspec_int_on_nn_module = True
if os.environ.get("PT2D_FALLBACK_RANDOM") == "1":
    inductor_config.fallback_random = True


class Noisy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        keep = (torch.rand(x.shape[0], 1) > 0.2).to(x.dtype)  # MARK:rand
        y = self.proj(x) * keep + self.calls % 3
        self.calls += 1
        return y


torch.manual_seed(0)
model = Noisy()
compiled = torch.compile(model)
total = 0.0
with torch.no_grad():
    for _ in range(12):
        total += float(compiled(torch.ones(4, 16)).sum())
print("done" if os.environ.get("PT2D_SILENT") == "1" else f"checksum: {total:.5f}")
