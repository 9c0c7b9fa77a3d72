"""Break heat and categories on program shapes where they used to be wrong (issue 13, item 10).

Each program under tests/programs/run keeps an independent count of how often its break line
ran (lines it wrote to a file, lines it printed, calls × blocks of its own loop) and prints it
as ``COUNTS {json}``; the report's ``hits`` must equal it exactly. Lines come from ``# MARK:``
comments. The six programs run one after the other in one ``pt2doctor run --backend eager``
(run_heat_shapes.py, one torch start instead of six); each site is found by file and line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in

pytestmark = pytest.mark.torch_run

EAGER = ("--backend", "eager")
RUN_PROGRAMS_DIR = Path(__file__).resolve().parents[1] / "programs" / "run"


def site_at(report: dict[str, Any], program: str, marker: str) -> dict[str, Any]:
    line = marker_in(RUN_PROGRAMS_DIR / f"{program}.py", marker)
    (row,) = [
        r
        for r in report["graph_breaks"]
        if r["site"]["line"] == line and r["site"]["file"].endswith(f"programs/run/{program}.py")
    ]
    return row


def heat_run(doctor_run):  # type: ignore[no-untyped-def]
    run = doctor_run("heat_shapes", EAGER, "run_heat_shapes")
    assert run.returncode == 0, run.stderr[-2000:]
    return run


def test_a_file_write_inside_forward_has_exact_hits(doctor_run) -> None:
    """The resume function starts inside ``with open(...)`` and is itself skipped by Dynamo;
    its calls are still the write's executions (it used to read ``hits: null``)."""
    run = heat_run(doctor_run)
    row = site_at(run.report, "run_file_write", "write")
    assert row["category"] == "io"
    assert row["hits"] == run.counts_of("run_file_write")["writes"] == 5
    assert row["hot"] is True


def test_an_item_break_in_blocks_reached_from_a_loop_has_exact_hits(doctor_run) -> None:
    """The loop over ``self.blocks`` makes Dynamo skip the outer ``forward``; each block's
    ``forward`` compiles on its own and breaks at ``.item()``, once per block per call."""
    run = heat_run(doctor_run)
    row = site_at(run.report, "run_block_loop", "item")
    assert row["category"] == "data_dependent_scalar"
    assert row["hits"] == run.counts_of("run_block_loop")["item_reads"] == 12
    # The advice states the site's facts: its heat and the loop that made Stack.forward eager.
    stack_forward = marker_in(RUN_PROGRAMS_DIR / "run_block_loop.py", "stack")
    assert "ran 12 times (hot)" in row["advice"]
    assert (
        f"is reached inside a for/while loop of forward (defined at line {stack_forward})"
        in row["advice"]
    )


def test_a_helper_reached_from_three_call_sites_is_counted_once_per_run(doctor_run) -> None:
    """The caller also resumes after each call to the breaking helper; those resumes must not be
    added to the helper's own (it used to read about twice the real count)."""
    run = heat_run(doctor_run)
    printed = run.stdout.splitlines().count("pt2doctor run_shared_helper: helper ran")
    assert printed == 3 * run.counts_of("run_shared_helper")["calls"] == 15
    row = site_at(run.report, "run_shared_helper", "helper")
    assert row["category"] == "print_or_logging"
    assert row["hits"] == printed


def test_warnings_warn_is_logging_not_a_c_extension(doctor_run) -> None:
    """torch 2.13 calls it ``_warnings.warn``, "marked as skipped"; it is still a warning."""
    run = heat_run(doctor_run)
    row = site_at(run.report, "run_warn", "warn")
    assert row["category"] == "print_or_logging"
    assert row["hits"] == run.counts_of("run_warn")["warnings"] == 4
    assert "reorderable_logging_functions" in row["advice"]
    assert "custom op" not in row["advice"]


def test_a_compiled_optimizer_step_breaks_by_design(doctor_run) -> None:
    """torch's ``_use_grad`` breaks around every step on purpose: the finding is info, its
    advice says why and not torch's "remove the call", and each step counts once (the user's
    ``step`` and torch's ``wrapper`` both resume after it)."""
    run = heat_run(doctor_run)
    (row,) = [
        r for r in run.report["graph_breaks"] if r["site"]["file"].endswith("optim/optimizer.py")
    ]
    assert row["site"]["function"] == "_use_grad"
    assert row["category"] == "explicit_disable"
    assert row["by_design"] is True
    assert row["hits"] == run.counts_of("run_opt_step")["steps"] == 3
    assert "pytorch/pytorch#104053" in row["advice"]
    assert "Remove the" not in row["advice"]
    step = marker_in(RUN_PROGRAMS_DIR / "run_opt_step.py", "step")
    assert f"reached from your step (run_opt_step.py:{step})" in row["advice"]
    (finding,) = [
        f
        for f in run.report["findings"]
        if f["code"] == "graph_break" and "_use_grad" in f["title"]
    ]
    assert finding["severity"] == "info"
    assert finding["title"].endswith("(PyTorch's, by design)")


def test_a_break_in_a_return_has_unknown_heat_not_zero(doctor_run) -> None:
    """``return int(t)``: Dynamo installs no resume function after it, so nothing counts its
    executions. It ran 6 times: "ran 0 times (cold)" (it used to read that) is false."""
    run = heat_run(doctor_run)
    assert run.counts_of("run_return_break")["calls"] == 6
    row = site_at(run.report, "run_return_break", "return")
    assert row["hits"] is None and row["hot"] is not False
    assert "ran 0 times" not in row["advice"] and "cold" not in row["advice"]
