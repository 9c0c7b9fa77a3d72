"""Regenerate the report.json fixtures in tests/data/reports (inputs of the golden tests).

Each fixture is the report.json of a real ``pt2doctor run --backend eager`` (torch 2.13.0 CPU),
with machine paths normalized: the repository root becomes ``/repo``, the Python installation
``/python``. Run from the repository root: ``.venv/bin/python tests/data/make_reports.py``.

- ``demo_eager.json``: ``examples/serving_loop.py`` (PT2DOCTOR_DEMO_BACKEND=eager,
  ``--warmup-calls 3``): hot and cold breaks, size and flag recompiles, a skipped frame.
- ``hostile.json``: ``tests/programs/run/run_hostile.py``: names, file name, guard text and source
  line that are HTML and script.
- ``ranks.json``: ``--nproc 2 -- tests/programs/run/run_ranks.py 4`` (two gloo ranks under
  torchrun; rank 1 recompiles for one batch of another size): the ``ranks`` section.
- ``cold_start.json``: ``tests/programs/run/run_cold_start.py`` with Inductor (not
  ``--backend eager``) and an empty private TORCHINDUCTOR_CACHE_DIR: every cache misses, the
  ``cold_start`` section with C++ build phases (~20-80 s on 2 CPU cores).

``.venv/bin/python tests/data/make_reports.py ranks`` regenerates only the named fixtures.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "reports"
RUNS = {
    "demo_eager": ["--warmup-calls", "3", "--", sys.executable, "examples/serving_loop.py"],
    "hostile": ["--", sys.executable, "tests/programs/run/run_hostile.py"],
    "ranks": ["--nproc", "2", "--", sys.executable, "tests/programs/run/run_ranks.py", "4"],
    "cold_start": ["--", sys.executable, "tests/programs/run/run_cold_start.py"],
}
# Fixtures compiled with Inductor, each in an empty cache dir of its own (the others: eager).
INDUCTOR_RUNS = {"cold_start"}


def normalize(text: str) -> str:
    """Machine paths out (the interpreter's, then the repo root), and the random part of the
    trace log's name torch picks."""
    text = text.replace(sys.executable, "/python/bin/python")
    prefixes = {sysconfig.get_paths()[key] for key in ("purelib", "stdlib")}
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix, "/python/lib")
    text = text.replace(str(REPO), "/repo")
    return re.sub(  # a rank's log keeps its rank: dedicated_log_torch_trace_rank_1.log
        r"dedicated_log_torch_trace_(rank_\d+_)?\w+?\.log",
        lambda found: f"dedicated_log_torch_trace{'_' + found[1][:-1] if found[1] else ''}.log",
        text,
    )


def main(names: list[str]) -> None:
    env = {**os.environ, "PT2DOCTOR_DEMO_BACKEND": "eager"}
    for name in ("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE"):
        env.pop(name, None)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or list(RUNS):
            args = RUNS[name]
            run_dir = Path(tmp) / name
            command = [sys.executable, "-m", "pt2doctor", "run", "--out", str(run_dir)]
            backend = [] if name in INDUCTOR_RUNS else ["--backend", "eager"]
            run_env = {**env, "TORCHINDUCTOR_CACHE_DIR": f"{tmp}/{name}-cache"}
            subprocess.run([*command, *backend, *args], cwd=REPO, env=run_env,
                           check=True, capture_output=True)  # fmt: skip
            text = normalize((run_dir / "report.json").read_text()).replace(tmp, "/tmp")
            (OUT / f"{name}.json").write_text(text)
            print(f"wrote {OUT / name}.json")


if __name__ == "__main__":
    main(sys.argv[1:])
