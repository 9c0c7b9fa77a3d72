"""A hand-written language model that counts its own calls: forward ramps a residual scale
over the first steps (``self.calls``, an int attribute read in forward, as a warmup schedule
is often written). Each call compiles a new variant until the recompile limit; the fix,
``allow_unspec_int_on_nn_module``, is applied by ``run --try-fixes``
(tests/integration/test_real_programs.py). Prints the graphs Dynamo compiled."""

import torch
from torch import nn

RAMP_STEPS = 100


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 64, width: int = 32) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.mlp = nn.Sequential(
            nn.Linear(width, width * 2), nn.GELU(), nn.Linear(width * 2, width)
        )
        self.head = nn.Linear(width, vocab)
        self.calls = 0

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        self.calls += 1  # MARK:read
        h = self.embed(ids)
        h = h + min(1.0, self.calls / RAMP_STEPS) * self.mlp(h)  # MARK:counter
        return self.head(h)


torch.manual_seed(0)
model = TinyLM()
compiled = torch.compile(model, backend="eager")  # MARK:compile
with torch.no_grad():
    for _ in range(12):
        compiled(torch.randint(0, 64, (2, 16)))
print("graphs:", torch._dynamo.utils.counters["stats"]["unique_graphs"])
