"""Benchmark what a performance finding claims its fix saves against what applying the fix
saves, on three blind programs (tests/programs/real/blind):

- ``eager_optimizer_loop``: ``eager_optimizer``, its fused=True timed in the run on copies of
  the parameters; the fix applied is the author's ``eager_optimizer_loop_fixed``.
- ``small_decode_slower``: ``compiled_slower_than_eager``, from the run's paired compiled and
  eager calls; the fix is ``small_decode_slower_fixed`` (serves the eager model).
- ``gnn_message_passing``: ``compiled_slower_than_eager``; the fix is dropping torch.compile
  (``TORCH_COMPILE_DISABLE=1``).

Each program runs once under ``pt2doctor run --profile`` (the claim: the finding's
``saves_ms``), then it and its fix run plainly, alternating, ``--runs`` times each (the truth:
the difference of the medians of their own printed ``ms_per_step``). One thread
(OMP_NUM_THREADS=1) everywhere, one private warm Inductor cache. Printed per program: the
claim, the truth, their ratio, and each side's spread (max - min over median: this 2-core VM
changes speed between processes, and a spread over 0.6 means no truth at 30% was had).

Usage: python benchmarks/bench_fix_savings.py [--runs 3] [--only NAME]
Results go into docs/PERFORMANCE.md (by hand, with the date and machine).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BLIND = REPO / "tests" / "programs" / "real" / "blind"
CASES = [
    ("eager_optimizer_loop", "eager_optimizer", "eager_optimizer_loop_fixed", {}),
    ("small_decode_slower", "compiled_slower_than_eager", "small_decode_slower_fixed", {}),
    ("gnn_message_passing", "compiled_slower_than_eager", "gnn_message_passing",
     {"TORCH_COMPILE_DISABLE": "1"}),
]  # fmt: skip


def ms_per_step(env: dict[str, str], name: str) -> float:
    done = subprocess.run([sys.executable, str(BLIND / f"{name}.py")], env=env,
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    found = re.search(r"^ms_per_step: (\S+)$", done.stdout, re.M)
    if found is None:
        raise SystemExit(f"{name} printed no ms_per_step")
    return float(found[1])


def claim(env: dict[str, str], work: Path, name: str, code: str) -> float | None:
    out = work / f"run-{name}"
    subprocess.run([sys.executable, "-m", "pt2doctor", "run", "--profile", "--out", str(out),
                    "--", sys.executable, str(BLIND / f"{name}.py")], env=env,
                   capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    report = json.loads((out / "report.json").read_text())
    found = [f for f in report["findings"] if f["code"] == code]
    return found[0].get("saves_ms") if found else None


def spread(times: list[float]) -> float:
    return (max(times) - min(times)) / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="", help="one program's name (default: the three)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**os.environ, "OMP_NUM_THREADS": "1",
               "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor")}  # fmt: skip
        print(f"{'program':24} {'finding':28} {'claim ms':>9} {'truth ms':>9} {'ratio':>6} "
              f"{'spread':>12}")  # fmt: skip
        for name, code, fixed, extra in CASES:
            if args.only and name != args.only:
                continue
            ms_per_step(env, name)  # fills the cache for this program
            claimed = claim(env, work, name, code)
            before, after = [], []
            for _ in range(args.runs):
                before.append(ms_per_step(env, name))
                after.append(ms_per_step({**env, **extra}, fixed))
            truth = statistics.median(before) - statistics.median(after)
            ratio = f"{truth / claimed:.2f}" if claimed else "-"
            shown = f"{claimed:.3f}" if claimed is not None else "none"
            print(f"{name:24} {code:28} {shown:>9} {truth:9.3f} {ratio:>6} "
                  f"{spread(before):5.2f}/{spread(after):5.2f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
