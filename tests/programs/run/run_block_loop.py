"""A break from ``.item()`` driving an ``if``, reached inside a ``for block in self.blocks`` loop.

``Stack.forward`` loops over its blocks (MARK:loop); each ``Block.forward`` reads a tensor value
to decide whether to clamp (MARK:item). A break inside the loop makes Dynamo skip
``Stack.forward`` (torch 2.13), and each block's ``forward`` is compiled on its own. The
program counts the blocks it ran (eager code around the compiled call) and prints
``COUNTS {json}``.
Usage: run_block_loop.py [CALLS] [BLOCKS]
"""

import json
import sys

import torch


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        x = self.linear(x)
        if x.abs().max().item() > 100.0:  # MARK:item
            x = x.clamp(-100.0, 100.0)
        return x


class Stack(torch.nn.Module):
    def __init__(self, blocks: int) -> None:
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block() for _ in range(blocks))

    def forward(self, x):  # MARK:stack
        for block in self.blocks:
            x = block(x)  # MARK:loop
        return x


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    torch.manual_seed(0)
    model = torch.compile(Stack(blocks), backend="eager")
    with torch.no_grad():
        for _ in range(calls):
            model(torch.randn(2, 8))
    print(
        "COUNTS " + json.dumps({"calls": calls, "item_reads": calls * len(model.blocks)}),
        flush=True,
    )


if __name__ == "__main__":
    main()
