"""``pt2doctor run`` end to end: the programs in tests/programs/run, run in real subprocesses.

Each program keeps its own counters and prints them as one ``COUNTS {json}`` line; expected heat
and call counts come from there, compile ids from a minimal scan of the raw TORCH_TRACE log in
the run directory (:func:`raw_records`), line numbers from ``# MARK:`` comments: never from a
stored copy of pt2doctor's output. Dynamo-level runs use ``--backend eager`` (~4 s each); two
use Inductor (~15 s for the session's first, cold compile). Runs are shared through the conftest
fixture ``doctor_run`` (once per session and key, across xdist workers).
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in, raw_records
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

PROGRAMS = Path(__file__).resolve().parents[1] / "programs" / "run"
EAGER = ("--backend", "eager")
# Seconds a program may take to import torch and compile before it prints READY (~4 s alone on
# 2 CPU cores, more while the other xdist worker compiles with Inductor).
READY_WITHIN_S = 120
# --timeout for the hanging program: long enough for torch import and the compile under load.
TIMEOUT_S = 14

Report = dict[str, Any]


# --- oracles independent of pt2doctor -------------------------------------------------------


def marker_line(program: str, marker: str) -> int:
    """The 1-based line of ``# MARK:<marker>`` in tests/programs/run/<program>.py (exactly one)."""
    return marker_in(PROGRAMS / f"{program}.py", marker)


def raw_compile_ids(run_dir: Path) -> list[str]:
    """Compile ids of the finished Dynamo compiles (``compilation_metrics``), in log order."""
    return [
        env["compilation_metrics"]["compile_id"]
        for env, _ in raw_records(run_dir / "trace")
        if "compilation_metrics" in env
    ]


def raw_artifacts(run_dir: Path, name: str) -> list[str]:
    """Payloads of the trace records of kind ``name`` or of artifacts called ``name``."""
    return [
        payload
        for env, payload in raw_records(run_dir / "trace")
        if name in env or env.get("artifact", {}).get("name") == name
    ]


# --- helpers ---------------------------------------------------------------------------------


def codes(report: Report) -> Counter[str]:
    return Counter(finding["code"] for finding in report["findings"])


def calls_by_function(report: Report) -> dict[str, int | None]:
    """Calls into compiled graphs, summed over each frame's compiles (None if unmeasured)."""
    totals: dict[str, int | None] = {}
    for entry in report["compiles"]:
        calls, before = entry["calls"], totals.get(entry["function"], 0)
        totals[entry["function"]] = None if calls is None or before is None else before + calls
    return totals


def site_of(report: Report, program: str, marker: str) -> dict[str, Any]:
    line = marker_line(program, marker)
    (row,) = [r for r in report["graph_breaks"] if r["site"]["line"] == line]
    assert row["site"]["file"].endswith(f"programs/run/{program}.py"), row["site"]
    return row


def resume_name(function: str, program: str, marker: str) -> str:
    return f"torch_dynamo_resume_in_{function}_at_{marker_line(program, marker)}"


def hot_break(doctor_run):
    return doctor_run("hot_break", EAGER, "run_hot_break", "6", "3")


def warmup_run(doctor_run):
    """run_warmup.py under ``--warmup-calls 4`` and a ``--steady-after`` that never comes: the
    flags only reach the manifest (the program never sees them), so the other boundaries are
    re-analysed offline from copies of this one run."""
    flags = ("--warmup-calls", "4", "--steady-after", "86400")
    return doctor_run("warmup_calls", (*EAGER, *flags), "run_warmup", "4", "3")


def reanalysed(run_dir: Path, tmp_path: Path, **manifest_values: Any) -> Report:
    """The report of a copy of ``run_dir`` whose manifest has ``manifest_values``."""
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, **manifest_values}))
    out = tmp_path / "out.json"
    assert main(["report", str(copy), "--json", str(out), "--format", "json"]) == 0
    report: Report = json.loads(out.read_text())
    return report


# --- a clean run: output, heat, calls, offline re-render -------------------------------------


def test_program_output_streams_to_stdout_and_the_run_dir(doctor_run) -> None:
    run = hot_break(doctor_run)
    assert run.returncode == 0, run.stderr[-4000:]
    # pt2doctor's own summary goes to stderr: its stdout is exactly the program's.
    assert run.stdout == (run.run_dir / "stdout.log").read_text()
    assert "setup done\n" in run.stdout
    assert {k: v for k, v in run.counts.items() if k != "compiled_call_s"} == {
        "steps": 6,
        "layer_calls": 18,
        "setup_calls": 1,
    }
    stderr_log = (run.run_dir / "stderr.log").read_text()
    assert "Graph break" in stderr_log  # Dynamo's own warning, from the program's stderr
    assert run.stderr.startswith(stderr_log)
    # (rich wraps the terminal summary: compare without whitespace)
    summary = "".join(run.stderr.split())
    assert f"reportwrittento{run.run_dir / 'report.json'}" in summary
    # The probes time the compiled forward graphs (a backward runs from autograd, untimed).
    seconds = run.report["run"]["in_compiled_s"]
    assert f"{seconds:.2f}sinsidecompiledgraphs(backwardnotcounted)" in summary


def test_clean_exit_is_recorded(doctor_run) -> None:
    report = hot_break(doctor_run).report
    section = report["run"]
    assert section["exit_code"] == 0
    assert section["signal"] is None
    assert section["stopped_by"] is None
    assert section["returned"] == 0
    assert section["exceptions"] == []
    assert section["command"][-3:] == [str(PROGRAMS / "run_hot_break.py"), "6", "3"]
    assert (section["warmup_calls"], section["steady_after_s"]) == (None, None)  # no flags
    assert "program_failed" not in codes(report)
    # Nothing crashed: faulthandler's empty logs were removed at exit.
    assert list(hot_break(doctor_run).run_dir.glob("faulthandler.*.log")) == []


def test_break_heat_equals_the_programs_counts(doctor_run) -> None:
    run = hot_break(doctor_run)
    report, counts = run.report, run.counts
    hot, startup = report["graph_breaks"]  # ranked hottest first
    assert hot == site_of(report, "run_hot_break", "hot")
    assert startup == site_of(report, "run_hot_break", "startup")
    assert hot["category"] == "data_dependent_scalar"
    assert hot["hits"] == counts["layer_calls"]
    assert hot["hot"] is True
    assert startup["category"] == "print_or_logging"
    assert startup["hits"] == counts["setup_calls"] == 1
    assert startup["hot"] is False


def test_compile_calls_equal_the_programs_calls(doctor_run) -> None:
    run = hot_break(doctor_run)
    report, counts = run.report, run.counts
    assert sorted(c["compile_id"] for c in report["compiles"]) == sorted(
        raw_compile_ids(run.run_dir)
    )
    assert [c["cause"] for c in report["compiles"]].count("recompile") == 0
    assert calls_by_function(report) == {
        "setup": counts["setup_calls"],
        resume_name("setup", "run_hot_break", "startup"): counts["setup_calls"],
        "forward": counts["layer_calls"],
        resume_name("forward", "run_hot_break", "hot"): counts["layer_calls"],
    }
    # Time inside the graphs is part of the time the program measured around its compiled
    # calls (which also holds compiling, guards and the eager code between graphs).
    in_graphs = [c["seconds_in_graph"] for c in report["compiles"]]
    assert all(seconds > 0 for seconds in in_graphs)
    assert report["run"]["in_compiled_s"] == pytest.approx(sum(in_graphs), abs=1e-5)
    assert report["run"]["in_compiled_s"] < counts["compiled_call_s"]


def test_report_rerenders_the_run_dir_offline(doctor_run, tmp_path: Path) -> None:
    run = hot_break(doctor_run)
    before = {p: p.stat().st_mtime_ns for p in run.run_dir.rglob("*") if p.is_file()}
    out = tmp_path / "out.json"
    assert main(["report", str(run.run_dir), "--json", str(out), "--format", "json"]) == 0
    assert json.loads(out.read_text()) == run.report
    after = {p: p.stat().st_mtime_ns for p in run.run_dir.rglob("*") if p.is_file()}
    assert after == before  # nothing ran, nothing in the run dir was rewritten


# --- warmup ----------------------------------------------------------------------------------


def _step_compiles(report: Report) -> list[dict[str, Any]]:
    compiles = [c for c in report["compiles"] if c["function"] == "step"]
    assert [c["cause"] for c in compiles] == ["first_compile", "recompile", "recompile"]
    return compiles


def _size_guards(report: Report, compile_id: str) -> list[dict[str, Any]]:
    (frame,) = [f for f in report["frames"] if f["function"] == "step"]
    (recompile,) = [r for r in frame["recompiles"] if r["compile_id"] == compile_id]
    return [g for g in recompile["failed_guards"] if g["category"] == "size"]


def test_recompile_after_warmup_calls_is_flagged(doctor_run) -> None:
    run = warmup_run(doctor_run)
    assert run.returncode == 0, run.stderr[-4000:]
    report, counts = run.report, run.counts
    assert counts["warmup_calls"] == 4
    compiles = _step_compiles(report)
    assert [c["compile_id"] for c in compiles] == raw_compile_ids(run.run_dir)
    # 0/1 is the flag recompile at the 2nd call (inside warmup), 0/2 the new shape after it.
    assert [c["frame_calls"] for c in compiles] == [0, 1, counts["warmup_calls"]]
    assert [c["after_warmup"] for c in compiles] == [False, False, True]
    assert sum(c["calls"] for c in compiles) == counts["calls"]
    late = compiles[2]["compile_id"]
    (guard,) = _size_guards(report, late)
    assert guard["source"]["line"] == marker_line("run_warmup", "size")
    (finding,) = [
        f for f in report["findings"] if f["code"] == "unexplained_recompile_after_warmup"
    ]
    assert finding["severity"] == "error"
    assert _evidence_names_the_size_change(finding["evidence"], late, guard["text"])
    # The frame's recompiles finding names the late compile, and is not a second error for it.
    (recompiles,) = [f for f in report["findings"] if f["code"] == "recompiles"]
    assert f"compile {late} came after warmup" in recompiles["title"]
    assert recompiles["severity"] != "error"
    assert (report["run"]["warmup_calls"], report["run"]["steady_after_s"]) == (4, 86400)


@pytest.mark.parametrize(
    ("warmup_calls", "flagged"),
    [
        (5, [False, False, False]),  # the new shape came at the 5th call: still warmup
        (2, [False, False, True]),
        (1, [False, True, True]),
        (None, [False, False, False]),
    ],
)
def test_warmup_boundary_is_reanalysed_offline(
    doctor_run, tmp_path: Path, warmup_calls: int | None, flagged: list[bool]
) -> None:
    """Warmup ends after a frame's N-th call: a compile at call N+1 is after it. Re-analysed
    from a copy of the run directory with another ``warmup_calls`` in its manifest (None: no
    warmup flag, no compile after warmup and no finding)."""
    report = reanalysed(warmup_run(doctor_run).run_dir, tmp_path, warmup_calls=warmup_calls)
    after = [c["after_warmup"] for c in _step_compiles(report)]
    assert after == flagged
    assert codes(report)["unexplained_recompile_after_warmup"] == sum(after)


def _evidence_names_the_size_change(evidence: list[str], compile_id: str, guard: str) -> bool:
    """The finding's evidence says, in the user's names, the size change that the raw guard
    text of ``compile_id`` states (``... size mismatch at index 0. expected 8, actual 16``)."""
    expected, actual = re.search(r"expected (\d+), actual (\d+)", guard).groups()  # type: ignore[union-attr]
    return any(
        line.startswith(f"{compile_id} vs ") and f"x.shape[0] size {expected} → {actual}" in line
        for line in evidence
    )


def raw_compile_starts(run_dir: Path) -> dict[str, float]:
    """Unix start time of each finished compile, as Dynamo logged it in compilation_metrics."""
    return {
        env["compilation_metrics"]["compile_id"]: env["compilation_metrics"]["start_time"]
        for env, _ in raw_records(run_dir / "trace")
        if "compilation_metrics" in env
    }


def test_steady_after_seconds_splits_the_compiles_at_that_time(doctor_run, tmp_path: Path) -> None:
    """``steady_after_s`` is placed offline exactly at the start of the last compile (read from
    the raw trace): that compile, and only it, is after warmup. No sleep, no race with load."""
    run = warmup_run(doctor_run)
    starts = raw_compile_starts(run.run_dir)
    last = _step_compiles(run.report)[2]["compile_id"]
    steady_after = starts[last] - run.report["run"]["start_time"]
    report = reanalysed(run.run_dir, tmp_path, warmup_calls=None, steady_after_s=steady_after)
    compiles = _step_compiles(report)
    assert [c["after_warmup"] for c in compiles] == [False, False, True]
    # t_s is rounded to the microsecond in the report; steady_after is that compile's start.
    assert compiles[2]["t_s"] == pytest.approx(steady_after, abs=1e-6)
    assert steady_after > compiles[1]["t_s"]
    (finding,) = [
        f for f in report["findings"] if f["code"] == "unexplained_recompile_after_warmup"
    ]
    (guard,) = _size_guards(report, last)
    assert _evidence_names_the_size_change(finding["evidence"], last, guard["text"])
    assert report["run"]["steady_after_s"] == steady_after


def test_steady_after_zero_puts_every_compile_after_warmup(doctor_run, tmp_path: Path) -> None:
    """``steady_after_s`` 0: every compile comes after it, whatever the machine's speed (the
    flag's way into the manifest is test_recompile_after_warmup_calls_is_flagged's)."""
    run = warmup_run(doctor_run)
    report = reanalysed(run.run_dir, tmp_path, warmup_calls=None, steady_after_s=0)
    assert [c["after_warmup"] for c in _step_compiles(report)] == [True, True, True]
    assert report["run"]["steady_after_s"] == 0
    assert codes(report)["unexplained_recompile_after_warmup"] == 3


# --- results, backends, Inductor options -----------------------------------------------------


def _checksum(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("CHECKSUM ")]
    return line.removeprefix("CHECKSUM ")


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_probes_do_not_change_results(
    doctor_run, run_env: dict[str, str], tmp_path: Path, backend: str
) -> None:
    # Under pt2doctor first: the plain Inductor run then reuses the compiled code from the
    # cache, and the cold compile (whose trace the options test reads) happens under pt2doctor.
    run = doctor_run(f"checksum_{backend}", (), "run_checksum", backend)
    assert run.returncode == 0, run.stderr[-4000:]
    plain = subprocess.run(
        [sys.executable, str(PROGRAMS / "run_checksum.py"), backend],
        cwd=tmp_path,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert _checksum(run.stdout) == _checksum(plain.stdout)
    assert calls_by_function(run.report) == {
        "forward": run.counts["calls"],
        resume_name("forward", "run_checksum", "break"): run.counts["calls"],
    }
    assert run.report["run"]["triage"] is False


def test_inductor_options_still_apply(doctor_run) -> None:
    run = doctor_run("checksum_inductor", (), "run_checksum", "inductor")
    assert run.returncode == 0, run.stderr[-4000:]
    assert raw_artifacts(run.run_dir, "inductor_output_code")
    # The repro script Inductor writes per graph lists the config it compiled with.
    runnables = raw_artifacts(run.run_dir, "fx_graph_runnable")
    assert len(runnables) == 2  # forward and its resume function
    for script in runnables:
        assert "torch._inductor.config.epilogue_fusion = False" in script.splitlines()
        assert "torch._inductor.config.trace.enabled = False" in script.splitlines()
    section = run.report["run"]
    assert section["backend_override"] is None
    assert section["not_covered"] == []
    # Inductor's compile workers each opened a faulthandler log; none crashed, none is kept.
    assert list(run.run_dir.glob("faulthandler.*.log")) == []
    assert "triage_run" not in codes(run.report)


def test_backend_eager_overrides_the_programs_backend(doctor_run) -> None:
    run = doctor_run("checksum_override", EAGER, "run_checksum", "inductor")
    assert run.returncode == 0, run.stderr[-4000:]
    assert raw_artifacts(run.run_dir, "dynamo_output_graph")
    assert not raw_artifacts(run.run_dir, "inductor_output_code")
    assert not raw_artifacts(run.run_dir, "fx_graph_runnable")
    section = run.report["run"]
    assert section["triage"] is True
    assert section["backend_override"] == "eager"
    assert section["not_covered"]
    assert section["probes"]["backend_override"]["ok"] is True
    assert codes(run.report)["triage_run"] == 1
    assert calls_by_function(run.report)["forward"] == run.counts["calls"]


def test_a_compiled_module_never_called_is_a_warning_that_names_the_call(doctor_run) -> None:
    """torch.compile(model) then model.generate(): nothing compiles, and the report says which
    torch.compile call was in vain, and where, instead of only 0 compiles."""
    run = doctor_run("never_called", EAGER, "run_never_called")
    assert run.returncode == 0, run.stderr[-4000:]
    assert not raw_artifacts(run.run_dir, "dynamo_output_graph")  # really nothing compiled
    (finding,) = [f for f in run.report["findings"] if f["code"] == "compiled_but_never_called"]
    line = marker_line("run_never_called", "compile")
    assert finding["severity"] == "warning"
    assert finding["title"].startswith(f"torch.compile(Decoder) at run_never_called.py:{line}")
    assert "model.compile()" in finding["advice"] and "generate" in finding["advice"]
    # A program that calls what it compiled has no such finding.
    assert "compiled_but_never_called" not in codes(hot_break(doctor_run).report)


# --- programs that end badly -----------------------------------------------------------------

# key: (pt2doctor flags, program args, exit code of `run`, run.exit_code, run.signal, stopped_by)
ENDINGS = {
    "raise": ((), ("raise",), 1, 1, None, None),
    "segfault": ((), ("segfault", "3", "flushed"), 128 + signal.SIGSEGV, None, "SIGSEGV", None),
    "exit3": ((), ("exit3",), 3, 3, None, None),
    "timeout": (
        ("--timeout", str(TIMEOUT_S)),
        ("hang", "3", "flushed"),
        124,
        None,
        "SIGTERM",
        "timeout",
    ),
}
# Endings after which the probes' counters cover every call: saved at exit, or the program
# waited until a periodic snapshot had saved them ("flushed") before it crashed or hung.
HEAT_KEPT = {"raise", "segfault", "timeout"}


def ended(doctor_run, how: str):
    flags, args = ENDINGS[how][:2]
    return doctor_run(f"crash_{how}", (*EAGER, *flags), "run_crash", *args)


def _assert_captured_before_the_end(run, report: Report) -> None:
    """The compiles the program made before it failed are in the report, with their break."""
    ids = raw_compile_ids(run.run_dir)
    assert len(ids) == 2
    assert sorted(c["compile_id"] for c in report["compiles"]) == sorted(ids)
    assert {c["function"] for c in report["compiles"]} == {
        "step",
        resume_name("step", "run_crash", "print"),
    }
    assert site_of(report, "run_crash", "print")["category"] == "print_or_logging"
    assert "READY" in (run.run_dir / "stdout.log").read_text().split()


@pytest.mark.parametrize("how", sorted(ENDINGS))
def test_a_program_that_ends_badly_leaves_a_report(doctor_run, how: str) -> None:
    _, _, returned, exit_code, signal_name, stopped_by = ENDINGS[how]
    run = ended(doctor_run, how)
    assert run.returncode == returned, run.stderr[-4000:]
    report = run.report
    section = report["run"]
    assert section["exit_code"] == exit_code
    assert section["signal"] == signal_name
    assert section["stopped_by"] == stopped_by
    assert section["returned"] == returned
    assert section["end_time"] is not None
    assert codes(report)["program_failed"] == 1
    _assert_captured_before_the_end(run, report)
    if how in HEAT_KEPT:
        calls = run.counts["calls"]
        assert site_of(report, "run_crash", "print")["hits"] == calls
        assert set(calls_by_function(report).values()) == {calls}


def test_an_exception_is_named(doctor_run) -> None:
    run = ended(doctor_run, "raise")
    message = f"loss is NaN at step {run.counts['calls']}"
    (exception,) = run.report["run"]["exceptions"]
    assert (exception["type"], exception["message"]) == ("RuntimeError", message)
    assert f"RuntimeError: {message}" in (run.run_dir / "stderr.log").read_text()
    (failed,) = [f for f in run.report["findings"] if f["code"] == "program_failed"]
    assert f"RuntimeError: {message}" in failed["evidence"]


def test_a_raising_user_pass_is_named_with_its_frame(doctor_run) -> None:
    """Inductor (~20 s): the failure shows the innermost frame of the user's code, the pass in
    user_passes.py, not only the exception's first line; the environment names the hook."""
    run = doctor_run("user_pass", (), "run_user_pass")
    assert run.returncode == 1, run.stderr[-3000:]
    source = (PROGRAMS / "user_passes.py").read_text().splitlines()
    line = next(n for n, text in enumerate(source, 1) if "# MARK: raise" in text)
    (failed,) = [f for f in run.report["findings"] if f["code"] == "program_failed"]
    assert f"raised in channels_last_prep_pass (user_passes.py:{line})" in failed["evidence"]
    assert any(e.startswith("raised while compiling ") for e in failed["evidence"])
    assert failed["advice"].startswith("See the exception and the compile id above;")
    (compile_failure,) = [f for f in run.report["findings"] if f["code"] == "compile_failure"]
    assert (
        f"raised in channels_last_prep_pass (user_passes.py:{line})" in compile_failure["evidence"]
    )
    (failure,) = run.report["failures"]
    assert failure["raised_in"]["line"] == line
    hooks = run.report["environment"]["compiler_hooks"]
    assert [(h["hook"], h["function"]) for h in hooks] == [
        ("post_grad_custom_post_pass", "channels_last_prep_pass")
    ]


def test_a_segfault_has_its_stack(doctor_run) -> None:
    run = ended(doctor_run, "segfault")
    (log,) = run.run_dir.glob("faulthandler.*.log")  # the crashed process's, and only it
    assert log.read_text().startswith("Fatal Python error: Segmentation fault")
    fatal = run.report["run"]["fatal_error"]
    assert fatal[0] == "Fatal Python error: Segmentation fault"
    assert any("run_crash.py" in line and " in main" in line for line in fatal)


def test_heat_lost_in_a_crash_is_unknown_not_zero(doctor_run) -> None:
    """os._exit right after the calls: no snapshot at exit. The break's heat is then unknown
    (None) or the lower bound a periodic snapshot caught; never a stale 0 or "not hot"."""
    run = ended(doctor_run, "exit3")
    row = site_of(run.report, "run_crash", "print")
    assert run.report["run"]["heat_complete"] is False  # no snapshot at exit: lower bounds
    # Unknown, or a lower bound a 0.5 s snapshot caught: never more than ran, never a stale 0.
    assert row["hits"] is None or 1 <= row["hits"] <= run.counts["calls"]
    assert row["hot"] in (None, True)


def _lines_of(stream: Any) -> queue.Queue[str | None]:
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        for line in stream:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return lines


def test_ctrl_c_stops_the_program_and_keeps_the_report(
    tmp_path: Path, run_env: dict[str, str], doctor_command
) -> None:
    run_dir = tmp_path / "run"
    command = doctor_command(run_dir, EAGER, "run_crash", "hang")
    with (tmp_path / "stderr").open("w") as stderr:
        process = subprocess.Popen(
            command, cwd=tmp_path, env=run_env, stdout=subprocess.PIPE, stderr=stderr, text=True,
            # As from a terminal: a test run started in the background inherits SIGINT ignored.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
        lines, seen = _lines_of(process.stdout), []
        try:
            while (line := lines.get(timeout=READY_WITHIN_S)) not in (None, "READY\n"):
                seen.append(line)
            assert line == "READY\n", f"no READY line: {seen}"  # streamed while it runs
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=60) == 130
        finally:
            if process.poll() is None:
                process.kill()
    section = json.loads((run_dir / "report.json").read_text())["run"]
    assert (section["stopped_by"], section["signal"], section["exit_code"]) == (
        "interrupted",
        "SIGINT",
        None,
    )
    assert section["returned"] == 130
    assert [e["type"] for e in section["exceptions"]] == ["KeyboardInterrupt"]
    report = json.loads((run_dir / "report.json").read_text())
    assert len(report["compiles"]) == 2
    assert sorted(c["compile_id"] for c in report["compiles"]) == sorted(raw_compile_ids(run_dir))


def test_a_second_run_into_the_same_dir_is_refused_and_changes_nothing(
    doctor_run, capsys: pytest.CaptureFixture[str]
) -> None:
    run = hot_break(doctor_run)
    before = {p: p.read_bytes() for p in run.run_dir.rglob("*") if p.is_file()}
    argv = ["run", "--out", str(run.run_dir), *EAGER, "--", sys.executable, "-c", "pass"]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert (
        line
        == f"pt2doctor: error: run directory {run.run_dir} already exists: choose another --out"
    )
    assert {p: p.read_bytes() for p in run.run_dir.rglob("*") if p.is_file()} == before


# --- bad command lines -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run"], "Missing argument"),
        (["run", "--backend", "eager", "--"], "Missing argument"),
        (["run", "--", "/no/such/program", "x.py"], "no such file: /no/such/program"),
    ],
)
def test_bad_command_is_one_line_exit_2(
    tmp_path: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    assert main([*args[:1], "--out", str(out), *args[1:]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("pt2doctor: error:") and says in line, line
    assert not out.exists()  # nothing ran, nothing kept


def test_module_run_counts_a_break_after_an_empty_graph(tmp_path: Path, run_env) -> None:
    """``-- python -m pkg.mod`` works, and a break with nothing compiled before it still counts
    (its heat comes from the resume function, not from a graph before the break)."""
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pt2doctor",
            "run",
            "--out",
            str(run_dir),
            "--",
            sys.executable,
            "-m",
            "run_empty_break",
        ],
        cwd=PROGRAMS,
        env=run_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(
        next(line for line in done.stdout.splitlines() if line.startswith("COUNTS ")).removeprefix(
            "COUNTS "
        )
    )
    report = json.loads((run_dir / "report.json").read_text())
    (site,) = report["graph_breaks"]
    assert site["site"]["line"] == marker_line("run_empty_break", "print")
    assert site["hits"] == counts["calls"]
    (first,) = [c for c in report["compiles"] if c["compile_id"] == "0/0"]
    assert first["graph_count"] == 0  # nothing compiled before the break


def test_a_host_random_draw_under_fullgraph_gets_the_draw_outside_not_a_branch_fix(
    doctor_run,
) -> None:
    """Under fullgraph=True the NumPy draw's float() fails the compile at its line. There is no
    branch there: the advice is the host-random one (draw outside, pass a tensor), never the
    data-dependent branch's or the compiler-error ladder's. The fix applied (``--fixed``)
    compiles and prints the eager program's checksum."""
    run = doctor_run("fullgraph_noise", EAGER, "run_fullgraph_noise")
    assert run.returncode == 1
    (failure,) = [f for f in run.report["findings"] if f["code"] == "compile_failure"]
    line = marker_line("run_fullgraph_noise", "draw")
    assert f"run_fullgraph_noise.py:{line}" in failure["advice"]
    assert "draw them outside the compiled call and pass them in as a tensor" in failure["advice"]
    assert "Python branch on a size" not in failure["advice"]
    assert "backend='eager', then 'aot_eager'" not in failure["advice"]
    fixed = doctor_run("fullgraph_noise_fixed", EAGER, "run_fullgraph_noise", "--fixed")
    assert fixed.returncode == 0 and fixed.report["summary"]["failures"] == 0
    eager = subprocess.run(
        [sys.executable, str(PROGRAMS / "run_fullgraph_noise.py"), "--fixed"],
        capture_output=True, text=True, check=True, timeout=120,
        env={**os.environ, "TORCHDYNAMO_DISABLE": "1"},
    )  # fmt: skip
    assert _checksum((fixed.run_dir / "stdout.log").read_text()) == _checksum(eager.stdout)


def test_an_input_of_the_wrong_shape_is_the_programs_error_not_the_compilers(doctor_run) -> None:
    """nn.Linear(8, 4) called with 9 features: the recompile fails on fake tensors. The
    failure is named by the user's compiled module (not torch's ``inner`` wrapper), its
    advice says the same call fails in eager (it does: the program run with Dynamo off
    raises too), and the recompile it came from serves nothing, said without a fix."""
    run = doctor_run("wrong_shape", EAGER, "run_wrong_shape")
    assert run.returncode == 1
    findings = {f["code"]: f for f in run.report["findings"]}
    failure = findings["compile_failure"]
    line = marker_line("run_wrong_shape", "compile")
    assert (
        f"of Linear.forward (compiled at {PROGRAMS / 'run_wrong_shape.py'}:{line})"
        in (failure["title"])
    )
    assert "The same call raises in eager" in failure["advice"]
    assert "backend='eager', then 'aot_eager'" not in failure["advice"]
    eager = subprocess.run(
        [sys.executable, str(PROGRAMS / "run_wrong_shape.py")], capture_output=True, text=True,
        timeout=120, env={**os.environ, "TORCHDYNAMO_DISABLE": "1"}, check=False,
    )  # fmt: skip
    assert eager.returncode == 1 and "RuntimeError" in eager.stderr
    recompiles = findings["recompiles"]
    assert recompiles["severity"] == "info" and "failed" in recompiles["title"]
    assert "Nothing to fix" not in recompiles["advice"] and not recompiles.get("tryable")


def test_a_loop_count_passed_as_an_argument_is_a_loop_count_not_a_global(doctor_run) -> None:
    """``for _ in range(n_refine)`` with ``n_refine`` an argument: one graph per count to the
    limit (second outside review: "an int the compiled code reads from a global ... pass it
    in as an argument", which it already was). The advice names the loop and compiling what
    it runs; applied (``--fixed``), one graph serves every count, with the same numbers."""
    run = doctor_run("loop_count_arg", EAGER, "run_loop_count_arg")
    assert run.returncode == 0, run.stderr[-3000:]
    advice = " ".join(f["advice"] for f in run.report["findings"] if f["code"] == "recompiles")
    line = marker_line("run_loop_count_arg", "loop")
    assert f"n_refine is the count of the loop at {PROGRAMS / 'run_loop_count_arg.py'}:{line}" in (
        advice
    )
    assert "reads from a global" not in advice and "Pass it in as an argument" not in advice
    fixed = doctor_run("loop_count_arg_fixed", EAGER, "run_loop_count_arg", "--fixed")
    assert fixed.report["summary"]["compiles"] == 1 < run.report["summary"]["compiles"]
    assert _checksum((fixed.run_dir / "stdout.log").read_text()) == _checksum(
        (run.run_dir / "stdout.log").read_text()
    )
