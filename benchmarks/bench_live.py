"""Benchmark live events: how soon a recompile's line arrives, and what following a growing
log costs.

delay   tests/programs/run/run_serving_loop.py under `pt2doctor run --live --steady-after 1
        --backend eager`, --runs times: the late request's two recompiles (the frame and its
        resume function) are read from the run's stderr as they arrive, each stamped with
        this machine's time of day; the compile's own timestamp is its `compilation_metrics`
        record's glog time in the run's TORCH_TRACE (written when the compile ended). The
        delay is arrival - that time (the follower polls every 0.5 s).
follow  trace/tail.py `Tail` on a file grown by appending a corpus log (or --log FILE) in
        chunks of --chunk-mb up to --total-mb: the CPU time (time.process_time) of the poll
        after each append, per MB appended, early (the first fifth) against late (the last
        fifth), and the CPU of a poll that finds nothing new on the full-size file. Cost
        proportional to the appended bytes: late/early near 1, an idle poll near 0.

Usage: python benchmarks/bench_live.py [--runs 3] [--total-mb 200] [--chunk-mb 2] [--log FILE]
Results go into docs/PERFORMANCE.md (by hand, with the date and machine).
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pt2doctor.trace.tail import Tail

REPO = Path(__file__).resolve().parents[1]
PROGRAM = REPO / "tests" / "programs" / "run" / "run_serving_loop.py"
CORPUS_LOG = REPO.parent / "shared" / "corpus" / "tlparse-inputs" / "inputs" / "cache_hit_miss.log"
DELAY_TARGET_S = 1.0
GLOG = re.compile(rb"^V\d{4} (\d+):(\d+):(\d+\.\d+) .*\{\"compilation_metrics\"")


def _seconds_of_day(hours: bytes | str, minutes: bytes | str, seconds: bytes | str) -> float:
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def _now_of_day() -> float:
    now = datetime.datetime.now()
    return now.hour * 3600 + now.minute * 60 + now.second + now.microsecond / 1e6


def one_delay(work: Path, index: int) -> list[float]:
    """The delays of the late request's recompile lines in one run."""
    out, release = work / f"run{index}", work / f"release{index}"
    command = [sys.executable, "-m", "pt2doctor", "run", "--out", str(out), "--live",
               "--steady-after", "1", "--backend", "eager", "--format", "json", "--",
               sys.executable, str(PROGRAM), str(release)]  # fmt: skip
    job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    arrivals: list[float] = []

    def read() -> None:
        assert job.stderr is not None
        for line in job.stderr:
            if "recompile after warmup " in line:
                arrivals.append(_now_of_day())
                if len(arrivals) == 2:
                    release.touch()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    job.wait(timeout=300)
    reader.join(timeout=10)
    ends = []
    for log in sorted((out / "trace").glob("*.log")):
        for line in log.read_bytes().splitlines():
            match = GLOG.match(line)
            if match:
                ends.append(_seconds_of_day(*match.groups()))
    late = sorted(ends)[-2:]  # the last two compiles: the late request's
    if len(arrivals) != 2 or len(late) != 2:
        raise SystemExit(f"run {index}: {len(arrivals)} live lines, {len(ends)} compiles")
    return [arrival - end for arrival, end in zip(arrivals, late, strict=True)]


def follow_cost(log: Path, total_mb: float, chunk_mb: float, work: Path) -> dict[str, float]:
    data = log.read_bytes()
    chunk = data * max(1, round(chunk_mb * 2**20 / len(data)))
    grown = work / "growing.log"
    grown.write_bytes(b"")
    tail = Tail(grown)
    per_mb: list[float] = []
    records = 0
    while grown.stat().st_size < total_mb * 2**20:
        with grown.open("ab") as stream:
            stream.write(chunk)
        start = time.process_time()
        records += len(tail.poll())
        per_mb.append((time.process_time() - start) / (len(chunk) / 2**20))
    start = time.process_time()
    for _ in range(100):
        tail.poll()
    idle_ms = (time.process_time() - start) / 100 * 1e3
    fifth = max(1, len(per_mb) // 5)
    return {
        "size_mb": grown.stat().st_size / 2**20,
        "polls": len(per_mb),
        "records": records,
        "early_ms_per_mb": statistics.median(per_mb[:fifth]) * 1e3,
        "late_ms_per_mb": statistics.median(per_mb[-fifth:]) * 1e3,
        "idle_poll_ms": idle_ms,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--total-mb", type=float, default=200.0)
    parser.add_argument("--chunk-mb", type=float, default=2.0)
    parser.add_argument("--log", type=Path, default=CORPUS_LOG)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pt2doctor-bench-live-") as tmp:
        work = Path(tmp)
        delays = [d for index in range(args.runs) for d in one_delay(work, index)]
        print(f"delay  recompile -> its line on stderr, {len(delays)} lines of {args.runs} runs: "
              f"median {statistics.median(delays):.2f} s, max {max(delays):.2f} s "
              f"(target < {DELAY_TARGET_S:.0f} s: {'met' if max(delays) < DELAY_TARGET_S else 'NOT met'})")  # fmt: skip
        if not args.log.is_file():
            print(f"follow skipped: no {args.log} (pass --log FILE)")
            return 0
        cost = follow_cost(args.log, args.total_mb, args.chunk_mb, work)
        ratio = cost["late_ms_per_mb"] / cost["early_ms_per_mb"]
        print(f"follow {args.log.name} appended to {cost['size_mb']:.0f} MB in {cost['polls']:.0f} "
              f"polls ({cost['records']:.0f} records): {cost['early_ms_per_mb']:.1f} ms CPU per MB "
              f"appended early, {cost['late_ms_per_mb']:.1f} late (late/early {ratio:.2f}); a poll "
              f"with nothing new on the full file: {cost['idle_poll_ms']:.3f} ms")  # fmt: skip
        print(json.dumps({"delays_s": delays, **cost}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
