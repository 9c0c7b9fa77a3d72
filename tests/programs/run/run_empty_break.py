"""A graph break before any tensor op (the graph before it is empty), run as ``python -m``.

Expected: the print break's heat equals CALLS although no compiled graph runs before it.
"""

import json

import torch

CALLS = 5


def step(x):
    print("pt2doctor run_empty_break: first statement")  # MARK:print
    return x * 2


def main():
    compiled = torch.compile(step, backend="eager")
    for _ in range(CALLS):
        compiled(torch.ones(3))
    print("COUNTS " + json.dumps({"calls": CALLS}))


if __name__ == "__main__":
    main()
