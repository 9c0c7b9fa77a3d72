"""The code after a graph break, compiled per batch size, on a real (eager-backend) run of
tests/programs/run/run_pooling_break.py with twelve batches of nine sizes: the frame Dynamo
compiles after ``lengths.tolist()`` recompiles on what the break hands it (``h``, ``rows``)
until the recompile limit. No mark in the user's code reaches those values, so the fix is the
break's: the limit and the recompiles are filed under it, and no fix marks ``h``, a local the
user never passes. ``lengths.shape[0]``, specialized only in an analysis Dynamo restarted at
the break, is dynamic in the compile it kept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracles import marker_in

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_pooling_break.py"
BATCHES = "1,2,3,4,6,8,5,7,9,10,2,3"


def test_what_a_break_hands_over_is_the_breaks_to_fix(tmp_path: Path) -> None:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "PT2D_"))}
    environ["PT2D_BATCHES"] = BATCHES
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "run", "--backend", "eager", "--out",
         str(tmp_path / "run"), "--", sys.executable, str(PROGRAM)],
        env=environ, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    line = marker_in(PROGRAM, "break")
    (limit,) = [f for f in report["findings"] if f["code"] == "recompile_limit_hit"]
    (brk,) = [f for f in report["findings"] if f["code"] == "graph_break"]
    assert brk["cause"] == limit["cause"] == f"break {PROGRAM}:{line}"
    resumed = [f for f in report["findings"] if f["code"] == "recompiles"
               and "after its graph break" in f["title"]]  # fmt: skip
    assert resumed and all(f["cause"] == brk["cause"] for f in resumed)
    assert f"the graph break at line {line} hands to the code after it" in resumed[0]["advice"]
    for finding in report["findings"]:
        assert "maybe_mark_dynamic(h," not in finding["advice"], finding["advice"]
        assert "grows at every call" not in finding["advice"], finding["advice"]
    evidence = [e for f in report["findings"] for e in f["evidence"] if "lengths.shape[0]" in e]
    assert evidence and all("(now dynamic)" in e for e in evidence if " → " in e), evidence
    assert not any("made static" in f["title"] for f in report["findings"])
    # The break's own fix: a mask over the lengths, as run_pooling_break.py's PT2D_FIXED
    # applies it (tests/integration/test_diff_extent.py: the same checksum, no break).
    assert "keep = torch.arange(h.shape[1], device=h.device)[None, :] < lengths[:, None]" \
        in brk["advice"]  # fmt: skip
    assert "(h * keep[..., None]).sum(1) / lengths[:, None]" in brk["advice"]
    assert "bookkeeping" not in brk["advice"]
