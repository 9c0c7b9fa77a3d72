"""Benchmark ``pt2doctor report`` on profiler traces the user already has (the device side).

1. The V100 compiled-training trace of the shared corpus (3 MB gzip, 123k complete events,
   216k in all): in a fresh process, the wall time and the peak memory of reading it and
   analysing its device side (``read_chrome_trace`` + ``device_profile`` +
   ``device_findings``), and the whole ``pt2doctor report`` command beside it.
2. A large trace: that trace's events repeated (timestamps shifted by its span, in Kineto's
   own layout) until the file holds --mb megabytes; the same measure, as the cost per
   million events and the peak memory per million events.
3. A directory of --ranks copies of the A100 compiled-training trace (one per rank): the
   command's wall time on every core against one core (``taskset -c 0``).

Usage: python benchmarks/bench_device_profile.py [--mb 1024] [--ranks 64] [--keep DIR]
Results go into docs/PERFORMANCE.md (by hand, with the date and machine).
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import orjson

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "gpu-profiles"
MEASURE = """\
import resource, sys, time
from pathlib import Path
path = Path(sys.argv[1])
from pt2doctor.trace.chrome import read_chrome_trace
from pt2doctor.analysis.time.device import device_profile
from pt2doctor.analysis.time.device_findings import device_findings
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
trace = read_chrome_trace(path)
read = time.perf_counter() - start
findings = device_findings(device_profile(trace, path))
wall = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(len(trace), f"{read:.3f}", f"{wall:.3f}", (peak - base) // 1024, kids // 1024, len(findings))
"""


def measure(path: Path) -> tuple[int, float, float, int, int]:
    """(complete events, read s, read+analyse s, peak MB above baseline, workers' peak MB)."""
    out = subprocess.run([sys.executable, "-c", MEASURE, str(path)], capture_output=True,
                         text=True, check=True).stdout.split()  # fmt: skip
    return int(out[0]), float(out[1]), float(out[2]), int(out[3]), int(out[4])


def command(path: Path, *prefix: str) -> tuple[float, int]:
    """``pt2doctor report PATH``: wall seconds and the peak memory (MB) of its processes."""
    code = (
        "import resource, subprocess, sys, time; start = time.perf_counter(); "
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(f'{time.perf_counter() - start:.3f}', "
        "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)"
    )
    target = Path(tempfile.mkdtemp()) / "report.json"
    argv = [*prefix, sys.executable, "-m", "pt2doctor", "report", str(path), "--json", str(target)]
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         check=True).stdout.split()  # fmt: skip
    return float(out[0]), int(out[1])


def synthesize(source: Path, target: Path, megabytes: int) -> int:
    """``source``'s events repeated, shifted by its span each time, written in Kineto's layout
    until ``target`` holds ``megabytes``; returns the repetitions."""
    with gzip.open(source) as stream:
        document = orjson.loads(stream.read())
    events = document.pop("traceEvents")
    stamps = [e["ts"] for e in events if "ts" in e]
    span = max(stamps) - min(stamps) + 1000
    header = orjson.dumps(document)[1:-1]
    written, repeat = 0, 0
    with target.open("wb") as out:
        out.write(b"{\n  " + header + b',\n  "traceEvents": [\n')
        first = True
        while written < megabytes * 1024 * 1024:
            shift = span * repeat
            parts = []
            for event in events:
                moved = dict(event)
                if "ts" in moved:
                    moved["ts"] = moved["ts"] + shift
                if "id" in moved and isinstance(moved["id"], int):
                    moved["id"] = moved["id"] + repeat * 10_000_000
                args = moved.get("args")
                if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                    moved["args"] = {
                        **args,
                        "correlation": args["correlation"] + repeat * 10_000_000,
                    }
                parts.append(b"  {\n    " + orjson.dumps(moved)[1:-1] + b"\n  }")
            chunk = (b"" if first else b",\n") + b",\n".join(parts)
            out.write(chunk)
            written += len(chunk)
            first, repeat = False, repeat + 1
        out.write(b"\n  ]\n}\n")
    return repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-device-"))
    work.mkdir(parents=True, exist_ok=True)
    v100 = CORPUS / "v100_compiled_train.json.gz"
    events, read, wall, peak, _ = measure(v100)
    run_wall, run_peak = command(v100)
    print(f"V100 trace ({v100.stat().st_size / 1e6:.1f} MB gz, {events} complete events): "
          f"read {read:.2f} s, read + analyse {wall:.2f} s, +{peak} MB; "
          f"`pt2doctor report` {run_wall:.2f} s, peak {run_peak} MB")  # fmt: skip
    big = work / "big.json"
    repeats = synthesize(v100, big, args.mb)
    events, read, wall, peak, kids = measure(big)
    per = 1e6 / events
    print(f"synthesized {big.stat().st_size / 1e6:.0f} MB ({repeats} copies, {events} complete "
          f"events): read {read:.1f} s, read + analyse {wall:.1f} s = {wall * per:.2f} s per "
          f"million events; +{peak} MB ({peak * per:.0f} MB per million events), parse "
          f"workers' peak {kids} MB")  # fmt: skip
    big.unlink()
    ranks = work / "ranks"
    ranks.mkdir(exist_ok=True)
    a100 = CORPUS / "a100_compiled_train_cudagraphs.json.gz"
    for rank in range(args.ranks):
        shutil.copy(a100, ranks / f"rank{rank}.json.gz")
    every, _ = command(ranks)
    one, _ = command(ranks, "taskset", "-c", "0")
    print(
        f"{args.ranks} rank traces: {every:.1f} s on {len(os.sched_getaffinity(0))} cores, "
        f"{one:.1f} s on one ({one / every:.2f}x)"
    )
    if args.keep is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
