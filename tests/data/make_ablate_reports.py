"""Regenerate the ablate report.json fixtures in tests/data/ablates (inputs of the golden and
browser-safety tests of the ablate renderers).

Each fixture is the report.json of a real ``pt2doctor ablate`` (torch 2.13.0 CPU), with machine
paths normalized: the repository root becomes ``/repo``, the Python installation ``/python``,
the temporary output directory ``/tmp/out``, object addresses ``0x0``. Run from the repository root:
``.venv/bin/python tests/data/make_ablate_reports.py [NAME ...]`` (~40 s each on 2 CPU cores).

- ``ablate_relu.json``: ``tests/programs/ablate/layered.py`` with
  ``--backend relu_accuracy_error_TESTING_ONLY --no-bisect``: diverges at the backend rung,
  localized to ``blocks.2.act``, repro written and verified.
- ``ablate_hostile.json``: ``tests/programs/ablate/hostile_raise.py`` (Inductor, compiler_bisector
  on): a post-grad pass raises an error whose message is markup and script, in a submodule whose
  name is markup.
- ``ablate_script_backend.json``: script mode on ``tests/programs/failures/planted_backend.py``
  (its own backend, ``relu_compile_error_TESTING_ONLY``, as written): the repro is the graph
  torch's minifier shrank.
- ``ablate_script_closure.json``: script mode on ``tests/programs/failures/closure_pass.py``: the
  pass is a closure the repro cannot carry; torch's minifier runs as the last rung.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from make_reports import normalize

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "ablates"
RUNS = {
    "ablate_relu": [
        "tests/programs/ablate/layered.py", "--backend", "relu_accuracy_error_TESTING_ONLY",
        "--no-bisect",
    ],
    "ablate_hostile": ["tests/programs/ablate/hostile_raise.py"],
    "ablate_script_backend": ["--", "PYTHON", "tests/programs/failures/planted_backend.py"],
    "ablate_script_closure": ["--", "PYTHON", "tests/programs/failures/closure_pass.py"],
}  # fmt: skip


def main(names: list[str]) -> None:
    env = dict(os.environ)
    for name in ("TORCH_LOGS", "TORCH_COMPILE_DEBUG", "TORCHDYNAMO_VERBOSE"):
        env.pop(name, None)
    for name in names or list(RUNS):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            command = [sys.executable, "-m", "pt2doctor", "ablate", "--out", str(out)]
            args = [sys.executable if arg == "PYTHON" else arg for arg in RUNS[name]]
            done = subprocess.run([*command, *args], cwd=REPO, env=env, capture_output=True,
                                  text=True, check=False)  # fmt: skip
            if done.returncode not in (0, 1):
                sys.exit(f"{name}: exit {done.returncode}\n{done.stderr[-3000:]}")
            text = normalize((out / "report.json").read_text()).replace(tmp, "/tmp")
            text = re.sub(r" at 0x[0-9a-f]+>", " at 0x0>", text)  # a config value's repr
            (OUT / f"{name}.json").write_text(text)
            print(f"wrote {OUT / name}.json")


if __name__ == "__main__":
    main(sys.argv[1:])
