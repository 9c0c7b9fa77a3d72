"""Load what a command explains: a bare TORCH_TRACE log or directory, or a run directory."""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from pt2doctor.errors import UsageError
from pt2doctor.rundir import (
    FUSION_LOG,
    PROFILE_DIR,
    PROFILE_TRACE,
    PROFILE_WINDOW,
    STDOUT_LOG,
    TRACE_DIR,
    TRIES_DIR,
    TRIES_INDEX,
)
from pt2doctor.rundir.read import is_run_dir, load_manifest, load_probes
from pt2doctor.trace import find_trace_logs
from pt2doctor.trace.collect import collect_run
from pt2doctor.trace.fusion_log import Scheduling, parse_fusion_log
from pt2doctor.trace.types import ProfileCapture, Run, Try


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
    run.profile = load_profile(path)
    if run.profile is None and (run.manifest or {}).get("profile_calls"):
        run.profile = ProfileCapture({}, None, str(path / PROFILE_DIR / PROFILE_TRACE), NO_WINDOW)
    run.tries = load_tries(path)
    run.tries_asked = (path / TRIES_DIR / TRIES_INDEX).is_file()
    run.stdout = _printed(path / STDOUT_LOG)
    return run


def _printed(path: Path) -> str | None:
    try:
        with path.open("rb") as stream:
            return stream.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return None


def load_tries(path: Path) -> list[Try]:
    """The re-runs of ``run --try-fixes`` (tries/index.json), each loaded; a try whose run
    directory is missing or unreadable is left out."""
    try:
        index = orjson.loads((path / TRIES_DIR / TRIES_INDEX).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return []
    tries = []
    for item in index if isinstance(index, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("n"), int):
            continue
        folder = path / TRIES_DIR / str(item["n"])
        if not is_run_dir(folder) or not isinstance(item.get("trial"), dict):
            continue
        tries.append(Try(item["n"], item["trial"], load_run(folder)))
    return tries


NO_WINDOW = (
    "the window never opened: no compiled graph was called --warmup-calls times with no "
    "compile since its previous call (the program ended first, or kept compiling): run more "
    "steps, or lower --warmup-calls"
)


def load_profile(path: Path) -> ProfileCapture | None:
    """The profiled window of a run directory (``run --profile``); None when it has none."""
    folder = path / PROFILE_DIR
    if not folder.is_dir():
        return None
    trace_path = folder / PROFILE_TRACE
    try:
        window = orjson.loads((folder / PROFILE_WINDOW).read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        return ProfileCapture({}, None, str(trace_path), f"no window description: {error}")
    if not isinstance(window, dict):
        return ProfileCapture({}, None, str(trace_path), "window.json is not an object")
    from pt2doctor.trace.chrome import read_chrome_trace  # (a run profiled: rare)

    try:
        trace = read_chrome_trace(trace_path)
    except (OSError, ValueError) as error:
        return ProfileCapture(window, None, str(trace_path), f"cannot read the trace: {error}")
    return ProfileCapture(window, trace, str(trace_path))


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
