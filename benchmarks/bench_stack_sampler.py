"""Benchmark what the profile window's stack sampler (capture/sampler.py) costs the program.

1. One process, one thread of torch: a loop of small eager ops (the sampler's worst case: every
   op releases the GIL, so the sampler runs as often as it asks) and, beside it, the same loop
   with the sampler on, in alternating blocks (a load spike hits both alike), for each
   interval in --intervals. Prints each side's median time per loop call, their ratio, and the
   samples taken per millisecond.
2. With --runs N: ``pt2doctor run --profile`` of tests/programs/time/mlp_block.py (a disabled
   eager MLP and a graph break) N times without and with ``--profile-stacks``, alternating: the medians of the window's time per call and of its eager op time.

Usage: python benchmarks/bench_stack_sampler.py [--rounds 30] [--calls 200] [--width 256]
       [--intervals 0.25,1] [--runs 0]
Results go into docs/PERFORMANCE.md (by hand, with the date and machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import torch
import torch.nn as nn

from pt2doctor.capture.sampler import StackSampler


def _loop(args: argparse.Namespace) -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    width = args.width
    model = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width), nn.GELU(),
                          nn.Linear(4 * width, width)).eval()  # fmt: skip
    x = torch.randn(8, width)

    def block() -> float:
        start = time.perf_counter()
        with torch.no_grad():
            for _ in range(args.calls):
                model(x).sum().item()
        return (time.perf_counter() - start) / args.calls * 1e3

    block()  # warm up
    for interval_ms in (float(v) for v in args.intervals.split(",")):
        times: dict[bool, list[float]] = {False: [], True: []}
        rates = []
        for round_ in range(args.rounds):
            for sampled in (False, True) if round_ % 2 == 0 else (True, False):
                sampler = StackSampler(threading.get_ident(), interval_ms / 1e3)
                if sampled:
                    sampler.start()
                started = time.perf_counter()
                times[sampled].append(block())
                if sampled:
                    taken = len(sampler.stop()["at_ns"])
                    rates.append(taken / ((time.perf_counter() - started) * 1e3))
        off, on = statistics.median(times[False]), statistics.median(times[True])
        print(f"interval {interval_ms:g} ms: loop call off {off:.4f} ms, on {on:.4f} ms "
              f"(medians of {args.rounds} blocks), on / off {on / off:.3f}, "
              f"{statistics.median(rates):.2f} samples per ms")  # fmt: skip


def _profiled(runs: int) -> None:
    program = Path(__file__).resolve().parents[1] / "tests" / "programs" / "time" / "mlp_block.py"
    found: dict[str, list[tuple[float, float]]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            for side in ("off", "on") if run % 2 == 0 else ("on", "off"):
                out = Path(tmp) / f"{side}-{run}"
                env = {**os.environ, "OMP_NUM_THREADS": "1"}
                stacks = ["--profile-stacks"] if side == "on" else []
                subprocess.run(
                    [sys.executable, "-m", "pt2doctor", "run", "--profile", *stacks, "--out",
                     str(out), "--", sys.executable, str(program), "--item-break",
                     "--eager-mlp", "--width", "256"],
                    env=env, capture_output=True, check=True,
                )  # fmt: skip
                profile = json.loads((out / "report.json").read_text())["profile"]
                eager = sum(op["ms_per_call"] for op in profile["eager_ops"])
                found[side].append((profile["window"]["ms_per_call"], eager))
    for side, rows in found.items():
        call = statistics.median(r[0] for r in rows)
        eager = statistics.median(r[1] for r in rows)
        print(f"run --profile, sampler {side}: window {call:.4f} ms per call, eager ops "
              f"{eager:.4f} ms (medians of {runs} runs)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--intervals", default="0.25,1")
    parser.add_argument("--runs", type=int, default=0)
    args = parser.parse_args()
    _loop(args)
    if args.runs:
        _profiled(args.runs)


if __name__ == "__main__":
    main()
