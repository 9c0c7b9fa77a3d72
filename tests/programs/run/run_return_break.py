"""A graph break in a ``return`` statement (MARK:return): ``return int(...)`` of a tensor.

Dynamo returns the value the call gives with no resume function after it, so the probes have
nothing to count this break's executions by: its heat is unknown, and must not read "ran 0
times (cold)" when it ran on every call. Prints ``COUNTS {json}``.
Usage: run_return_break.py [CALLS]
"""

import json
import sys

import torch


def correct(logits, labels):
    return int((logits.argmax(-1) == labels).sum())  # MARK:return


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 6
    compiled = torch.compile(correct, backend="eager")
    total = sum(compiled(torch.randn(8, 4), torch.randint(0, 4, (8,))) for _ in range(calls))
    print("COUNTS " + json.dumps({"calls": calls, "counted": total >= 0}), flush=True)


if __name__ == "__main__":
    main()
