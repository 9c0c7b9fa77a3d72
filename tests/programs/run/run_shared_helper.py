"""A helper with a graph break (MARK:helper), reached from three call sites in one ``forward``
(MARK:first, MARK:second, MARK:third).

The break is a ``print``: its lines on stdout are the independent count of the helper's
executions (three per forward call). ``COUNTS {json}`` reports the number of forward calls.
Usage: run_shared_helper.py [CALLS]
"""

import json
import sys

import torch


def report_scale(x):
    y = x * 2
    print("pt2doctor run_shared_helper: helper ran")  # MARK:helper
    return y - 1


class ThreeCalls(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        x = report_scale(self.linear(x))  # MARK:first
        x = report_scale(x + 1)  # MARK:second
        return report_scale(x.relu())  # MARK:third


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    model = torch.compile(ThreeCalls(), backend="eager")
    with torch.no_grad():
        for _ in range(calls):
            model(torch.randn(2, 4))
    print("COUNTS " + json.dumps({"calls": calls}), flush=True)


if __name__ == "__main__":
    main()
