"""The one launcher, on real worker processes (tests/programs/workers/scripted_worker.py: no
torch, ~0.1 s each): how a worker ended, what was in flight, and that a timeout stops the
whole process group. The deadline arithmetic is tested on a fake clock."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from oracles import gone_within
from pt2doctor import forkserver
from pt2doctor.workers import SPEC, Deadlines, Outcome, launch

WORKER_DIR = Path(__file__).resolve().parents[1] / "programs" / "workers"
ENV = {"PYTHONPATH": os.pathsep.join(filter(None, [str(WORKER_DIR), os.environ.get("PYTHONPATH")]))}


Play = Callable[..., tuple[Outcome, list[str]]]


@pytest.fixture(scope="module")
def script_server() -> Iterator[forkserver.ForkServer]:
    """A fork server that can import the scripted worker (forked from this process while the
    worker's folder is on sys.path), installed as this process's server while the module's
    tests run."""
    sys.path.insert(0, str(WORKER_DIR))
    try:
        server = forkserver.ForkServer()
    finally:
        sys.path.remove(str(WORKER_DIR))
    saved = list(forkserver._SERVER)
    forkserver._SERVER[:] = [server]
    yield server
    forkserver._SERVER[:] = saved
    server.close()


@pytest.fixture(params=["fresh", "forked"])
def mode(request: pytest.FixtureRequest) -> str:
    """Every launcher test runs both ways a worker starts: ``python -m`` (a job with its own
    environment) and forked by the fork server."""
    if request.param == "forked":
        request.getfixturevalue("script_server")
    return str(request.param)


@pytest.fixture
def play(mode: str) -> Play:
    def play(script: list[list[Any]], out: Path, **limits: float) -> tuple[Outcome, list[str]]:
        """Launch the scripted worker; its outcome and the event names on_event saw."""
        seen: list[str] = []
        outcome = launch(
            "scripted_worker",
            {"script": script},
            out,
            on_event=lambda event: seen.append(event["event"]),
            env=ENV if mode == "fresh" else None,
            **limits,
        )
        return outcome, seen

    return play


def test_a_forked_worker_is_the_servers_child_in_its_own_group_with_torch_loaded(
    tmp_path: Path, script_server: forkserver.ForkServer
) -> None:
    outcome = launch("scripted_worker", {"script": [["facts"]]}, tmp_path / "w")
    facts = outcome.events[0]
    assert outcome.status == "ok"
    assert facts["ppid"] == script_server.process.pid and facts["pgid"] == facts["pid"]
    assert facts["torch_loaded"] is True


def test_a_job_with_its_own_environment_or_fresh_workers_asked_starts_afresh(
    tmp_path: Path, script_server: forkserver.ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = launch("scripted_worker", {"script": [["facts"]]}, tmp_path / "a", env=ENV)
    assert outcome.events[0]["ppid"] == os.getpid() and not outcome.events[0]["torch_loaded"]
    monkeypatch.setenv(forkserver.FRESH_ENV, "1")
    monkeypatch.setenv("PYTHONPATH", ENV["PYTHONPATH"])
    outcome = launch("scripted_worker", {"script": [["facts"]]}, tmp_path / "b")
    assert outcome.events[0]["ppid"] == os.getpid() and not outcome.events[0]["torch_loaded"]


def _names(outcome: Outcome) -> list[str]:
    return [event["event"] for event in outcome.events]


def test_a_worker_that_finishes_is_ok_and_its_spec_says_where_it_writes(
    tmp_path: Path, play: Play
) -> None:
    script = [["emit", "cell_start", {"cell": "c1"}], ["emit", "alignment", {"cell": "c1"}]]
    outcome, seen = play(script, tmp_path / "w", total_timeout=60)
    assert (outcome.status, outcome.detail, outcome.in_flight) == ("ok", "", None)
    assert _names(outcome) == seen == ["cell_start", "alignment"]
    spec = orjson.loads((tmp_path / "w" / SPEC).read_bytes())
    assert spec["out"] == str(tmp_path / "w")
    assert spec["spawn_time"] <= outcome.events[0]["t"]


def test_a_segfault_is_a_crash_of_the_unit_in_flight(tmp_path: Path, play: Play) -> None:
    script = [
        ["emit", "cell_start", {"cell": "c1", "phase": "align"}],
        ["emit", "alignment", {"cell": "c1", "verdict": "pass"}],
        ["emit", "cell_start", {"cell": "c2", "phase": "align"}],
        ["signal", "SIGSEGV"],
        ["emit", "alignment", {"cell": "c2"}],  # never written
    ]
    outcome, seen = play(script, tmp_path / "w", idle_timeout=60)
    assert (outcome.status, outcome.detail) == ("crash", "crashed: SIGSEGV")
    assert outcome.in_flight is not None and outcome.in_flight["cell"] == "c2"
    assert _names(outcome) == seen == ["cell_start", "alignment", "cell_start"]


def test_an_exit_without_an_event_names_the_last_line_of_stderr(tmp_path: Path, play: Play) -> None:
    script = [["emit", "trial_start", {"target": ""}], ["stderr", "boom: out of shared memory"],
              ["exit", 3]]  # fmt: skip
    outcome, _ = play(script, tmp_path / "w", total_timeout=60)
    assert (outcome.status, outcome.detail) == (
        "crash",
        "crashed: exit 3: boom: out of shared memory",
    )
    assert outcome.in_flight is not None and outcome.in_flight["event"] == "trial_start"


def test_a_crash_between_units_has_nothing_in_flight(tmp_path: Path, play: Play) -> None:
    script = [
        ["emit", "trial_start", {"target": "block"}],
        ["emit", "module_trial", {"target": "block", "reproduced": True}],
        ["signal", "SIGABRT"],
    ]
    outcome, _ = play(script, tmp_path / "w", total_timeout=60)
    assert (outcome.status, outcome.detail, outcome.in_flight) == (
        "crash",
        "crashed: SIGABRT",
        None,
    )


def test_an_error_outside_any_unit_is_fatal(tmp_path: Path, play: Play) -> None:
    outcome, _ = play([["raise", "no case named 'x'"]], tmp_path / "w", total_timeout=60)
    assert (outcome.status, outcome.detail) == ("fatal", "ValueError: no case named 'x'")
    assert outcome.events[-1]["traceback"].rstrip().endswith("ValueError: no case named 'x'")


def test_a_worker_that_never_starts_is_a_crash_with_no_events(tmp_path: Path, mode: str) -> None:
    env = ENV if mode == "fresh" else None
    outcome = launch("pt2doctor_no_such_worker", {}, tmp_path / "w", total_timeout=60, env=env)
    assert outcome.status == "crash" and outcome.events == [] and outcome.in_flight is None
    assert outcome.detail.startswith("crashed: exit 1: ")
    assert "No module named pt2doctor_no_such_worker" in outcome.detail


def test_a_hang_in_steady_state_stops_the_whole_process_group(tmp_path: Path, play: Play) -> None:
    pid_file = tmp_path / "grandchild.pid"
    script = [
        ["emit", "cell_start", {"cell": None, "phase": "steady"}],
        ["grandchild", str(pid_file)],
        ["sleep", 120],
    ]
    started = time.monotonic()
    outcome, _ = play(script, tmp_path / "w", idle_timeout=3)  # startup under load: < 3 s
    assert time.monotonic() - started < 60  # stopped, not slept out
    assert (outcome.status, outcome.detail) == ("timeout", "timed out after 3 s")
    assert outcome.in_flight is not None and outcome.in_flight["phase"] == "steady"
    assert gone_within(int(pid_file.read_text()))


def test_a_worker_that_never_writes_an_event_hits_the_total_timeout(
    tmp_path: Path, play: Play
) -> None:
    outcome, seen = play([["sleep", 120]], tmp_path / "w", total_timeout=1)
    assert (outcome.status, outcome.detail, outcome.in_flight) == (
        "timeout",
        "timed out after 1 s",
        None,
    )
    assert seen == []


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("idle", "total", "steps", "passed"),
    [
        # a start event every 8 s keeps a 10 s idle limit from passing...
        (10.0, None, [8, "start", 8, "start", 8], None),
        # ...without one, it passes
        (10.0, None, [8, 3], 10.0),
        # the total limit counts from the launch, whatever starts
        (10.0, 20.0, [8, "start", 8, "start", 8], 20.0),
        (None, 5.0, [5], None),  # strictly after the limit, as before
        (None, 5.0, [5.5], 5.0),
    ],
)
def test_deadlines(
    idle: float | None, total: float | None, steps: list[Any], passed: float | None
) -> None:
    clock = FakeClock()
    deadlines = Deadlines(idle, total, clock)
    for step in steps:
        if step == "start":
            deadlines.restart_idle()
        else:
            clock.now += step
    left = deadlines.remaining()
    assert deadlines.passed == passed
    assert (left is None) == (passed is not None)


def test_deadlines_say_how_long_to_wait() -> None:
    clock = FakeClock()
    deadlines = Deadlines(10.0, 30.0, clock)
    clock.now += 4
    assert deadlines.remaining() == 6.0
    assert Deadlines(None, None, clock).remaining() == float("inf")
