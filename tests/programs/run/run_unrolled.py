"""A long compile: a 1500-step Python loop in a compiled function, which Dynamo unrolls into
one graph of ~4500 ops (seconds of tracing on 2 cores, MARK:loop), compiled once and called
once. Expected under ``run --live`` at a terminal: the status line shows ``step`` compiling,
with its phase and its seconds so far, while it compiles.
"""

import torch

STEPS = 1500


def step(x: torch.Tensor) -> torch.Tensor:
    for i in range(STEPS):  # MARK:loop
        x = torch.sin(x) * 1.01 + i
    return x


def main() -> None:
    torch.manual_seed(0)
    out = torch.compile(step)(torch.randn(8))
    print(f"unrolled: done, {out.abs().sum().item():.3f}", flush=True)


if __name__ == "__main__":
    main()
