"""A training-like loop that compiles, prints ``READY``, then ends badly in one of four ways.

Before failing it has compiled ``step`` (with a graph break at MARK:print, so two frames) and
called it STEPS times, then waited LINGER seconds (pt2doctor's probes flush their counters every
second: a crash loses at most the last second of heat). HOW picks the ending:
  raise     an uncaught RuntimeError (exit 1)
  segfault  a read of address 0 (SIGSEGV, killed by the signal)
  exit3     os._exit(3): no atexit handlers, no flush
  hang      sleeps forever (for ``--timeout`` and Ctrl-C)
Prints ``COUNTS {json}`` before the ending.
Usage: run_crash.py HOW [STEPS] [LINGER]
"""

import ctypes
import json
import os
import sys
import time

import torch


def step(x):
    y = torch.cos(x) + 1
    print("step")  # MARK:print
    return y * 2


def main() -> None:
    how = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    linger = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    compiled = torch.compile(step, backend="eager")
    counts = {"calls": 0}
    for _ in range(steps):
        compiled(torch.randn(4))
        counts["calls"] += 1
    print("COUNTS " + json.dumps(counts), flush=True)
    print("READY", flush=True)
    time.sleep(linger)
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
