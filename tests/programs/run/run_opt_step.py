"""A compiled optimizer step, as PyTorch's "compiling the optimizer" recipe writes it:
``@torch.compile def step(): opt.step()``. torch's ``_use_grad`` breaks the graph around every
step on purpose (torch/optim/optimizer.py); the step's own ops still compile (MARK:step).

Prints ``COUNTS {json}`` with the steps taken.
Usage: run_opt_step.py [STEPS]
"""

import json
import sys

import torch


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    @torch.compile(backend="eager")
    def step() -> None:
        opt.step()  # MARK:step

    for _ in range(steps):
        model(torch.randn(3, 4)).sum().backward()
        step()
        opt.zero_grad(set_to_none=True)
    print("COUNTS " + json.dumps({"steps": steps}), flush=True)


if __name__ == "__main__":
    main()
