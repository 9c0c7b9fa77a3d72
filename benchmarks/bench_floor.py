"""The floor under `pt2doctor report` on the 3.6 MB log: what the interpreter and the libraries
`report` stands on cost before any pt2doctor code runs, side by side with `report` and tlparse.

Each command runs as a child process, the commands taking turns run by run; CPU (user + sys,
from ``wait4``) and wall time are given as median and minimum. Results go into
docs/PERFORMANCE.md by hand.

Usage: python benchmarks/bench_floor.py [--runs 9] [--corpus DIR]
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


def commands(log: Path, work: Path) -> dict[str, list[str]]:
    bindir = Path(sys.executable).parent
    python, base = sys.executable, "import pathlib, orjson, typing, re, hashlib"
    pt2doctor = shutil.which("pt2doctor", path=str(bindir)) or str(bindir / "pt2doctor")
    tlparse = shutil.which("tlparse") or str(bindir / "tlparse")
    return {
        "python -c pass": [python, "-c", "pass"],
        "pathlib, orjson, typing, re, hashlib": [python, "-c", base],
        "the same and click": [python, "-c", f"{base}, click"],
        "pt2doctor report --help": [pt2doctor, "report", "--help"],
        "pt2doctor report LOG": [
            *(pt2doctor, "report", str(log), "--json", str(work / "r.json"), "--format", "json")
        ],
        "tlparse 0.4.3": [tlparse, str(log), "-o", str(work / "tl"), "--no-browser", "--overwrite"],
    }


def measure(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command`` (its output discarded)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(process.pid, 0)
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    args = parser.parse_args()
    log = args.corpus / LOG
    if not log.is_file():
        raise SystemExit(f"no log at {log}")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "src")], check=True)
    print(f"{log.name}, {args.runs} runs each, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="pt2doctor-floor-") as tmp:
        named = commands(log, Path(tmp))
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in named}
        for _ in range(args.runs):
            for name, command in named.items():
                samples[name].append(measure(command))
    for name, runs in samples.items():
        wall, cpu = [w for w, _ in runs], [c for _, c in runs]
        print(
            f"  {name:38s} CPU {statistics.median(cpu) * 1e3:6.1f} ms (min {min(cpu) * 1e3:6.1f})"
            f"   wall {statistics.median(wall) * 1e3:6.1f} ms (min {min(wall) * 1e3:6.1f})"
        )


if __name__ == "__main__":
    main()
