"""``warnings.warn(...)`` inside a compiled function (MARK:warn).

Expected category ``print_or_logging``. The program records every warning it receives and prints
``COUNTS {json}``.
Usage: run_warn.py [CALLS]
"""

import json
import sys
import warnings

import torch


def step(x):
    y = x + 1
    warnings.warn("pt2doctor run_warn: deprecated input scaling")  # noqa: B028  # MARK:warn
    return y * 2


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    compiled = torch.compile(step, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(calls):
            compiled(torch.ones(3))
    print("COUNTS " + json.dumps({"calls": calls, "warnings": len(caught)}), flush=True)


if __name__ == "__main__":
    main()
