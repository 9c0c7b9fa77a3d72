"""``frames[].display_name`` on a real trace: a forward behind a generic ``functools.wraps``
decorator reads as ``Net.forward (through wrapper at FILE:LINE)``, not ``wrapper``.

The program (tests/programs/wrapped_forward.py) runs once under TORCH_TRACE (conftest
``traced``); lines come from its ``# MARK:`` comments, code names from the raw log's
``compilation_metrics``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracles import marker_in, raw_records
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "wrapped_forward.py"


def test_a_wrapped_forward_is_named_after_its_module_and_wrapper(traced, tmp_path: Path) -> None:
    trace_dir = traced("wrapped_forward")
    co_names = {
        env["compilation_metrics"].get("co_name")
        for env, _ in raw_records(trace_dir)
        if "compilation_metrics" in env
    }
    assert co_names == {"wrapper", "forward"}  # what Dynamo itself calls the two frames
    out = tmp_path / "report.json"
    assert main(["report", str(trace_dir), "--json", str(out), "--format", "json"]) == 0
    frames = {f["function"]: f for f in json.loads(out.read_text())["frames"]}
    wrapper_line = marker_in(PROGRAM, "wrapper")
    assert frames["wrapper"]["line"] == wrapper_line
    assert frames["wrapper"]["display_name"] == (
        f"Net.forward (through wrapper at wrapped_forward.py:{wrapper_line})"
    )
    assert frames["forward"]["line"] == marker_in(PROGRAM, "plain")
    assert frames["forward"]["display_name"] == "Plain.forward"
