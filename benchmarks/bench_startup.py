"""How long pt2doctor takes to start: `python -X importtime` of the CLI and `report --help`.

For each source tree given (default: the installed package; ``--src DIR`` adds another
checkout's ``src`` folder, e.g. the commit before a change, run through PYTHONPATH), taking
turns run by run:
  - the cumulative import time of ``pt2doctor.cli`` (``-X importtime -c "import pt2doctor.cli"``),
  - the import time of everything ``pt2doctor report --help`` imports, with the number of
    pt2doctor modules among them, and
  - the wall time of ``python -m pt2doctor report --help`` as a child process, and
  - the CPU time (user + sys) of ``python -c "import pt2doctor.cli"`` and of
    ``python -m pt2doctor report --help``, which a busy machine stretches far less than wall
    time (``-X importtime`` reports wall time).
Minimum and median of N runs; the minimum is the least disturbed by other load on the machine.
Every tree is byte-compiled first, as bench_report.py does (an editable install under
PYTHONDONTWRITEBYTECODE would otherwise compile pt2doctor from source on each run).

Usage: python benchmarks/bench_startup.py [--runs 15] [--src OTHER/src ...]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_report import REPO, byte_compile

_LINE = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _importtime(args: list[str], env: dict[str, str]) -> list[tuple[int, int, str]]:
    """(self µs, cumulative µs, indent) per module imported by ``python -X importtime ARGS``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *args], capture_output=True, text=True, env=env
    )
    rows = []
    for line in done.stderr.splitlines():
        match = _LINE.match(line)
        if match:
            rows.append((int(match.group(1)), int(match.group(2)), match.group(4)))
    return rows


def _cpu_ms(args: list[str], env: dict[str, str]) -> float:
    """User + sys CPU milliseconds of ``python ARGS``."""
    process = subprocess.Popen([sys.executable, *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"python {' '.join(args)} failed")
    return (usage.ru_utime + usage.ru_stime) * 1e3


def sample(env: dict[str, str]) -> tuple[float, ...]:
    """(cli import ms, report --help imports ms, report --help wall ms, cli import CPU ms,
    report --help CPU ms, pt2doctor modules)."""
    cli = next(cum for _, cum, name in _importtime(["-c", "import pt2doctor.cli"], env)
               if name == "pt2doctor.cli")  # fmt: skip
    rows = _importtime(["-m", "pt2doctor", "report", "--help"], env)
    imports = sum(own for own, _, _ in rows)
    ours = sum(1 for _, _, name in rows if name.startswith("pt2doctor"))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pt2doctor", "report", "--help"], env=env,
                   check=True, capture_output=True)  # fmt: skip
    wall = time.perf_counter() - start
    cli_cpu = _cpu_ms(["-c", "import pt2doctor.cli"], env)
    help_cpu = _cpu_ms(["-m", "pt2doctor", "report", "--help"], env)
    return cli / 1e3, imports / 1e3, wall * 1e3, cli_cpu, help_cpu, ours


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--src", type=Path, action="append", default=[])
    args = parser.parse_args()
    trees: dict[str, dict[str, str]] = {"installed": dict(os.environ)}
    byte_compile(REPO / "src")
    for src in args.src:
        byte_compile(src)
        trees[str(src)] = {**os.environ, "PYTHONPATH": str(src.resolve())}
    samples: dict[str, list[tuple[float, ...]]] = {name: [] for name in trees}
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    for _ in range(args.runs):
        for name, env in trees.items():
            samples[name].append(sample(env))
    print(f"{args.runs} runs each; load before {load}, after "
          + " ".join(f"{value:.1f}" for value in os.getloadavg()))  # fmt: skip
    labels = (
        "import pt2doctor.cli",
        "report --help: imports",
        "report --help: wall",
        "import pt2doctor.cli: CPU",
        "report --help: CPU",
    )
    for name, runs in samples.items():
        print(f"\n{name} ({runs[0][-1]:.0f} pt2doctor modules imported by report --help)")
        for index, label in enumerate(labels):
            values = [run[index] for run in runs]
            print(
                f"  {label:24} min {min(values):7.1f} ms  median {statistics.median(values):7.1f} ms"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
