"""The probes' counter files (capture/probes.py) and how a run directory's heat is read back
(rundir/read.py): one file per process, replaced atomically; older run directories that
appended snapshots to probes.jsonl still load. No torch: graphs are plain functions."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pt2doctor.capture.probes import ProbeRecorder
from pt2doctor.rundir.read import load_probes


def _clock() -> float:
    return 0.0


def test_each_snapshot_replaces_the_process_file(tmp_path: Path) -> None:
    recorder = ProbeRecorder(tmp_path, clock=_clock)
    graph = recorder.count_graph("0/0", lambda: None)
    for _ in range(3):
        graph()
        recorder.snapshot()
    saved = json.loads((tmp_path / "counters" / f"{os.getpid()}.json").read_text())
    assert (saved["graph_calls"], saved["final"]) == ({"0/0": 3}, False)
    graph()
    recorder.close()
    recorder.snapshot()  # after close: nothing more is written
    assert [p.name for p in (tmp_path / "counters").iterdir()] == [f"{os.getpid()}.json"]
    probes = load_probes(tmp_path)
    assert probes is not None
    assert (probes.graph_calls, probes.complete) == ({"0/0": 4}, True)
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "probes.jsonl").open()]
    # events only, no snapshot lines: the compile and its calling line (this test)
    assert kinds == ["compiled", "compile_site"]


def test_processes_are_summed_and_a_half_written_file_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "probes.jsonl").write_text("")
    counters = tmp_path / "counters"
    counters.mkdir()
    for pid, calls in ((11, 2), (12, 5)):
        snapshot = {"kind": "snapshot", "t": 1.0, "pid": pid, "final": True,
                    "graph_calls": {"0/0": calls}, "graph_seconds": {}, "break_hits": {}}  # fmt: skip
        (counters / f"{pid}.json").write_text(json.dumps(snapshot))
    (counters / ".13.json.tmp").write_text('{"kind": "snapshot", "graph_calls": {"0/0": 1')
    probes = load_probes(tmp_path)
    assert probes is not None
    assert probes.graph_calls == {"0/0": 7}


def test_snapshots_appended_to_probes_jsonl_still_load(tmp_path: Path) -> None:
    """Run directories written before the counter files: the last snapshot per process."""
    lines = [
        {"kind": "start", "t": 0.0, "pid": 7},
        {"kind": "snapshot", "t": 0.5, "pid": 7, "final": False, "graph_calls": {"0/0": 1}},
        {"kind": "snapshot", "t": 1.0, "pid": 7, "final": True, "graph_calls": {"0/0": 9}},
    ]
    (tmp_path / "probes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    probes = load_probes(tmp_path)
    assert probes is not None
    assert (probes.graph_calls, probes.complete, probes.snapshot_t) == ({"0/0": 9}, True, 1.0)


def test_torch_compile_calls_are_recorded_with_what_they_compile_and_the_users_line() -> None:
    """What `run` records of each torch.compile call (the program's own line that called it),
    in process with torch's real torch.compile, put back afterwards."""
    import sys

    import torch

    from pt2doctor import torchcompat
    from pt2doctor.capture.frames import caller_frame

    original, calls = torch.compile, []
    try:
        assert torchcompat.record_compile_calls(calls.append, where=caller_frame)
        module = torch.nn.Linear(2, 2)
        line = sys._getframe().f_lineno + 1
        torch.compile(module, backend="eager")
        torch.compile(lambda x: x + 1, backend="eager")
        module.compile(backend="eager")  # nn.Module.compile calls torch.compile itself

        @torch.compile(backend="eager")
        def decorated(x: torch.Tensor) -> torch.Tensor:
            return x * 2

    finally:
        torch.compile = original
    assert [(c["target"], c["name"]) for c in calls] == [
        ("module", "Linear"),
        (
            "function",
            "test_torch_compile_calls_are_recorded_with_what_they_compile_and_the_users_line.<locals>.<lambda>",
        ),
        ("module.compile()", "Linear"),
        (
            "function",
            "test_torch_compile_calls_are_recorded_with_what_they_compile_and_the_users_line.<locals>.decorated",
        ),
    ]
    # The line is the test's own (the user's code), not torch's nn.Module.compile.
    assert [c["line"] for c in calls[:3]] == [line, line + 1, line + 2]
    assert all(c["file"] == __file__ for c in calls)
    assert [c["n"] for c in calls] == [1, 2, 3, 4]
