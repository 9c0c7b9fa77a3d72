"""A decoder written the way well-tuned inference code writes it: each attention layer calls
one weightless function, ``apply_rotary_emb``, for q and for k, and the whole model is
compiled. Six layers put 12 copies of that function in one graph: the layer stack calling it,
not a loop to batch (pt2doctor said "unrolled 12 times ... batch the iterations"). Beside it,
a real Python loop in one module (``Loop``): twelve steps of one line, which is unrolled."""

import torch
from torch import nn


def apply_rotary_emb(x, freqs):
    pairs = x.reshape(*x.shape[:-1], -1, 2)  # MARK:rotary
    real, imag = pairs[..., 0], pairs[..., 1]
    cos, sin = freqs.cos(), freqs.sin()
    return torch.stack([real * cos - imag * sin, real * sin + imag * cos], -1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.wq, self.wk, self.wo = (nn.Linear(width, width) for _ in range(3))

    def forward(self, x, freqs):
        q = apply_rotary_emb(self.wq(x), freqs)
        k = apply_rotary_emb(self.wk(x), freqs)
        return self.wo(torch.softmax(q @ k.transpose(-1, -2), -1) @ x)


class Decoder(nn.Module):
    def __init__(self, width: int = 16, layers: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Attention(width) for _ in range(layers))

    def forward(self, x, freqs):
        for layer in self.layers:
            x = x + layer(x, freqs)
        return x


class Loop(nn.Module):
    def forward(self, x):
        for step in range(12):
            x = torch.tanh(x * 1.01 + step)  # MARK:loop
        return x


torch.manual_seed(0)
decoder, loop = torch.compile(Decoder(), backend="eager"), torch.compile(Loop(), backend="eager")
with torch.no_grad():
    decoder(torch.randn(2, 8, 16), torch.randn(8, 8))
    loop(torch.randn(4))
