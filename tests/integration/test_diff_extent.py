"""``pt2doctor diff`` of a graph break fixed, on real Inductor runs of
tests/programs/run/run_pooling_break.py: A pools in Python (a break), B (``PT2D_FIXED=1``) in
the graph. B's graph of ``forward`` covers code A ran eagerly, and B started with a cache
that held none of its graphs while A's second start was warm: more kernels, more time per
call in that graph and more compile time are none of them a regression, each says why; the
break gone is the change. The other way, the break is new: a regression."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oracles import doctor_report, marker_in

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_pooling_break.py"


def _run(run_dir: Path, cache: Path, **env: str) -> str:
    doctor_report(run_dir, PROGRAM, env={"TORCHINDUCTOR_CACHE_DIR": str(cache), **env})
    return (run_dir / "stdout.log").read_text()


def _diff(a: Path, b: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "diff", str(a), str(b), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    diff: dict[str, Any] = json.loads(done.stdout)
    return diff


def test_a_fixed_break_is_the_change_and_what_its_graph_now_covers_is_no_regression(
    tmp_path: Path, vec_isa_trusted: None
) -> None:
    cache = tmp_path / "cache"
    _run(tmp_path / "a-cold", cache)
    plain = _run(tmp_path / "a", cache)  # warm: A's graphs are in the cache
    fixed = _run(tmp_path / "b", cache, PT2D_FIXED="1")  # B's graphs are not
    checksum = [line for line in plain.splitlines() if line.startswith("checksum:")]
    assert checksum and checksum[0] in fixed.splitlines()  # the fix keeps the result

    a = json.loads((tmp_path / "a" / "report.json").read_text())
    b = json.loads((tmp_path / "b" / "report.json").read_text())
    assert a["cold_start"]["state"] == "warm" and b["cold_start"]["lookups"].get("miss")

    forward = _diff(tmp_path / "a", tmp_path / "b")
    assert forward["regressions"] == 0, [c for c in forward["changes"] if c["regression"]]
    kinds = {c["kind"]: c for c in forward["changes"]}
    line = marker_in(PROGRAM, "break")
    gone = kinds["removed_break_site"]
    assert gone["subject"] == f"{PROGRAM.name}:{line} forward"
    # What B's forward graph now does more of, each told why it is not a regression.
    extent = [c for c in forward["changes"] if c["kind"] in ("kernels", "time_per_call_s")]
    for change in extent:
        if change["kind"] == "kernels" and change["after"] > change["before"]:
            assert "graph breaks in this function differ" in change["detail"]
    assert any(c["kind"] == "kernels" and c["after"] > c["before"] for c in extent)
    misses = [c for c in forward["changes"] if c["kind"] == "cache_miss_cause"
              and c["after"] == "miss"]  # fmt: skip
    assert misses and all("compiles another graph" in c["detail"] for c in misses)
    compile_time = kinds.get("compile_time_s")
    if compile_time is not None and compile_time["after"] > compile_time["before"]:
        assert "not comparable" in compile_time["detail"]

    backward = _diff(tmp_path / "b", tmp_path / "a")
    worse = {(c["kind"], c["subject"]) for c in backward["changes"] if c["regression"]}
    assert ("new_break_site", f"{PROGRAM.name}:{line} forward") in worse
