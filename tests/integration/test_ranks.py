"""``pt2doctor run --nproc 2`` on a real gloo job (CPU): torchrun starts two ranks, rank 1 sees
one batch of another shape and recompiles; the report must name that rank, the frame and the
guard, the compile-time skew, and keep runtime heat per rank.

Expected values come from the program's own ``COUNTS {json}`` line per rank, from a minimal scan
of each rank's raw TORCH_TRACE log (:func:`raw_file_records`) and from ``# MARK:`` comments,
never from a stored copy of pt2doctor's output. One run (~10 s: two torch imports, a gloo
rendezvous, ``--backend eager`` compiles), shared through the ``doctor_run`` fixture.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from oracles import marker_in, raw_file_records
from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "run" / "run_ranks.py"
RANK_IN_NAME = re.compile(r"rank_(\d+)")
STEPS = 4

Report = dict[str, Any]


def ranks_run(doctor_run):
    run = doctor_run("ranks", ("--backend", "eager", "--nproc", "2"), "run_ranks", str(STEPS))
    assert run.returncode == 0, run.stderr[-4000:]
    return run


def rank_counts(stdout: str) -> dict[int, dict[str, int]]:
    """Each rank's ``COUNTS {json}`` line (torchrun passes the workers' stdout through)."""
    counts = [json.loads(x.removeprefix("COUNTS ")) for x in stdout.splitlines() if "COUNTS " in x]
    return {entry["rank"]: entry for entry in counts}


def raw_logs(run_dir: Path) -> dict[int, Path]:
    """Rank -> its trace log, by the rank torch wrote into the file name."""
    logs = {}
    for log in (run_dir / "trace").iterdir():
        match = RANK_IN_NAME.search(log.name)
        assert match, f"torch named a worker's log without its rank: {log.name}"
        logs[int(match[1])] = log
    return logs


def raw_compile_times(log: Path) -> list[float]:
    return [
        env["compilation_metrics"]["entire_frame_compile_time_s"]
        for env, _ in raw_file_records(log)
        if "compilation_metrics" in env
    ]


def raw_recompile_reasons(log: Path) -> list[str]:
    return [
        payload
        for env, payload in raw_file_records(log)
        if env.get("artifact", {}).get("name") == "recompile_reasons"
    ]


def row(report: Report, rank: int) -> dict[str, Any]:
    (found,) = [r for r in report["ranks"]["per_rank"] if r["rank"] == rank]
    return found


def test_torchrun_starts_every_rank_into_one_run_dir(doctor_run) -> None:
    run = ranks_run(doctor_run)
    counts = rank_counts(run.stdout)
    assert sorted(counts) == [0, 1]
    assert all(entry["step_calls"] == STEPS for entry in counts.values())
    assert sorted(raw_logs(run.run_dir)) == [0, 1]
    manifest = json.loads((run.run_dir / "manifest.json").read_text())
    argv = manifest["launcher"]["argv"]
    assert argv[1:3] == ["-m", "torch.distributed.run"]
    assert "--nproc-per-node=2" in argv and "--standalone" in argv
    assert argv[-2:] == [str(PROGRAM), str(STEPS)]  # the leading python was stripped
    report = run.report
    assert report["ranks"]["count"] == 2
    assert [r["label"] for r in report["ranks"]["per_rank"]] == ["rank 0", "rank 1"]
    assert {c["rank"] for c in report["compiles"]} == {0, 1}


def test_report_names_the_rank_the_frame_and_the_guard(doctor_run) -> None:
    run = ranks_run(doctor_run)
    logs = raw_logs(run.run_dir)
    assert raw_recompile_reasons(logs[0]) == []  # only rank 1 recompiled, says the log itself
    (reasons,) = raw_recompile_reasons(logs[1])
    report = run.report
    (divergence,) = [
        d for d in report["ranks"]["divergences"] if d["kind"] == "rank_specific_recompile"
    ]
    assert divergence["ranks"] == [1]
    assert divergence["frame"]["function"] == "step"
    assert divergence["frame"]["line"] == marker_in(PROGRAM, "step")
    (recompile,) = divergence["recompiles"]
    guard = recompile["failed_guards"][0]
    assert guard["category"] == "size"
    assert guard["text"] in reasons
    (finding,) = [f for f in report["findings"] if f["code"] == "rank_specific_recompile"]
    assert "rank 1" in finding["title"] and "step" in finding["title"]
    assert guard["text"] in finding["title"]
    assert len(row(report, 1)["recompiles"]) == 1 and row(report, 0)["recompiles"] == []


def test_compile_skew_is_measured_from_each_ranks_log(doctor_run) -> None:
    run = ranks_run(doctor_run)
    times = {rank: sum(raw_compile_times(log)) for rank, log in raw_logs(run.run_dir).items()}
    skew = max(times.values()) - min(times.values())
    ranks = run.report["ranks"]
    assert ranks["compile_skew_s"] == pytest.approx(skew, abs=1e-5)
    assert ranks["slowest"] == f"rank {max(times, key=lambda r: times[r])}"
    assert ranks["collective_timeout_s"] == 600
    for rank, seconds in times.items():
        assert row(run.report, rank)["compile_time_s"] == pytest.approx(seconds, abs=1e-5)
    (finding,) = [f for f in run.report["findings"] if f["code"] == "rank_compile_skew"]
    assert f"skew {skew:.2f} s" in finding["title"]
    assert finding["severity"] == "info"  # a fraction of a second against 10 minutes


def test_collective_timeout_below_the_skew_is_an_error(doctor_run, tmp_path: Path) -> None:
    run = ranks_run(doctor_run)
    skew = run.report["ranks"]["compile_skew_s"]
    out = tmp_path / "report.json"
    timeout = skew / 2
    assert (
        main(["report", str(run.run_dir), "--collective-timeout", str(timeout), "--json", str(out)])
        == 0
    )
    ranks = json.loads(out.read_text())["ranks"]
    assert ranks["collective_timeout_s"] == pytest.approx(timeout)
    assert ranks["timeout_share"] >= 1
    (skew_divergence,) = [d for d in ranks["divergences"] if d["kind"] == "compile_skew"]
    assert skew_divergence["severity"] == "error"


def test_heat_is_kept_per_rank(doctor_run) -> None:
    run = ranks_run(doctor_run)
    counts = rank_counts(run.stdout)
    report = run.report
    for rank, entry in counts.items():
        compiles = [c for c in report["compiles"] if c["rank"] == rank]
        assert sum(c["calls"] for c in compiles) == entry["step_calls"]
        assert row(report, rank)["graph_calls"] == entry["step_calls"]
    (recompiled,) = [c for c in report["compiles"] if c["cause"] == "recompile"]
    assert recompiled["rank"] == 1
    assert recompiled["calls"] == counts[1]["other_shape_calls"]
