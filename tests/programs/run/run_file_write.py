"""A graph break at a file write inside a module's ``forward`` (MARK:write).

Each call appends one line to a log file; the file itself is the independent count of the
break's executions. Prints ``COUNTS {json}`` with the lines written.
Usage: run_file_write.py [CALLS]
"""

import json
import sys
import tempfile
from pathlib import Path

import torch


class Logged(torch.nn.Module):
    def __init__(self, log: Path) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.log = log

    def forward(self, x):
        y = self.linear(x)
        with open(self.log, "a") as f:  # MARK:write
            f.write("step\n")
        return torch.relu(y)


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "steps.log"
        model = torch.compile(Logged(log), backend="eager")
        with torch.no_grad():
            for _ in range(calls):
                model(torch.randn(2, 4))
        written = len(log.read_text().splitlines())
    print("COUNTS " + json.dumps({"calls": calls, "writes": written}), flush=True)


if __name__ == "__main__":
    main()
