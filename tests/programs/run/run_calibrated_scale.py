"""A fake-quantized layer whose scale is calibrated at start-up from an unseeded batch and
kept as a Python float (``self.scale = float(...)``): Dynamo bakes a module's float attribute
into the graph as a constant, so each process's graph differs, and its FX graph cache key
never matches what an earlier start wrote. ``PT2D_AS_BUFFER=1`` applies the fix pt2doctor
prints (cache_key_constant's second program): the scale is a buffer, an input of the graph.
Prints ``checksum`` (it differs between starts: the calibration is unseeded)."""

import os

import torch
from torch import nn


class FakeQuant(nn.Module):
    def __init__(self, calibration: torch.Tensor) -> None:
        super().__init__()
        scale = calibration.abs().max() / 127
        if os.environ.get("PT2D_AS_BUFFER") == "1":  # the fix
            self.register_buffer("scale", scale)
        else:
            self.scale = float(scale)  # MARK:scale
        self.proj = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q = torch.clamp(torch.round(x / self.scale), -127, 127) * self.scale
        return self.proj(q)


def main() -> None:
    model = torch.compile(FakeQuant(torch.randn(256, 16)))
    x = torch.linspace(-2, 2, 64).reshape(4, 16)
    with torch.no_grad():
        print(f"checksum {float(model(x).double().sum()):.4f}")


if __name__ == "__main__":
    main()
