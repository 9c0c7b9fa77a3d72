"""``pt2doctor run --profile -- python activation_monitor.py``: a small encoder served under
``no_grad`` whose middle layer keeps the largest activation it saw as a Python float, for a
dashboard (``float(h.abs().amax())``): a graph break in every call, each call two compiled
regions with the read between them (tests/integration/test_perf_fixes_applied.py:
graph_break_cost's second program).

- ``--fixed``: the statistic kept as a tensor (``h.abs().amax()``), read by the loop when it
  logs (every 20 calls): one graph, no break (the break's fix: remove it).
Prints ``checksum`` of the outputs and of the monitored maximum: the same with the fix.
"""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv
WIDTH = 32


class Layer(nn.Module):
    def __init__(self, monitored: bool = False) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(WIDTH)
        self.up = nn.Linear(WIDTH, 2 * WIDTH)
        self.down = nn.Linear(2 * WIDTH, WIDTH)
        self.monitored = monitored
        self.peak: float | torch.Tensor = 0.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = nn.functional.gelu(self.up(self.norm(x)))
        if self.monitored:
            if FIXED:
                self.peak = h.abs().amax()
            else:
                self.peak = float(h.abs().amax())  # MARK:peak
        return x + self.down(h)


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer(monitored=i == 2) for i in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    encoder = Encoder().eval()
    model = torch.compile(encoder)
    x = torch.randn(2, 8, WIDTH)
    total, peaks = 0.0, 0.0
    with torch.no_grad():
        for step in range(200):  # the profile window's, then the paired and plain calls
            total += float(model(x + 0.01 * step).double().sum())
            if step % 20 == 19:
                peaks += float(encoder.layers[2].peak)
    print(f"checksum {total:.4f}")
    print(f"checksum {peaks:.4f}")


if __name__ == "__main__":
    main()
