"""``check`` reports where its own wall time went: a real check run (``--backend eager``, cold
starts on), its cost compared with what the file system and the clock say independently."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.torch_run

CASES = Path(__file__).resolve().parents[1] / "programs" / "check" / "variants_budget.py"


def test_check_cost_accounts_for_its_wall_time(tmp_path: Path, run_env: dict[str, str]) -> None:
    out = tmp_path / "out"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "check", str(CASES), "--out", str(out),
         "--backend", "eager", "--iterations", "4"],
        cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    cost = json.loads((out / "report.json").read_text())["cost"]
    workers = list(out.glob("groups/*/*/attempt-*")) + list(out.glob("cold/*/*/*_cache"))
    assert cost["launches"] == len(workers) > 0
    parts = [key for key in cost if key.endswith("_s") and key not in ("wall_s", "compile_s",
             "warmup_compile_s", "command_s", "parent_s")]  # fmt: skip
    assert sum(cost[key] for key in parts) == pytest.approx(cost["wall_s"], abs=1e-3)
    for key in ("process_start_s", "align_eager_s", "fp64_reference_s", "align_compile_s",
                "warmup_s", "measure_s", "cold_start_s"):  # fmt: skip
        assert cost[key] > 0, key
    # The workers are most of the check; the parent only plans, polls and writes the report.
    assert 0.5 * elapsed <= cost["wall_s"] <= elapsed
    # The command's own time: from its start (after the interpreter and pt2doctor's imports,
    # which this test's clock also counts) to its last worker; the rest is the parent's.
    assert cost["wall_s"] < cost["command_s"] <= elapsed
    assert cost["parent_s"] == pytest.approx(cost["command_s"] - cost["wall_s"], abs=1e-5)
    useful = cost["compile_s"] + cost["measure_s"]
    assert cost["ratio"] == pytest.approx(cost["wall_s"] / useful, rel=1e-2)
    printed = " ".join(done.stdout.split())
    assert f"check took {cost['command_s']:.1f} s: its own process {cost['parent_s']:.1f} s" in (
        printed
    )
    assert f"{cost['launches']} worker process(es) {cost['wall_s']:.1f} s" in printed
    # The HTML page says it too, under the contract.
    page = " ".join((out / "report.html").read_text().split())
    assert f"check took {cost['command_s']:.1f} s: its own process {cost['parent_s']:.1f} s" in page
