"""Benchmark what ``pt2doctor check`` costs on top of what it measures.

Runs ``pt2doctor check examples/cases/transformer_block.py --quick --cells eval`` (4 cells in 2
groups: float32 and bfloat16, two sequence-length buckets each; Inductor) with a private
TORCHINDUCTOR_CACHE_DIR: once to fill the cache (not reported), then --runs times with the cache
warm. From each run's report.json ``cost`` (check/cost.py): the check's wall time, where it went
(process starts, model builds, eager runs, fp64 references, alignment compiles, warmup,
measurement, other) and the ratio of wall time to its compile plus measure time. The command's
own wall time (measured here around the subprocess) is printed beside the workers' sum and the
parent's own time (``parent_s``).

Side by side: the warm runs take turns with workers forked from the fork server (the default)
and started afresh (``PT2DOCTOR_FRESH_WORKERS=1``, every worker a new interpreter importing
torch), and the last line is the ratio of their median command times.

Usage: python benchmarks/bench_check_cost.py [--runs 2] [--keep DIR]
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
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "examples" / "cases" / "transformer_block.py"
PARTS = ("parent_s", "process_start_s", "align_build_s", "align_eager_s", "fp64_reference_s",
         "align_compile_s", "warmup_s", "measure_s", "other_s")  # fmt: skip


def run_check(out: Path, cache: Path, fresh: bool = False) -> tuple[float, dict[str, float]]:
    """One check run: the command's wall time and its report's cost."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache)}
    if fresh:
        env["PT2DOCTOR_FRESH_WORKERS"] = "1"
    command = [sys.executable, "-m", "pt2doctor", "check", str(CASES), "--quick",
               "--cells", "eval", "--out", str(out)]  # fmt: skip
    started = time.monotonic()
    subprocess.run(command, env=env, cwd=REPO, capture_output=True, check=False, timeout=3600)
    elapsed = time.monotonic() - started
    cost: dict[str, float] = json.loads((out / "report.json").read_text())["cost"]
    return elapsed, cost


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", type=Path, help="keep the check directories here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        cache = work / "inductor-cache"
        run_check(work / "fill-cache", cache)
        rows = [
            (how, *run_check(work / f"run-{index}-{how}", cache, fresh=how == "fresh"))
            for index in range(args.runs)
            for how in ("forked", "fresh")
        ]
    print("| run | workers | command wall s | workers wall s | compile s | measure s | ratio | "
          + " | ".join(PARTS) + " |")  # fmt: skip
    for index, (how, elapsed, cost) in enumerate(rows):
        cells = [f"{cost[p]:.1f}" for p in PARTS]
        print(f"| {index // 2} | {how} | {elapsed:.1f} | {cost['wall_s']:.1f} | "
              f"{cost['compile_s']:.1f} | {cost['measure_s']:.1f} | {cost['ratio']:.1f} | "
              + " | ".join(cells) + " |")  # fmt: skip
    median = {
        how: statistics.median(e for h, e, _ in rows if h == how) for how in ("forked", "fresh")
    }
    for how in ("forked", "fresh"):
        ratios = [c["ratio"] for h, _, c in rows if h == how]
        print(
            f"{how}: median command {median[how]:.1f} s, median ratio {statistics.median(ratios):.1f}"
        )
    print(f"command time forked / fresh: {median['forked'] / median['fresh']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
