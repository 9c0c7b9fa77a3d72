"""The raw steady-state samples behind a check report's latency charts.

A check report's ``variants[].groups[].samples`` names the group's samples.jsonl (one line per
timed part: ``{iteration, cell, kind: eager|compiled, part, seconds}``). The chart shows the
distribution of per-iteration totals (all parts of one iteration summed), the same quantity the
report's percentiles describe (check/statistics.py ``steady_summary``). Files are read here, at
the edge; the view-model builders get the numbers. A file that is gone (a report copied without
its run directory) only means the chart falls back to the percentiles.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePath
from typing import Any

from pt2doctor.check.statistics import iteration_totals
from pt2doctor.rundir.read import read_jsonl

Report = dict[str, Any]
# group key (latency_key) -> {"eager": [s, ...], "compiled": [s, ...]} per iteration.
Latencies = dict[str, dict[str, list[float]]]


def latency_key(variant_index: int, group_index: int) -> str:
    """A group's key by position (``"0/1"``): the same in a --redact copy, whose paths differ."""
    return f"{variant_index}/{group_index}"


def samples_file(recorded: str, run_dir: Path | None = None) -> Path | None:
    """Where a group's samples are: as recorded, else at the same place under ``run_dir`` (a
    run directory moved or copied: the recorded path starts with the old one)."""
    path = Path(recorded)
    if path.is_file():
        return path
    parts = PurePath(recorded).parts
    if run_dir is None or "groups" not in parts:
        return None
    tail = parts[len(parts) - 1 - parts[::-1].index("groups") :]
    moved = run_dir.joinpath(*tail)
    return moved if moved.is_file() else None


def load_latencies(report: Mapping[str, Any], run_dir: Path | None = None) -> Latencies:
    """Per-iteration totals of every group whose samples file can still be read."""
    found: Latencies = {}
    for v, variant in enumerate(report.get("variants", [])):
        for g, group in enumerate(variant.get("groups", [])):
            recorded = group.get("samples")
            path = samples_file(recorded, run_dir) if recorded else None
            records = read_jsonl(path) if path is not None else None
            if records:
                found[latency_key(v, g)] = {
                    kind: [round(t, 9) for t in totals]
                    for kind, totals in iteration_totals(records).items()
                }
    return found
