"""Benchmark what the profile window's stack sampler (capture/sampler.py) costs the program.

One process, one thread of torch: a loop of small eager ops (the sampler's worst case: every
op releases the GIL, so the sampler runs as often as it asks) and, beside it, the same loop
with the sampler on, in alternating blocks (a load spike hits both alike). Prints each side's
median time per loop call and their ratio, and the samples taken per millisecond.

Usage: python benchmarks/bench_stack_sampler.py [--rounds 30] [--calls 200] [--width 256]
Results go into docs/PERFORMANCE.md (by hand, with the date and machine).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import torch
import torch.nn as nn

from pt2doctor.capture.sampler import StackSampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--width", type=int, default=256)
    args = parser.parse_args()
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
    times: dict[bool, list[float]] = {False: [], True: []}
    rates = []
    for round_ in range(args.rounds):
        for sampled in (False, True) if round_ % 2 == 0 else (True, False):
            sampler = StackSampler(threading.get_ident()) if sampled else None
            if sampler is not None:
                sampler.start()
            started = time.perf_counter()
            times[sampled].append(block())
            if sampler is not None:
                taken = len(sampler.stop()["at_ns"])
                rates.append(taken / ((time.perf_counter() - started) * 1e3))
    off, on = statistics.median(times[False]), statistics.median(times[True])
    print(f"loop call, sampler off: {off:.4f} ms (median of {args.rounds} blocks)")
    print(f"loop call, sampler on:  {on:.4f} ms")
    print(f"on / off: {on / off:.3f}")
    print(f"samples per ms: {statistics.median(rates):.2f}")


if __name__ == "__main__":
    main()
