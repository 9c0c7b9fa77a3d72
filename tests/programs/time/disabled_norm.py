"""``pt2doctor run --profile -- python disabled_norm.py``: a small encoder whose RMSNorm the
author wrapped in ``torch.compiler.disable`` while hunting a NaN, and left there: every call
runs the four norms eagerly between compiled regions (tests/integration/
test_perf_fixes_applied.py: eager_only_time's second program).

- ``--fixed``: the disable removed (eager_only_time's fix): the norms compile with the rest.
Prints ``checksum`` of the outputs: the same with the fix, to float32's rounding.
"""

import sys

import torch
from torch import nn

FIXED = "--fixed" in sys.argv
WIDTH = 64


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()  # in float32, as Llama-style norms write it
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        return h.to(x.dtype) * self.weight


if not FIXED:  # MARK:disable
    RMSNorm.forward = torch.compiler.disable(RMSNorm.forward)  # type: ignore[method-assign]


class Layer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = RMSNorm(WIDTH)
        self.up = nn.Linear(WIDTH, WIDTH)
        self.down = nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Layer() for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.compile(Encoder().eval())
    x = torch.randn(4, 16, WIDTH)
    total = 0.0
    with torch.no_grad():
        for step in range(60):
            total += float(model(x + 0.01 * step).double().sum())
    print(f"checksum {total:.4f}")


if __name__ == "__main__":
    main()
