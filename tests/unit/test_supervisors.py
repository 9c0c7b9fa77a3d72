"""The check and ablate supervisors on scripted workers (tests/fake_launcher.py): which cell a
crash or a hang is attributed to, what reruns, and where the backend ladder stops. No worker
process runs here; tests/unit/test_workers.py gives the same endings with real processes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_launcher import Script, ScriptedLauncher, event
from pt2doctor.ablate.driver import AblateOptions, Ablation
from pt2doctor.cases import Case, Cell, Matrix
from pt2doctor.cases.case import cells
from pt2doctor.cases.variants import CompileVariant
from pt2doctor.check.driver import run_check
from pt2doctor.check.orchestrate import RESULTS, CheckOptions, Orchestrator
from pt2doctor.rundir.read import read_jsonl

SIGSEGV, SIGKILL = -11, -9


def _never_built(cell: Cell) -> Any:
    raise AssertionError("the supervisor never builds a model: only workers do")


CASE = Case("m", _never_built, Matrix(shapes={"a": 1, "b": 2, "c": 3}, grad=(False,)))
CELLS = cells(CASE)
A, B, C = (cell.id for cell in CELLS)  # one group: the shapes share a model


def aligned(*ids: str) -> list[dict[str, Any]]:
    return [e for i in ids for e in (
        event("cell_start", cell=i, phase="align"),
        event("alignment", cell=i, verdict="pass", tensors=[]),
    )]  # fmt: skip


def warmed(*ids: str) -> list[dict[str, Any]]:
    return [e for i in ids for e in (
        event("cell_start", cell=i, phase="warmup"), event("warmup", cell=i, seconds=0.5),
    )]  # fmt: skip


def steady(*ids: str) -> list[dict[str, Any]]:
    """Warmup done, the steady state under way (no steady_done yet)."""
    return [
        *warmed(*ids),
        event("warmup_done", seconds=1.5),
        event("model", repeated_blocks=0),
        event("cell_start", cell=None, phase="steady"),
    ]


def finished(*ids: str) -> list[dict[str, Any]]:
    return [
        *steady(*ids),
        event("steady_done", cells=list(ids), compiles=1, frames=[], graph_breaks=[]),
        event("done", memory={}),
    ]


START = [event("environment", environment={})]


def check(tmp_path: Path, *scripts: Script) -> tuple[list[dict[str, Any]], ScriptedLauncher]:
    """``run_check`` on the one group, workers replayed from ``scripts``; results.jsonl."""
    options = CheckOptions(
        case_file=tmp_path / "cases.py",
        out=tmp_path,
        variants=[CompileVariant("default", "eager")],
        cell_timeout=5.0,
        cold_start=False,
        regional=False,
    )
    launcher = ScriptedLauncher(*scripts)
    orch = Orchestrator(options, launcher=launcher)
    run_check(options, [CASE], CELLS, orch)
    orch.results.close()
    assert launcher.scripts == [], "the supervisor launched fewer workers than scripted"
    return read_jsonl(tmp_path / RESULTS) or [], launcher


def verdicts(records: list[dict[str, Any]], kind: str) -> dict[str, tuple[str, str]]:
    return {
        r["cell"]: (r.get("verdict", "ok"), r.get("error", ""))
        for r in records
        if r["record"] == kind
    }


def test_check_gives_a_segfault_at_cell_2_to_cell_2_and_goes_on(tmp_path: Path) -> None:
    records, launcher = check(
        tmp_path,
        Script([*START, *aligned(A), event("cell_start", cell=B, phase="align")], SIGSEGV),
        Script([*START, *aligned(C), *finished(A, C)]),
    )
    assert verdicts(records, "alignment") == {
        A: ("pass", ""),
        B: ("crash", "crashed: SIGSEGV"),
        C: ("pass", ""),
    }
    first, rerun = launcher.launches
    assert first.module == rerun.module == "pt2doctor.check.worker"
    assert (first.idle_timeout, first.total_timeout) == (5.0, None)
    assert first.spec["cells"] == [A, B, C] and first.out.name == "attempt-0"
    # the rerun leaves cell 2 out and aligns only what the crash left unaligned
    assert (rerun.spec["cells"], rerun.spec["align_cells"]) == ([A, C], [C])
    assert rerun.out.name == "attempt-1"
    [group] = [r for r in records if r["record"] == "group"]
    assert group["cells"] == [A, C] and "status" not in group
    assert records[-1]["record"] == "finished"


def test_check_gives_an_oom_kill_in_warmup_to_that_cell_and_benches_the_rest(
    tmp_path: Path,
) -> None:
    crashed = [*START, *aligned(A, B, C), *warmed(A), event("cell_start", cell=B, phase="warmup")]
    records, launcher = check(tmp_path, Script(crashed, SIGKILL), Script([*START, *finished(A, C)]))
    assert verdicts(records, "warmup")[B] == ("crash", "crashed: SIGKILL (out of memory?)")
    assert {cell: v for cell, (v, _) in verdicts(records, "alignment").items()} == {
        A: "pass", B: "pass", C: "pass"
    }  # fmt: skip
    rerun = launcher.launches[1].spec
    assert (rerun["cells"], rerun["align_cells"], rerun["bench"]) == ([A, C], [], True)


def test_check_gives_a_hang_in_steady_state_to_the_group_and_does_not_rerun(
    tmp_path: Path,
) -> None:
    records, launcher = check(
        tmp_path, Script([*START, *aligned(A, B, C), *steady(A, B, C)], hang=True)
    )
    assert len(launcher.launches) == 1
    [group] = [r for r in records if r["record"] == "group"]
    assert group["cells"] == [A, B, C]
    assert (group["status"], group["error"]) == ("timeout", "timed out after 5 s")
    assert {v for v, _ in verdicts(records, "alignment").values()} == {"pass"}
    assert verdicts(records, "warmup").keys() == {A, B, C}


def test_check_reruns_unaligned_cells_after_a_steady_state_hang(tmp_path: Path) -> None:
    """A group whose alignment of C was skipped (align_cells) still gets C aligned."""
    records, launcher = check(
        tmp_path,
        Script([*START, *aligned(A), event("cell_start", cell=B, phase="align")], SIGSEGV),
        Script([*START, *aligned(C), *steady(A, C)], hang=True),
    )
    assert len(launcher.launches) == 2  # nothing left unaligned after the hang: no third worker
    statuses = [r.get("status") for r in records if r["record"] == "group"]
    assert statuses == ["timeout"]


def test_check_gives_a_worker_that_never_starts_to_every_cell(tmp_path: Path) -> None:
    never = Script(
        [], returncode=1, stderr="Traceback...\nModuleNotFoundError: No module named 'x'"
    )
    records, launcher = check(tmp_path, never)
    error = "crashed: exit 1: ModuleNotFoundError: No module named 'x'"
    assert verdicts(records, "alignment") == {
        A: ("error", error),
        B: ("error", error),
        C: ("error", error),
    }
    assert {r["phase"] for r in records if r["record"] == "alignment"} == {"start"}
    assert len(launcher.launches) == 1 and not [r for r in records if r["record"] == "group"]


def test_check_gives_a_worker_that_hangs_before_any_event_to_every_cell(tmp_path: Path) -> None:
    records, _ = check(tmp_path, Script([], hang=True))
    assert set(verdicts(records, "alignment").values()) == {("error", "timed out after 5 s")}


# ---- ablate -----------------------------------------------------------------------------


def rung(status: str, **fields: Any) -> Script:
    return Script([
        event("environment", torch_version=[2, 13]),
        event("trial_start", target=""),
        event("trial", status=status, traceback="...", **fields),
    ])  # fmt: skip


def ablate(tmp_path: Path, *scripts: Script) -> tuple[list[dict[str, Any]], ScriptedLauncher]:
    options = AblateOptions(
        case_file=tmp_path / "cases.py", cell=CELLS[0], out=tmp_path, timeout=30
    )
    launcher = ScriptedLauncher(*scripts)
    rungs = Ablation(options, launcher=launcher).rungs()
    assert launcher.scripts == [], "the ladder ran fewer rungs than scripted"
    return rungs, launcher


def test_the_ladder_runs_every_rung_when_none_fails(tmp_path: Path) -> None:
    rungs, launcher = ablate(tmp_path, *(rung("ok") for _ in range(4)))
    assert [r["status"] for r in rungs] == ["ok"] * 4
    assert [launch.spec["backend"] for launch in launcher.launches] == [
        "eager", "aot_eager", "aot_eager_decomp_partition", "inductor"
    ]  # fmt: skip
    assert {launch.module for launch in launcher.launches} == {"pt2doctor.ablate.trial"}
    assert {(launch.idle_timeout, launch.total_timeout) for launch in launcher.launches} == {
        (None, 30)
    }
    assert all("traceback" not in r for r in rungs)  # tracebacks stay in events.jsonl


def test_the_ladder_stops_at_the_first_rung_that_crashes(tmp_path: Path) -> None:
    rungs, _ = ablate(
        tmp_path,
        rung("ok"),
        rung("ok"),
        rung("crash", error="RuntimeError: bad decomposition", root_type="RuntimeError"),
    )
    assert [(r["backend"], r["status"]) for r in rungs] == [
        ("eager", "ok"),
        ("aot_eager", "ok"),
        ("aot_eager_decomp_partition", "crash"),
        ("inductor", "not run"),
    ]
    assert rungs[2]["layer"] == "decomp_partition"
    assert rungs[2]["error"] == "RuntimeError: bad decomposition"


def test_a_segfault_in_a_rung_is_that_rungs_process_crash(tmp_path: Path) -> None:
    died = Script([event("environment"), event("trial_start", target="")], SIGSEGV)
    rungs, _ = ablate(tmp_path, rung("ok"), died)
    assert (rungs[1]["status"], rungs[1]["root_type"], rungs[1]["error"]) == (
        "crash", "process_crash", "crashed: SIGSEGV"
    )  # fmt: skip
    assert [r["status"] for r in rungs[2:]] == ["not run", "not run"]


def test_a_hung_rung_is_a_hang_and_stops_the_ladder(tmp_path: Path) -> None:
    hung = Script([event("environment"), event("trial_start", target="")], hang=True)
    rungs, _ = ablate(tmp_path, hung)
    assert (rungs[0]["status"], rungs[0]["root_type"], rungs[0]["error"]) == (
        "crash", "hang", "timed out after 30 s"
    )  # fmt: skip
    assert [r["status"] for r in rungs[1:]] == ["not run"] * 3


def test_a_trial_worker_that_never_starts_stops_the_ladder(tmp_path: Path) -> None:
    never = Script([], returncode=1, stderr="ImportError: cannot import name 'x'")
    rungs, _ = ablate(tmp_path, never)
    assert rungs[0]["status"] == "crash" and rungs[0]["root_type"] == "process_crash"
    assert rungs[0]["error"] == "crashed: exit 1: ImportError: cannot import name 'x'"
    assert [r["status"] for r in rungs[1:]] == ["not run"] * 3


def test_the_module_bisection_keeps_its_trials_up_to_a_segfault(tmp_path: Path) -> None:
    trials = [
        event("trial_start", target="block"),
        event("module_trial", target="block", reproduced=True, status="crash", error="E"),
        event("trial_start", target="block.inner"),
    ]
    options = AblateOptions(case_file=tmp_path / "cases.py", cell=CELLS[0], out=tmp_path)
    launcher = ScriptedLauncher(Script(trials, SIGSEGV))
    found = Ablation(options, launcher=launcher).modules({"backend": "inductor"}, "it crashes")
    assert found["completed"] is False and found["detail"] == "crashed: SIGSEGV"
    assert found["trials"] == [
        {"module": "block", "reproduced": True, "status": "crash", "error": "E"}
    ]
    assert launcher.launches[0].spec["kind"] == "modules"
