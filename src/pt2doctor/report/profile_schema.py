"""``report["profile"]``: where the profiled window's time went (``run --profile``), written
from the analysis of the window (analysis/time/analyse.py ``ProfileResult``).

All times are milliseconds per call of the hot loop: the window's wall time divided by the
calls of the hot graph it holds, so a region called 12 times a step shows 12 calls' worth.
"""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.time.analyse import ProfileResult
from pt2doctor.analysis.time.profile import ProfileView
from pt2doctor.trace.types import SourceLine

MAX_KERNELS = 60
"""Kernel rows kept in the report, the slowest first."""
MAX_EAGER_LINES = 10
"""The user's lines of the eager op time kept in the report, the most first."""


def _line(site: SourceLine | None) -> dict[str, Any] | None:
    return None if site is None else site.as_dict()


def _round(ms: float) -> float:
    return round(ms, 6)


def _section(
    view: ProfileView, trace_file: str, window: dict[str, Any], names: dict[str, str]
) -> dict[str, Any]:
    per = view.per_call
    wall = view.wall_us
    return {
        "available": True,
        "window": {
            "calls": view.calls,
            "wall_ms": _round(wall / 1000.0),
            "ms_per_call": _round(per(wall)),
            "hot_compile_id": view.hot_compile_id,
            "closed_by": window.get("closed_by"),
            "compiles_in_window": window.get("compiles_in_window", 0),
            "noise": window.get("noise"),
            "other_windows": window.get("other_windows") or [],
        },
        "compiled_share": round(view.compiled_us / wall, 4) if wall > 0 else None,
        "outside": [
            {
                "site": _line(item.site),
                "compile_id": item.compile_id,
                "ms_per_call": _round(per(item.us)),
                **(
                    {"resumed_guards_ms": _round(per(item.resumed_guards_us))}
                    if item.resumed_guards_us
                    else {}
                ),
            }
            for item in view.outside
        ],
        "regions": [
            {
                "compile_id": region.compile_id,
                "display_name": names.get(region.compile_id),
                "part": region.part,
                "calls": region.calls,
                "ms_per_call": _round(per(region.us)),
                "kernels_ms": _round(per(region.kernels_us)),
                "library_ms": _round(per(region.library_us)),
                "fallback_ms": _round(per(region.fallback_us)),
                "overhead_ms": _round(per(region.overhead_us)),
                "guards_ms": _round(per(region.guards_us)),
            }
            for region in view.regions
        ],
        "kernels": [
            {
                "compile_id": kernel.compile_id,
                "part": kernel.part,
                "name": kernel.name,
                "kind": kernel.kind,
                "ms_per_call": _round(per(kernel.us)),
                "share": round(kernel.us / wall, 4) if wall > 0 else None,
                "launches": kernel.launches,
                "ops": list(kernel.ops),
                "user_lines": [
                    {"file": u.file, "line": u.line, "code": u.code} for u in kernel.user_lines
                ],
            }
            for kernel in view.kernels[:MAX_KERNELS]
        ],
        "more_kernels": max(len(view.kernels) - MAX_KERNELS, 0),
        "eager_ops": [
            {"name": name, "ms_per_call": _round(per(us))} for name, us in view.eager_ops[:10]
        ],
        "trace_file": trace_file,
        "notes": list(view.notes),
    }


def profile_section(result: ProfileResult) -> dict[str, Any]:
    """``report["profile"]``: the window's time split, or why there is none."""
    if result.view is None:
        return {"available": False, "error": result.error, "trace_file": result.trace_file}
    section = _section(result.view, result.trace_file or "", result.window, result.names)
    section["notes"] = list(result.notes)
    per = result.view.per_call
    section["eager_lines"] = [
        {"file": line.file, "line": line.line, "function": line.function,
         "ms_per_call": _round(per(us)), "samples": line.samples, "share": round(line.share, 4)}
        for line, us in result.eager_lines[:MAX_EAGER_LINES]
    ]  # fmt: skip
    section["skipped_frames"] = [
        {"frame": frame.where, "file": frame.file, "line": frame.line,
         "function": frame.function, "ms_per_call": _round(per(us)),
         "share": round(frame.share, 4)}
        for frame, us in result.skipped_frames
    ]  # fmt: skip
    if result.device is not None:  # a GPU run: the window's device side
        section["device"] = result.device.as_dict()
    return section
