"""Rank findings that a two-rank job on one CPU cannot produce on demand, from hand-built per-rank
logs: copies of one real TORCH_TRACE log (tests/programs/run/run_hot_break.py, shared with
test_run.py through ``doctor_run``), named as ranks, each changed in one planted way:

- ``rank_cache_imbalance``: rank 1's log gains an Inductor FX-graph cache miss for 0/0;
- ``rank_specific_failure``: rank 1's compile 0/0 failed (its compilation_metrics say so);
- ``rank_duplicate_logs``: two logs are named rank 0.

Each report is read in process (``report`` never runs torch); every other divergence kind
is absent, because everything else in the copies is the same real log.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pt2doctor.cli import main

pytestmark = pytest.mark.torch_run

LOG_NAME = "dedicated_log_torch_trace_rank_{}_{}.log"
Edit = Callable[[str], str]


@pytest.fixture(scope="module")
def real_log(doctor_run) -> str:
    run = doctor_run("hot_break", ("--backend", "eager"), "run_hot_break", "6", "3")
    assert run.returncode == 0, run.stderr[-4000:]
    (log,) = (run.run_dir / "trace").iterdir()
    return log.read_text()


def _record(envelope: dict[str, Any], payload: str) -> str:
    """One TORCH_TRACE record as torch writes it: a glog prefix, the envelope, payload lines."""
    envelope = {**envelope, "has_payload": hashlib.md5(payload.encode()).hexdigest()}
    return f"V1130 00:00:00.000000 1 planted.py:1] {json.dumps(envelope)}\n\t{payload}\n"


def add_cache_miss(log: str) -> str:
    artifact = {"name": "fx_graph_cache_miss", "encoding": "json"}
    ids = {"frame_id": 0, "frame_compile_id": 0, "attempt": 1}
    return log + _record({"artifact": artifact, **ids}, "{}")


def fail_first_compile(log: str) -> str:
    lines = log.splitlines(keepends=True)
    for index, line in enumerate(lines):
        prefix, _, body = line.partition("] ")
        if line.startswith("\t") or '"compilation_metrics"' not in body:
            continue
        envelope = json.loads(body)
        metrics = envelope["compilation_metrics"]
        if metrics["compile_id"] == "0/0":
            metrics.update(fail_type="BackendCompilerFailed", fail_reason="planted on rank 1")
            lines[index] = f"{prefix}] {json.dumps(envelope)}\n"
            return "".join(lines)
    raise AssertionError("no compilation_metrics for 0/0 in the real log")


def _report(tmp_path: Path, logs: dict[str, str]) -> dict[str, Any]:
    trace = tmp_path / "trace"
    trace.mkdir()
    for name, text in logs.items():
        (trace / name).write_text(text)
    out = tmp_path / "report.json"
    assert main(["report", str(trace), "--json", str(out), "--format", "json"]) in (0, 1)
    return json.loads(out.read_text())


def _only(report: dict[str, Any], code: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The one divergence of this finding's kind, and the finding; no other rank finding."""
    rank_codes = [f["code"] for f in report["findings"] if f["code"].startswith("rank_")]
    assert rank_codes == [code], rank_codes
    (finding,) = [f for f in report["findings"] if f["code"] == code]
    (divergence,) = report["ranks"]["divergences"]
    return divergence, finding


def test_a_cache_miss_on_one_rank_only(real_log: str, tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        {LOG_NAME.format(0, "a"): real_log, LOG_NAME.format(1, "b"): add_cache_miss(real_log)},
    )
    divergence, finding = _only(report, "rank_cache_imbalance")
    assert divergence["ranks"] == [1]
    assert "rank 1: 0 hits, 1 miss" in divergence["evidence"]
    assert "rank 0: 0 hits, 0 misses" in divergence["evidence"]
    assert finding["severity"] == "warning"


def test_a_compile_failure_on_one_rank_only(real_log: str, tmp_path: Path) -> None:
    report = _report(
        tmp_path,
        {LOG_NAME.format(0, "a"): real_log, LOG_NAME.format(1, "b"): fail_first_compile(real_log)},
    )
    divergence, finding = _only(report, "rank_specific_failure")
    assert divergence["ranks"] == [1]
    (evidence,) = divergence["evidence"]
    assert "setup" in evidence and evidence.endswith("on rank 1, not on rank 0")
    assert finding["severity"] == "warning"


def test_two_logs_claiming_one_rank(real_log: str, tmp_path: Path) -> None:
    names = [LOG_NAME.format(0, "a"), LOG_NAME.format(0, "b"), LOG_NAME.format(1, "c")]
    report = _report(tmp_path, dict.fromkeys(names, real_log))
    divergence, finding = _only(report, "rank_duplicate_logs")
    assert divergence["title"] == "rank 0 has 2 logs; each is compared as a rank of its own"
    assert sorted(Path(path).name for path in divergence["evidence"]) == names[:2]
    assert finding["severity"] == "warning"
