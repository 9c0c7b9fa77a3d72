"""The six break-heat programs of tests/integration/test_heat_shapes.py in one process (one
torch start instead of six): run_file_write 5, run_block_loop 4 3, run_shared_helper 5,
run_warn 4, run_opt_step 3 and run_return_break 6, each through its own ``main()`` with its own argv. They compile disjoint code, so
each break site is what it is when its program runs alone. Each program's stdout is passed
through, its ``COUNTS {json}`` line renamed ``COUNTS[program] {json}``.
"""

import contextlib
import importlib
import io
import sys
from pathlib import Path

PROGRAMS = {
    "run_file_write": ["5"],
    "run_block_loop": ["4", "3"],
    "run_shared_helper": ["5"],
    "run_warn": ["4"],
    "run_opt_step": ["3"],
    "run_return_break": ["6"],
}


def main() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    for name, args in PROGRAMS.items():
        program = importlib.import_module(name)
        sys.argv = [program.__file__, *args]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            program.main()
        for line in printed.getvalue().splitlines():
            if line.startswith("COUNTS "):
                line = f"COUNTS[{name}] " + line.removeprefix("COUNTS ")
            print(line, flush=True)


if __name__ == "__main__":
    main()
