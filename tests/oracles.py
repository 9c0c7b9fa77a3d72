"""Oracles independent of pt2doctor: a minimal reading of the raw TORCH_TRACE log, so tests
compare pt2doctor's report with the log itself, not with a stored copy of pt2doctor's output."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def raw_records(trace_dir: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """(envelope, payload) of every record of every log in ``trace_dir``."""
    for log in sorted(trace_dir.iterdir()):
        yield from raw_file_records(log)


def raw_file_records(log: Path) -> Iterator[tuple[dict[str, Any], str]]:
    """(envelope, payload) of every record: glog line ``... ] {json}`` plus tab-indented lines."""
    envelope: dict[str, Any] | None = None
    payload: list[str] = []
    for line in log.read_text().splitlines():
        if line.startswith("\t"):
            payload.append(line[1:])
            continue
        if not line and envelope is not None:  # a payload's blank line, written bare
            payload.append("")
            continue
        if envelope is not None:
            yield envelope, "\n".join(payload)
        envelope, payload = json.loads(line.split("] ", 1)[1]), []
    if envelope is not None:
        yield envelope, "\n".join(payload)


def marker_in(path: Path, marker: str) -> int:
    """The 1-based line of ``# MARK:<marker>`` in the file at ``path`` (exactly one)."""
    lines = path.read_text().splitlines()
    hits = [i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# MARK:{marker}")]
    assert len(hits) == 1, f"marker {marker!r} in {path.name}: {hits}"
    return hits[0]


def gone_within(pid: int, seconds: float = 10) -> bool:
    """Whether process ``pid`` is dead within ``seconds``, as /proc says (a zombie waiting for
    init to reap it is dead)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X") or time.monotonic() >= deadline:
            return state in ("Z", "X")
        time.sleep(0.05)


def doctor_report(
    run_dir: Path, program: Path, *flags: str, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """``pt2doctor run --out RUN_DIR FLAGS -- python PROGRAM`` in a real subprocess, with the
    test's environment less TORCH_* and PT2D_* (a program's switches) plus ``env``: its
    report.json (the run must exit 0)."""
    import os
    import subprocess
    import sys

    environ = {k: v for k, v in os.environ.items() if not k.startswith(("TORCH_", "PT2D_"))}
    environ.update(env or {})
    done = subprocess.run(
        [sys.executable, "-m", "pt2doctor", "run", "--out", str(run_dir), *flags, "--",
         sys.executable, str(program)],
        env=environ, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads((run_dir / "report.json").read_text())
    return report
