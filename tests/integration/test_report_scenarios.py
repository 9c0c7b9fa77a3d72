"""``pt2doctor report`` on real TORCH_TRACE logs of the planted scenarios in tests/programs.

Each program is run once under TORCH_TRACE (see conftest ``traced``), then the CLI runs
in-process and report.json is read back. Expected values come from the program itself (line
numbers from ``# MARK:`` comments, limits from its source) and from a minimal independent scan of
the raw log (:func:`raw_records`), never from a stored copy of pt2doctor's output.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in, raw_records
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

PROGRAMS = Path(__file__).resolve().parents[1] / "programs"
SCENARIOS = sorted(path.stem for path in PROGRAMS.glob("*.py"))
RESUME_PREFIX = "torch_dynamo_resume_in_"

Report = dict[str, Any]


# --- oracles independent of pt2doctor ---------------------------------------------------------


def marker_line(name: str, marker: str) -> int:
    """The 1-based line of ``# MARK:<marker>`` in tests/programs/<name>.py (exactly one)."""
    return marker_in(PROGRAMS / f"{name}.py", marker)


def def_line(name: str, function: str) -> int:
    lines = (PROGRAMS / f"{name}.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if line.startswith(f"def {function}("))


def raw_metrics(trace_dir: Path) -> list[dict[str, Any]]:
    """The ``compilation_metrics`` bodies, one per finished Dynamo compile, in log order."""
    return [
        env["compilation_metrics"]
        for env, _ in raw_records(trace_dir)
        if "compilation_metrics" in env
    ]


def raw_compile_ids(trace_dir: Path, co_name: str | None = None) -> list[str]:
    return [
        m["compile_id"]
        for m in raw_metrics(trace_dir)
        if co_name is None or m.get("co_name") == co_name
    ]


def raw_recompile_reasons(trace_dir: Path) -> dict[str, list[str]]:
    """compile id -> Dynamo's own ``recompile_reasons`` artifact (what TORCH_LOGS prints)."""
    reasons = {}
    for envelope, payload in raw_records(trace_dir):
        if envelope.get("artifact", {}).get("name") == "recompile_reasons":
            cid = f"{envelope['frame_id']}/{envelope['frame_compile_id']}"
            try:
                reasons[cid] = json.loads(payload)
            except json.JSONDecodeError:  # torch 2.13 says "json" but writes one reason a line
                reasons[cid] = payload.splitlines()
    return reasons


# --- the CLI under test ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report_of(traced, tmp_path_factory: pytest.TempPathFactory):
    """``report_of(name)``: run ``pt2doctor report`` in-process on the scenario's trace (cached)."""
    out_dir = tmp_path_factory.mktemp("reports")
    reports: dict[str, Report] = {}

    def build(name: str) -> Report:
        if name not in reports:
            out = out_dir / f"{name}.json"
            rc = main(["report", str(traced(name)), "--json", str(out), "--format", "json"])
            assert rc == 0
            reports[name] = json.loads(out.read_text())
        return reports[name]

    return build


def codes(report: Report) -> Counter[str]:
    return Counter(finding["code"] for finding in report["findings"])


def causes(report: Report) -> Counter[str]:
    return Counter(entry["cause"] for entry in report["compiles"])


def only_frame(report: Report, function: str = "step") -> dict[str, Any]:
    frames = [f for f in report["frames"] if f["function"] == function]
    assert len(frames) == 1, report["frames"]
    return frames[0]


def guard_categories(frame: dict[str, Any]) -> set[str]:
    return {g["category"] for entry in frame["recompiles"] for g in entry["failed_guards"]}


def assert_site(source: dict[str, Any] | None, name: str, marker: str, function: str) -> None:
    assert source is not None
    assert source["file"].endswith(f"programs/{name}.py"), source
    assert source["line"] == marker_line(name, marker), source
    assert source["function"] == function, source


# --- every scenario ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_compile_in_the_log_is_explained(name: str, report_of, traced) -> None:
    report = report_of(name)
    raw_ids = raw_compile_ids(traced(name))
    assert sorted(c["compile_id"] for c in report["compiles"]) == sorted(raw_ids)
    assert report["summary"]["compiles"] == len(raw_ids)
    assert report["parse_stats"]["problems"] == 0
    assert report["schema_version"] == 2
    assert set(causes(report)) <= {"first_compile", "recompile", "resume_after_graph_break"}
    for frame in report["frames"]:
        assert frame["file"].endswith(f"programs/{name}.py")


def test_stdout_json_equals_the_written_file(traced, tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.json"
    assert main(["report", str(traced("print_break")), "--json", str(out), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(out.read_text())


# --- graph breaks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "marker", "category"),
    [
        ("item_break", "item", "data_dependent_scalar"),
        ("print_break", "print", "print_or_logging"),
        ("mask_break", "mask", "data_dependent_shape"),
    ],
)
def test_graph_break_then_resume(name: str, marker: str, category: str, report_of, traced) -> None:
    report = report_of(name)
    (row,) = report["graph_breaks"]
    assert_site(row["site"], name, marker, "step")
    assert row["category"] == category
    assert row["compile_ids"] == raw_compile_ids(traced(name), "step")
    assert row["frame_skipped"] is False
    assert causes(report) == {"first_compile": 1, "resume_after_graph_break": 1}
    (resume,) = [c for c in report["compiles"] if c["cause"] == "resume_after_graph_break"]
    assert resume["function"] == f"{RESUME_PREFIX}step_at_{marker_line(name, marker)}"
    assert resume["resumes_after"] == {"function": "step", "line": marker_line(name, marker)}
    assert codes(report) == {"graph_break": 1}
    assert report["failures"] == []


def test_repeated_break_is_one_site_with_every_compile(report_of, traced) -> None:
    name = "repeated_break"
    report = report_of(name)
    step_ids = raw_compile_ids(traced(name), "step")
    assert len(step_ids) == 3  # one variant per dtype of the three callers
    (row,) = report["graph_breaks"]
    assert_site(row["site"], name, "print", "step")
    assert row["category"] == "print_or_logging"
    assert sorted(row["compile_ids"]) == sorted(step_ids)
    assert row["occurrences"] == len(step_ids)
    assert report["summary"]["break_sites"] == 1
    assert report["summary"]["graph_breaks"] == len(step_ids)
    assert codes(report)["graph_break"] == 1
    # step and its resume function each compile once per dtype.
    assert causes(report) == {"first_compile": 1, "resume_after_graph_break": 1, "recompile": 4}
    step = only_frame(report)
    assert step["variants"] == 3
    assert guard_categories(step) == {"dtype"}


# --- recompiles ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "category", "marker"),
    [
        ("size_recompile", "size", "size"),
        ("dtype_recompile", "dtype", "dtype"),
        ("flag_recompile", "python_constant", "flag"),
        ("grad_mode_recompile", "grad_mode", None),  # global state: no user line in the log
    ],
)
def test_single_cause_recompile(
    name: str, category: str, marker: str | None, report_of, traced
) -> None:
    report = report_of(name)
    frame = only_frame(report)
    assert frame["line"] == def_line(name, "step")
    assert frame["compiles"] == 2
    assert frame["variants"] == 2
    assert frame["limit_hit"] is False
    assert frame["skipped"] is False
    (recompile,) = frame["recompiles"]
    assert recompile["compile_id"] in raw_recompile_reasons(traced(name))
    assert guard_categories(frame) == {category}
    for guard in recompile["failed_guards"]:
        assert guard["against"] == [frame["compile_ids"][0]]
        if marker is not None:
            assert_site(guard["source"], name, marker, "step")
    assert causes(report) == {"first_compile": 1, "recompile": 1}
    assert report["graph_breaks"] == []
    assert codes(report) == {"recompiles": 1}


def test_size_recompile_goes_dynamic_once(report_of) -> None:
    """Sizes 4, 5, 6: static variant, then one dynamic variant that also serves size 6."""
    report = report_of("size_recompile")
    first, second = report["compiles"]
    assert first["dynamic_symbols"] == []
    assert [s["source"] for s in second["dynamic_symbols"]] == ["L['x'].size()[0]"]
    assert second["dynamic_symbols"][0]["value"] == "5"


def test_grad_mode_recompile_lists_the_failure_once(report_of) -> None:
    (recompile,) = only_frame(report_of("grad_mode_recompile"))["recompiles"]
    assert len(recompile["failed_guards"]) == 1


def _multi_guard(report_of) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    report = report_of("multi_guard")
    frame = only_frame(report)
    (recompile,) = frame["recompiles"]
    return report, recompile["failed_guards"]


def test_multi_guard_dynamo_names_only_the_first_failure(traced) -> None:
    """The premise: Dynamo's recompile reason for the triple change names one guard only."""
    ((reason,),) = raw_recompile_reasons(traced("multi_guard")).values()
    assert len(re.findall(r"mismatch|==", reason.split("#")[0])) == 1, reason


def test_multi_guard_lists_size_and_dtype(report_of) -> None:
    _, guards = _multi_guard(report_of)
    by_category = {g["category"]: g for g in guards}
    assert {"size", "dtype"} <= set(by_category)
    for category in ("size", "dtype"):
        assert_site(by_category[category]["source"], "multi_guard", "tensor", "step")


def test_multi_guard_lists_the_python_constant(report_of) -> None:
    _, guards = _multi_guard(report_of)
    assert {g["category"] for g in guards} == {"size", "dtype", "python_constant"}
    (flag,) = [g for g in guards if g["category"] == "python_constant"]
    assert_site(flag["source"], "multi_guard", "flag", "step")


# --- limits, skips, failures -----------------------------------------------------------------


def test_recompile_limit_hit(report_of, traced) -> None:
    name = "limit_hit"
    limit = int(re.search(r"recompile_limit = (\d+)", (PROGRAMS / f"{name}.py").read_text())[1])
    report = report_of(name)
    frame = only_frame(report)
    assert frame["limit_hit"] is True
    assert frame["variants"] == limit
    # One compile per variant, plus the attempt that found the limit reached.
    assert len(raw_compile_ids(traced(name))) == limit + 1
    assert frame["compiles"] == limit + 1
    assert guard_categories(frame) == {"python_constant"}
    for entry in [*frame["recompiles"], frame["refused"]]:
        for guard in entry["failed_guards"]:
            assert_site(guard["source"], name, "mode", "step")
    # The refused attempt is its own field: not a recompile, not a failure.
    assert len(frame["recompiles"]) == limit - 1
    assert frame["refused"]["compile_id"] == frame["compile_ids"][-1]
    assert report["failures"] == []
    assert codes(report)["recompile_limit_hit"] == 1
    assert report["summary"]["limit_hits"] == 1


def test_break_in_loop_skips_the_frame(report_of, traced) -> None:
    name = "loop_skip"
    report = report_of(name)
    assert not [env for env, _ in raw_records(traced(name)) if "dynamo_output_graph" in env]
    frame = only_frame(report)
    assert frame["skipped"] is True
    assert frame["variants"] == 0
    (row,) = report["graph_breaks"]
    assert_site(row["site"], name, "loop", "step")
    assert row["category"] == "explicit_disable"
    assert row["frame_skipped"] is True
    (failure,) = report["failures"]
    assert failure["kind"] == "skipped_frame"
    assert failure["user_frame"]["line"] == marker_line(name, "loop")
    assert {"frame_skipped", "graph_break"} <= set(codes(report))
    assert causes(report) == {"first_compile": 1}
    assert report["summary"]["skipped_frames"] == 1


def test_backend_failure(traced, report_of) -> None:
    name = "backend_failure"
    printed = (traced(name).parent / f"{name}.stdout").read_text().split()
    report = report_of(name)
    (failure,) = report["failures"]
    assert failure["kind"] == "compile_error"
    assert "BackendCompilerFailed" in failure["fail_type"]
    assert failure["fail_type"] in printed  # the exception the program caught
    assert failure["function"] == "step"
    assert failure["compile_id"] in raw_compile_ids(traced(name), "step")
    assert "relu_compile_error_TESTING_ONLY" in failure["fail_reason"]
    assert codes(report)["compile_failure"] == 1
    (compiled,) = report["compiles"]
    assert compiled["failed"] is True
    assert compiled["cause"] == "first_compile"


def test_backend_failure_is_not_an_eager_fallback(report_of, traced) -> None:
    report = report_of("backend_failure")
    assert not any(m.get("config_suppress_errors") for m in raw_metrics(traced("backend_failure")))
    assert only_frame(report)["skipped"] is False
    assert "frame_skipped" not in codes(report)
