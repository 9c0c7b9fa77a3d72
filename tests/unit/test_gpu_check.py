"""benchmarks/gpu_check.sh is written for a device this machine does not have: its dry run
applies the same assertions to GPU traces recorded by others (../shared/corpus/gpu-profiles),
so what it parses is tested before a GPU is lent. Without a GPU and without --dry-run it says
so in one line and exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.corpus

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.sh"


def test_the_gpu_check_s_assertions_hold_on_the_recorded_traces() -> None:
    done = subprocess.run([str(SCRIPT), "--dry-run"], capture_output=True, text=True,
                          timeout=300, env={"PY": sys.executable, "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("ok    item (recorded): dtoh_sync: 76 syncs")
    assert (
        lines[1] == "ok    cudagraphs (recorded): cudagraphs: 70 replays, all in compiled regions"
    )


def test_without_a_gpu_it_says_so() -> None:
    pytest.importorskip("torch")
    done = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=120,
                          env={"PY": sys.executable, "PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 2 and "no CUDA device here" in done.stderr
