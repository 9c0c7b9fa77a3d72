"""A value a schedule steps through, set on a module at every step, is bounded by its steps:
the report says so (not "unbounded, keeps changing") and names the user's store, not the
line that built the module (tests/programs/run/run_rounded_schedule.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in

pytestmark = pytest.mark.torch_run
PROGRAMS = Path(__file__).resolve().parents[1] / "programs" / "run"


def test_a_rounded_schedule_is_one_variant_per_step_not_unbounded(doctor_run: Any) -> None:
    run = doctor_run("rounded_schedule", ["--backend", "eager"], "run_rounded_schedule")
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads((run.run_dir / "report.json").read_text())
    (finding,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert "unbounded" not in finding["title"] and "one per step of a schedule" in finding["title"]
    assert "stepped through 4 values" in " ".join(finding["evidence"])
    # The fix names the loop's store (MARK:store), not `nn.Dropout(0.0)`'s line.
    program = (run.run_dir / "stdout.log").read_text()
    store = marker_in(PROGRAMS / "run_rounded_schedule.py", "store")
    assert f"run_rounded_schedule.py:{store}: `model[2].p = p" in finding["advice"]
    assert "round the schedule" not in finding["advice"]  # it already is
    # The truth: one variant per value the schedule took, as the program counted them.
    values = int(re.search(r"^values: (\d+)$", program, re.M)[1])  # type: ignore[index]
    assert report["summary"]["compiles"] == values == 4
