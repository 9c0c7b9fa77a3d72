"""Benchmark `pt2doctor report` against tlparse on the same logs, side by side in one run.

Measures wall time (median of N runs), CPU time (user + sys, median) and peak RSS of each
command as a child process, on:
  1. multi_rank_logs/dedicated_log_torch_trace_rank_1.log from ../shared (3.5 MB), and
  2. a ~200 MB log built by repeating that file 57 times (in a temporary directory).
The commands take turns run by run (A B C A B C ...), so a load that drifts hits them alike;
the load average is printed before and after, since a busy machine stretches wall times.
A bare line scan of the same file (Python reading it line by line and decoding each envelope
line's JSON, payload lines skipped) is the floor `report` is compared with.

With ``--before OTHER/src`` (another checkout's src folder, e.g. the commit before a change),
`pt2doctor report` of that tree runs too, through PYTHONPATH, in the same turns.

Both source trees are byte-compiled first (``compileall``), as an installed package is: with
PYTHONDONTWRITEBYTECODE set (as on the development machine) an editable install would
otherwise compile every pt2doctor module from source on each run (~60 ms on the 3.5 MB log).

Usage: python benchmarks/bench_report.py [--runs 3] [--corpus DIR] [--skip-big] [--before SRC]
Results go into docs/PERFORMANCE.md (by hand, with the date and machine).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus" / "tlparse-inputs"
LOG = Path("inputs/multi_rank_logs/dedicated_log_torch_trace_rank_1.log")
REPEAT = 57


# The floor: every line read, envelope lines decoded, payload lines skipped unread.
BARE_SCAN = """
import re, sys, orjson
prefix = re.compile(rb"[VIWEC]\\d{4} [^\\]]*\\] ")
with open(sys.argv[1], "rb") as log:
    for line in log:
        if line[:1] != b"\\t" and (match := prefix.match(line)):
            orjson.loads(line[match.end():])
"""


def measure(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + sys, children included) and peak RSS (MB) of one run
    of ``command`` (its output discarded)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"command failed ({process.returncode}): {' '.join(command)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KiB


def commands(log: Path, work: Path) -> dict[str, list[str]]:
    bindir = Path(sys.executable).parent
    tlparse = shutil.which("tlparse") or str(bindir / "tlparse")
    pt2doctor = shutil.which("pt2doctor", path=str(bindir)) or str(bindir / "pt2doctor")
    return {
        "pt2doctor report": [
            pt2doctor,
            "report",
            str(log),
            "--json",
            str(work / "report.json"),
            "--format",
            "json",
        ],
        "tlparse 0.4.3": [tlparse, str(log), "-o", str(work / "tl"), "--no-browser", "--overwrite"],
        "bare line scan": [sys.executable, "-c", BARE_SCAN, str(log)],
    }


def byte_compile(src: Path) -> None:
    """Write the .pyc files of ``src`` (what pip does when it installs a wheel)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(src)], check=True)


def bench(log: Path, runs: int, work: Path, before: Path | None) -> None:
    size_mb = log.stat().st_size / 1e6
    print(f"\n{log.name}: {size_mb:.1f} MB, median of {runs} runs, load {_load()}")
    named = commands(log, work)
    envs: dict[str, dict[str, str] | None] = dict.fromkeys(named)
    if before is not None:
        named["report (before)"] = named["pt2doctor report"]
        envs["report (before)"] = {**os.environ, "PYTHONPATH": str(before.resolve())}
    samples: dict[str, list[tuple[float, float, float]]] = {name: [] for name in named}
    for _ in range(runs):
        for name, command in named.items():
            samples[name].append(measure(command, envs[name]))
    results: dict[str, tuple[float, float, float]] = {}
    for name, runs_of in samples.items():
        walls = [wall for wall, _, _ in runs_of]
        cpus = [cpu for _, cpu, _ in runs_of]
        cpu = statistics.median(cpus)
        results[name] = (statistics.median(walls), cpu, max(rss for _, _, rss in runs_of))
        print(
            f"  {name:18} {results[name][0]:7.3f} s  (min {min(walls):.3f}, max {max(walls):.3f})"
            f"  CPU {cpu:6.3f} s (min {min(cpus):.3f})  peak RSS {results[name][2]:4.0f} MB"
            f"  {size_mb / results[name][0]:5.0f} MB/s"
        )
    ours, theirs = results["pt2doctor report"], results["tlparse 0.4.3"]
    print(
        f"  pt2doctor/tlparse: time {ours[0] / theirs[0]:.2f}x, CPU {ours[1] / theirs[1]:.2f}x,"
        f" RSS {ours[2] / theirs[2]:.2f}x; load now {_load()}"
    )


def _load() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--skip-big", action="store_true", help="only the 3.5 MB log")
    parser.add_argument("--before", type=Path, help="another checkout's src folder to compare")
    args = parser.parse_args()
    byte_compile(REPO / "src")
    if args.before is not None:
        byte_compile(args.before)
    log = args.corpus / LOG
    if not log.exists():
        print(f"bench_report: {log} not found (needs ../shared/corpus)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="pt2doctor-bench-") as tmp:
        work = Path(tmp)
        bench(log, args.runs, work, args.before)
        if not args.skip_big:
            big = work / "repeated_57x.log"
            data = log.read_bytes()
            with big.open("wb") as out:
                for _ in range(REPEAT):
                    out.write(data)
            bench(big, args.runs, work, args.before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
