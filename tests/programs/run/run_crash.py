"""A training-like loop that compiles, prints ``READY``, then ends badly in one of four ways.

Before failing it has compiled ``step`` (with a graph break at MARK:print, so two frames) and
called it STEPS times. With ``flushed`` as third argument it then waits until pt2doctor's probes
saved counters covering every call (their periodic snapshot, counters/<pid>.json in the run
directory): an event, not a sleep, so a crash after it keeps exact heat however busy the
machine. HOW picks the ending:
  raise     an uncaught RuntimeError (exit 1)
  segfault  a read of address 0 (SIGSEGV, killed by the signal)
  exit3     os._exit(3): no atexit handlers, no flush
  hang      sleeps forever (for ``--timeout`` and Ctrl-C)
Prints ``COUNTS {json}`` before the ending.
Usage: run_crash.py HOW [STEPS] [flushed]
"""

import ctypes
import json
import os
import sys
import time
from pathlib import Path

import torch

# The periodic snapshot fires every 0.5 s; this only bounds a probe that never flushes.
FLUSH_DEADLINE_S = 120


def step(x):
    y = torch.cos(x) + 1
    print("step")  # MARK:print
    return y * 2


def wait_until_flushed(calls: int) -> None:
    """Return once this process's saved counters count ``calls`` for every graph and break."""
    saved = Path(os.environ["PT2DOCTOR_RUN_DIR"]) / "counters" / f"{os.getpid()}.json"
    deadline = time.monotonic() + FLUSH_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            counters = json.loads(saved.read_text())
        except (OSError, ValueError):
            counters = {}
        counted = [
            *counters.get("graph_calls", {}).values(),
            *counters.get("break_hits", {}).values(),
        ]
        if len(counted) == 3 and min(counted) >= calls:  # 2 graphs and 1 break
            return
        time.sleep(0.05)
    sys.exit("the probes never saved the counters")


def main() -> None:
    how = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    flushed = len(sys.argv) > 3 and sys.argv[3] == "flushed"
    compiled = torch.compile(step, backend="eager")
    counts = {"calls": 0}
    for _ in range(steps):
        compiled(torch.randn(4))
        counts["calls"] += 1
    print("COUNTS " + json.dumps(counts), flush=True)
    print("READY", flush=True)
    if flushed:
        wait_until_flushed(steps)
    if how == "raise":
        raise RuntimeError(f"loss is NaN at step {steps}")
    if how == "segfault":
        ctypes.string_at(0)
    if how == "exit3":
        os._exit(3)
    if how == "hang":
        while True:
            time.sleep(0.1)
    sys.exit(f"unknown HOW {how!r}")


if __name__ == "__main__":
    main()
