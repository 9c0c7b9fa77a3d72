"""Find the TORCH_TRACE logs behind a path: one file, a directory of per-rank logs, a run dir."""

from __future__ import annotations

from pathlib import Path

from pt2doctor.errors import UsageError
from pt2doctor.trace.reader import GLOG_PREFIX, rank_from_filename

_SNIFF_BYTES = 64 << 10


def _sniff(path: Path) -> str | None:
    """Why ``path`` is not a trace log (None when its first 64 KiB hold a glog trace line)."""
    try:
        with path.open("rb") as stream:
            head = stream.read(_SNIFF_BYTES)
    except OSError as error:
        return f"cannot read {path}: {error.strerror}"
    if not head:
        return f"{path} is empty"
    if b"\0" in head:
        return f"{path} is a binary file, not a TORCH_TRACE log"
    for line in head.splitlines():
        match = GLOG_PREFIX.match(line)
        if match and line[match.end() :].lstrip().startswith(b"{"):
            return None
    return f"{path} has no TORCH_TRACE records (expected glog lines with a JSON envelope)"


def _sort_key(path: Path) -> tuple[int, str]:
    rank = rank_from_filename(path)
    return (rank if rank is not None else -1, path.name)


def find_trace_logs(path: Path) -> list[Path]:
    """The trace logs at ``path``, per-rank files ordered by rank.

    A directory is searched for files that look like trace logs (decoys such as empty files or
    other text are skipped); a run directory's logs are under ``trace/``. Raises
    :class:`UsageError` (exit 2) with a one-line reason when nothing readable is there.
    """
    if not path.exists():
        raise UsageError(f"no such file or directory: {path}")
    if path.is_file():
        reason = _sniff(path)
        if reason is not None:
            raise UsageError(reason)
        return [path]
    if not path.is_dir():
        raise UsageError(f"{path} is neither a regular file nor a directory")
    if (path / "trace").is_dir():
        path = path / "trace"
    candidates = sorted((p for p in path.iterdir() if p.is_file()), key=_sort_key)
    logs = [p for p in candidates if _sniff(p) is None]
    if not logs:
        raise UsageError(f"no TORCH_TRACE logs in directory {path}")
    return logs
