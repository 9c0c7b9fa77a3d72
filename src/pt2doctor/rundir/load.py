"""Load what a command explains: a bare TORCH_TRACE log or directory, or a run directory."""

from __future__ import annotations

import re
from pathlib import Path

from pt2doctor.errors import UsageError
from pt2doctor.rundir import FUSION_LOG, TRACE_DIR
from pt2doctor.rundir.read import is_run_dir, load_manifest, load_probes
from pt2doctor.trace import find_trace_logs
from pt2doctor.trace.collect import collect_run
from pt2doctor.trace.fusion_log import Scheduling, parse_fusion_log
from pt2doctor.trace.types import Run


def load_run(path: Path) -> Run:
    """The typed Run behind ``path``; a run directory adds its manifest and probes (and may
    have no trace at all, e.g. when the program failed before compiling anything)."""
    if not is_run_dir(path):
        return collect_run(find_trace_logs(path))
    try:
        logs = find_trace_logs(path / TRACE_DIR)
    except UsageError:
        logs = []
    run = collect_run(logs)
    run.manifest = load_manifest(path)
    run.probes = load_probes(path)
    run.fusion = load_fusion_logs(path)
    return run


_RANK_LOG = re.compile(r"^fusion\.rank(\d+)\.log$")


def load_fusion_logs(path: Path) -> dict[tuple[int | None, str], list[Scheduling]] | None:
    """The run's fusion logs by (rank, compile id); None when it kept none."""
    logs = sorted(path.glob("fusion*.log"))
    found: dict[tuple[int | None, str], list[Scheduling]] = {}
    kept = False
    for log in logs:
        rank_match = _RANK_LOG.match(log.name)
        if log.name != FUSION_LOG and rank_match is None:
            continue
        kept = True
        rank = int(rank_match[1]) if rank_match else None
        with log.open(encoding="utf-8", errors="replace") as lines:
            for compile_id, schedulings in parse_fusion_log(lines).items():
                found[(rank, compile_id)] = schedulings
    return found if kept else None
