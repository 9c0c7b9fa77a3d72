"""Load what a command explains: a bare TORCH_TRACE log or directory, or a run directory."""

from __future__ import annotations

from pathlib import Path

from pt2doctor.errors import UsageError
from pt2doctor.rundir import TRACE_DIR
from pt2doctor.rundir.read import is_run_dir, load_manifest, load_probes
from pt2doctor.trace import find_trace_logs
from pt2doctor.trace.collect import collect_run
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
    return run
