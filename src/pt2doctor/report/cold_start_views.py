"""The HTML cold-start section: the verdict, compile time per frame split into phases (a
chart), the cache lookups, the warm-start estimate and the advice. Formats ``cold_start``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pt2doctor.analysis.coldstart.explain import PHASE_LABELS, phases_in_order
from pt2doctor.report.format import warm_start_estimate
from pt2doctor.report.sections import Section

Report = Mapping[str, Any]
# Frames charted and listed, slowest first (the JSON keeps them all).
MAX_FRAMES = 20


def _frame_label(row: dict[str, Any]) -> str:
    """``Model.forward (file.py:12)``: the frame as the report names it; a wrapper's is
    ``GPT2LMHeadModel.forward (through transformers' wrapper at ...)`` as it stands."""
    name = str(row.get("file") or "").rsplit("/", 1)[-1]
    shown = str(row.get("display_name") or row.get("function"))
    label = shown if "(through " in shown else f"{shown} ({name}:{row.get('line')})"
    return label if len(label) <= 60 else label[:59] + "…"


def cold_start(report: Report) -> Section | None:
    """Where compile time went and what the next start costs (None: nothing compiled)."""
    section = report.get("cold_start")
    if not section or not report["compiles"]:
        return None
    frames = section["frames"][:MAX_FRAMES]
    rows = [
        {"label": _frame_label(row), "start": 0.0, "duration": row["compile_s"],
         "phases": dict(phases_in_order(row["phases"]))}
        for row in frames
    ]  # fmt: skip
    chart = {
        "kind": "timeline",
        "title": "compile time per frame, by phase",
        "xlabel": "seconds compiling",
        "rows": rows,
    }
    data = {
        "verdict": section["verdict"],
        "compile_s": section["compile_s"],
        "wall_s": section["wall_s"],
        "share": section["share"],
        "warm_estimate_s": warm_start_estimate(section),
        "lookups": section["lookups"],
        "bypass_reasons": section["bypass_reasons"],
        "phases": [
            {"phase": PHASE_LABELS.get(key, key), "seconds": value}
            for key, value in phases_in_order(section["phases"])
        ],
        "frames": [
            {
                "label": row["label"],
                "compile_s": row["duration"],
                "compiles": frame["compiles"],
                "cache_misses": frame["cache_misses"],
            }
            for row, frame in zip(rows, frames, strict=True)
        ],
        "advice": section["advice"],
    }
    return Section("cold_start", "Cold start", "cold_start", data, [chart] if rows else [])
