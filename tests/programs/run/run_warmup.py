"""A serving loop that warms up, then meets a shape it never saw: a recompile after warmup.

Warmup: WARMUP calls with a batch of 8 rows, alternating a Python flag (a flag recompile at the
second call, inside warmup). Then it serves SERVED calls with a batch of 16 rows: Dynamo
recompiles on the size guard (MARK:size) after warmup, once (the flag stays False). Prints
``COUNTS {json}`` at the end. No sleeps: tests place ``--steady-after`` between the compiles
offline, from the compile times in the raw trace.
Usage: run_warmup.py WARMUP SERVED
"""

import json
import sys

import torch


def step(x, shift: bool):
    y = torch.sin(x) * 2  # MARK:size
    return y + 1 if shift else y - 1


def main() -> None:
    warmup, served = int(sys.argv[1]), int(sys.argv[2])
    compiled = torch.compile(step, backend="eager")
    counts = {"warmup_calls": 0, "served_calls": 0, "calls": 0}
    for i in range(warmup):
        compiled(torch.randn(8, 4), i % 2 == 1)
        counts["warmup_calls"] += 1
    for _ in range(served):
        compiled(torch.randn(16, 4), False)
        counts["served_calls"] += 1
    counts["calls"] = counts["warmup_calls"] + counts["served_calls"]
    print("COUNTS " + json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
