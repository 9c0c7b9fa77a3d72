"""The raw steady-state samples behind a check report's latency charts.

A check report's ``variants[].groups[].samples`` names the group's samples.jsonl (one line per
timed part: ``{iteration, cell, kind: eager|compiled, part, seconds}``). The chart shows the
distribution of per-iteration totals (all parts of one iteration summed), the same quantity the
report's percentiles describe (analysis/bench.py ``steady_summary``). Files are read here, at
the edge; the view-model builders get the numbers. A file that is gone (a report copied without
its run directory) only means the chart falls back to the percentiles.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import Any

import orjson

Report = dict[str, Any]
# group key (latency_key) -> {"eager": [s, ...], "compiled": [s, ...]} per iteration.
Latencies = dict[str, dict[str, list[float]]]


def latency_key(variant_index: int, group_index: int) -> str:
    """A group's key by position (``"0/1"``): the same in a --redact copy, whose paths differ."""
    return f"{variant_index}/{group_index}"


def iteration_totals(samples: Iterable[dict[str, Any]]) -> dict[str, list[float]]:
    """Seconds per iteration for eager and compiled (iterations where both ran)."""
    totals: dict[str, dict[int, float]] = {"eager": {}, "compiled": {}}
    for sample in samples:
        per_kind = totals.get(str(sample.get("kind")))
        if per_kind is None or sample.get("seconds") is None:
            continue
        iteration = int(sample["iteration"])
        per_kind[iteration] = per_kind.get(iteration, 0.0) + float(sample["seconds"])
    both = sorted(set(totals["eager"]) & set(totals["compiled"]))
    return {kind: [round(values[i], 9) for i in both] for kind, values in totals.items()}


def _read_jsonl(path: Path) -> list[dict[str, Any]] | None:
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    records = []
    for line in lines:
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError:
            continue  # a line cut short by a crash
    return records


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


def load_latencies(report: Report, run_dir: Path | None = None) -> Latencies:
    """Per-iteration totals of every group whose samples file can still be read."""
    found: Latencies = {}
    for v, variant in enumerate(report.get("variants", [])):
        for g, group in enumerate(variant.get("groups", [])):
            recorded = group.get("samples")
            path = samples_file(recorded, run_dir) if recorded else None
            records = _read_jsonl(path) if path is not None else None
            if records:
                found[latency_key(v, g)] = iteration_totals(records)
    return found
