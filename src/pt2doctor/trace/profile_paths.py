"""Which inputs are profiler (Chrome/Kineto) traces, by their names: asked of every path
``report`` and ``diff`` are given, so it imports nothing that reads or analyses a trace."""

from __future__ import annotations

from pathlib import Path

TRACE_SUFFIXES = (".json", ".json.gz", ".gz")


def is_profile_trace(path: Path) -> bool:
    """A profiler (Chrome/Kineto) trace by its name, or a directory holding only those."""
    if path.is_dir():
        files = [p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")]
        return bool(files) and all(p.name.endswith(TRACE_SUFFIXES) for p in files)
    return path.is_file() and path.name.endswith(TRACE_SUFFIXES)


def trace_paths(path: Path) -> list[Path]:
    """The traces ``path`` names: itself, or a directory's trace files in name order."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith(TRACE_SUFFIXES))
    return [path]
