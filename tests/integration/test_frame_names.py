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
    assert co_names == {"wrapper", "forward"}  # what Dynamo itself calls the three frames
    out = tmp_path / "report.json"
    assert main(["report", str(trace_dir), "--json", str(out), "--format", "json"]) == 0
    names = {(f["function"], f["line"]): f["display_name"]
             for f in json.loads(out.read_text())["frames"]}  # fmt: skip
    wrapper, whole = marker_in(PROGRAM, "wrapper"), marker_in(PROGRAM, "whole")
    assert names == {
        ("wrapper", wrapper): f"Net.forward (through wrapper at wrapped_forward.py:{wrapper})",
        ("forward", marker_in(PROGRAM, "plain")): "Plain.forward",
        # torch.compile(model): past torch's compile_wrapper, the caller is Module.__call__.
        ("wrapper", whole): f"Whole.forward (through wrapper at wrapped_forward.py:{whole})",
    }
