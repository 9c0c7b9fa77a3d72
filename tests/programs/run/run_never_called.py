"""Plants the Hugging Face pitfall: ``torch.compile(model)``, then ``model.generate(...)``.

``generate`` is not forward: reached through the compiled module it runs the original module,
whose calls are eager, so nothing is compiled. Expected: one ``compiled_but_never_called``
warning naming Decoder and the line of the torch.compile call; no compile in the trace.
"""

import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.proj(x))

    def generate(self, x, steps):
        for _ in range(steps):
            x = self(x)  # the original module: eager
        return x


model = Decoder().eval()
model = torch.compile(model)  # MARK:compile
with torch.no_grad():
    out = model.generate(torch.ones(2, 8), steps=3)
print("COUNTS", '{"steps": 3}')
