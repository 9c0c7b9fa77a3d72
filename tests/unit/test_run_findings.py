"""The program_failed finding of a run whose ranks raised (``pt2doctor run --nproc 2``).

The exception events are the ones the probes wrote for a nanoGPT-style DDP training script
(torch 2.13, gloo, 2 ranks, ``DDP(model, bucket_cap_mb=0.05)`` under ``torch.compile``), whose
DDPOptimizer raised the same AssertionError on both ranks, after which torchrun raised its
ChildFailedError with its banner (shortened here)."""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.run_findings import run_findings
from pt2doctor.analysis.recompiles.ledger import Ledger
from pt2doctor.trace.types import ProbeData

FRAMES = [
    {"function": "main", "file": "/tmp/nanogpt/train_ddp_bad.py", "line": 23},
    {"function": "<module>", "file": "/tmp/nanogpt/train_ddp_bad.py", "line": 33},
]
MESSAGE = "First bucket should be smaller/equal to other buckets to get comms warmed up ASAP"
BANNER = (
    "\n============================================================\ntrain_ddp_bad.py FAILED\n"
    "------------------------------------------------------------\nFailures:\n[1]:\n"
    "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 17825)\n"
)


def _exception(t: float, kind: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "exception", "t": t, "type": kind, "message": message, **extra}


def _failed(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.code == "program_failed"]


def test_ranks_that_raised_alike_are_one_line_and_torchruns_banner_is_left_out() -> None:
    probes = ProbeData(
        exceptions=[
            _exception(2.343053, "AssertionError", MESSAGE, frames=FRAMES, rank=0),
            _exception(2.34232, "AssertionError", MESSAGE, frames=FRAMES, rank=1),
            _exception(4.295181, "ChildFailedError", BANNER, frames=[]),
        ]
    )
    manifest = {"exit_code": 1, "end_time": 10.0}
    (finding,) = _failed(run_findings(Ledger([], [], []), manifest, probes, None))
    assert finding.evidence == [
        f"AssertionError: {MESSAGE} (ranks 0, 1)",
        "raised in main (train_ddp_bad.py:23)",
    ]
    assert finding.advice.startswith("See the exception above;")  # no compile id to see


def test_a_single_process_keeps_its_exception_even_if_torchrun_would_name_it_alike() -> None:
    probes = ProbeData(exceptions=[_exception(1.0, "ChildFailedError", "boom\nmore", frames=[])])
    manifest = {"exit_code": 1, "end_time": 2.0}
    (finding,) = _failed(run_findings(Ledger([], [], []), manifest, probes, None))
    assert finding.evidence == ["ChildFailedError: boom more"]


def test_a_compile_call_with_nothing_compiled_is_named_unless_the_program_failed_first() -> None:
    call = {"target": "module", "name": "Decoder", "file": "/app/serve.py", "line": 12, "n": 1}
    probes = ProbeData(compile_calls=[call], hooks={"probes": {"graphs": True, "breaks": True}})
    clean = {"exit_code": 0, "end_time": 2.0}
    (finding,) = [
        f
        for f in run_findings(Ledger([], [], []), clean, probes, None)
        if f.code == "compiled_but_never_called"
    ]
    assert finding.title == (
        "torch.compile(Decoder) at serve.py:12 compiled nothing: "
        "the compiled module itself was never called"
    )
    assert finding.evidence == ["torch.compile(Decoder) at serve.py:12"]
    failed = run_findings(Ledger([], [], []), {"exit_code": 1, "end_time": 2.0}, probes, None)
    assert "compiled_but_never_called" not in [f.code for f in failed]
