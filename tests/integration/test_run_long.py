"""A long ``pt2doctor run`` simulated without waiting: the run directory stays bounded however
many snapshot ticks pass, and ``report`` still gets exact heat from it.

The probes of a real run (tests/programs/run/run_hot_break.py, shared with test_run.py through
``doctor_run``) give the real compile ids and resume functions. A ProbeRecorder with a fake clock
then replays a long service on a copy of that run directory: TICKS periodic snapshots (at 0.5 s
each, TICKS / 2 seconds of service), every real graph and break called on each tick, plus
EXTRA_GRAPHS graphs a long-lived service would have compiled. The test counts every call itself.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pt2doctor.capture.probes import ProbeRecorder
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

TICKS = 1000
EXTRA_GRAPHS = 300
# Each read of the fake clock advances it by this much: a graph call lasts exactly one step.
CLOCK_STEP_S = 0.001


class SteppingClock:
    """A clock that advances CLOCK_STEP_S per read (the recorder reads it around each call)."""

    def __init__(self) -> None:
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.reads * CLOCK_STEP_S


def _resume_code(key: str):
    """A code object named like the resume function in ``key`` (``file:name``)."""
    filename, name = key.rsplit(":", 1)
    return (lambda *args: None).__code__.replace(co_filename=filename, co_name=name)


def _bytes(paths: list[Path]) -> int:
    return sum(path.stat().st_size for path in paths)


def test_a_long_run_keeps_the_run_dir_bounded_and_the_heat_exact(
    doctor_run, tmp_path: Path
) -> None:
    run = doctor_run("hot_break", ("--backend", "eager"), "run_hot_break", "6", "3")
    assert run.returncode == 0, run.stderr[-4000:]
    copy = tmp_path / "run"
    shutil.copytree(run.run_dir, copy)
    (program_counters,) = (copy / "counters").iterdir()
    real = json.loads(program_counters.read_text())
    shutil.rmtree(copy / "counters")  # replayed below, by the test's own recorder

    recorder = ProbeRecorder(copy, clock=SteppingClock())
    ids = [*real["graph_calls"], *(f"{900 + i}/0" for i in range(EXTRA_GRAPHS))]
    graphs = [recorder.count_graph(cid, lambda: None) for cid in ids]
    resumes = [recorder.count_resume(_resume_code(key), lambda: None) for key in real["break_hits"]]
    probes_file = copy / "probes.jsonl"
    sizes = []
    for tick in range(TICKS):
        for call in (*graphs, *resumes):
            call()
        recorder.snapshot()
        if tick in (9, TICKS - 1):
            sizes.append((_bytes([probes_file]), _bytes(list((copy / "counters").iterdir()))))
    recorder.close()

    # Bounded: probes.jsonl holds events only (no growth per tick), one counters file per
    # process, whose size follows the number of graphs (its numbers gain a few digits).
    (early, late) = sizes
    assert late[0] == early[0]
    assert [path.name for path in (copy / "counters").iterdir()] == [f"{recorder.pid}.json"]
    assert late[1] < early[1] + len(ids) * 2 * 4
    assert late[1] < 200 * len(ids)

    out = tmp_path / "report.json"
    assert main(["report", str(copy), "--json", str(out), "--format", "json"]) in (0, 1)
    report = json.loads(out.read_text())
    assert report["run"]["heat_complete"] is True
    for row in report["compiles"]:
        assert row["calls"] == TICKS
        assert row["seconds_in_graph"] == pytest.approx(TICKS * CLOCK_STEP_S, rel=1e-6)
    assert {row["compile_id"] for row in report["compiles"]} == set(real["graph_calls"])
    assert [site["hits"] for site in report["graph_breaks"]] == [TICKS] * len(real["break_hits"])
