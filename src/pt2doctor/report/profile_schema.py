"""``report["profile"]``: where the profiled window's time went (``run --profile``), and the
findings it supports.

All times are milliseconds per call of the hot loop: the window's wall time divided by the
calls of the hot graph it holds, so a region called 12 times a step shows 12 calls' worth.
"""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.breaks.sites import GraphBreakSite, user_caller
from pt2doctor.analysis.findings.model import Finding
from pt2doctor.analysis.findings.trace_findings import frame_where, resume_label
from pt2doctor.analysis.recompiles.frame_names import display_name
from pt2doctor.analysis.recompiles.ledger import FrameEntry, Ledger
from pt2doctor.analysis.text import counted
from pt2doctor.analysis.time.findings import BreakContext, profile_findings
from pt2doctor.analysis.time.profile import ProfileView, profile_view
from pt2doctor.trace.chrome import ChromeTrace
from pt2doctor.trace.types import Run, SourceLine

LARGE_TRACE_BYTES = 20_000_000
"""A window's trace above this gets a note (about 2.4 KB per kernel launch per call)."""
MAX_KERNELS = 60
"""Kernel rows kept in the report, the slowest first."""
NOT_COMPARABLE = (
    "a profiled run compiles with provenance and kernel profiling on, which are part of "
    "Inductor's cache key and compile every graph afresh: its cold start is not comparable "
    "with an unprofiled run's"
)


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
        },
        "compiled_share": round(view.compiled_us / wall, 4) if wall > 0 else None,
        "outside": [
            {
                "site": _line(item.site),
                "compile_id": item.compile_id,
                "ms_per_call": _round(per(item.us)),
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
        "notes": [*view.notes, NOT_COMPARABLE],
    }


def _region_name(frame: FrameEntry) -> str:
    """The frame's name; a resume frame's as the part of its function after the break."""
    return resume_label(frame.function) or display_name(frame)


def unavailable(trace_file: str | None, why: str) -> dict[str, Any]:
    return {"available": False, "error": why, "trace_file": trace_file}


def add_profile(
    report: dict[str, Any], run: Run, ledger: Ledger, sites: list[GraphBreakSite]
) -> list[Finding]:
    """Fill ``report["profile"]`` from the run's profiled window; return its findings."""
    capture = run.profile
    if capture is None:
        return []
    if not isinstance(capture.trace, ChromeTrace):
        report["profile"] = unavailable(capture.path, capture.error or "no trace")
        return []
    window = capture.window
    calls = window.get("calls")
    if not isinstance(calls, int) or calls <= 0:
        why = "the window holds no complete call of the hot graph"
        if window.get("closed_by") == "exit":
            why += (
                f": the program ended right after warmup (--warmup-calls "
                f"{window.get('warmup_calls')}); run more steps, or lower --warmup-calls"
            )
        report["profile"] = unavailable(capture.path, why)
        return []
    names: dict[str, str] = {}
    for frame in ledger.frames:
        for entry in frame.compiles:
            names[entry.compile_id] = _region_name(frame)
    builts = {entry.compile_id: entry.record.built for entry in ledger.compiles}
    # A break in library code is shown at the user's line that led there (the LR scheduler's
    # wrapper of optimizer.step: at the user's opt.step()), and one by design says so.
    break_sites: dict[str, SourceLine] = {}
    context: dict[str, BreakContext] = {}
    for site in sites:
        caller = user_caller(site)
        for cid in site.compile_ids:
            break_sites[cid] = caller or site.site
            context[cid] = BreakContext(site.by_design, None if caller is None else site.site)
    graphless = {
        e.compile_id
        for e in ledger.compiles
        if e.record.built is None or e.record.built.graph is None or not e.record.built.graph.lines
    }
    kernel_events = True if window.get("kernel_profile", True) else None
    view = profile_view(
        capture.trace,
        calls,
        window.get("hot_compile_id"),
        builts,
        break_sites,
        graphless,
        kernel_events,
    )
    section = _section(view, capture.path, window, names)
    compiles = window.get("compiles_in_window") or 0
    if compiles:
        section["notes"].insert(
            0,
            f"{counted(compiles, 'compile')} ran inside the window: their time is counted "
            "outside the regions",
        )
    size = window.get("trace_bytes")
    if isinstance(size, int) and size > LARGE_TRACE_BYTES:
        section["notes"].append(
            f"the Chrome trace is {size / 1e6:.0f} MB: Perfetto opens it slowly; "
            "--profile-calls fewer keeps it smaller"
        )
    report["profile"] = section
    skipped = [frame_where(frame) for frame in ledger.frames if frame.skipped]
    device = "cuda" if "kernel" in capture.trace.categories else "cpu"
    if device == "cuda":
        section["notes"].append(
            "on CUDA the split is of host-side time (launches); device kernel time is in the "
            "Chrome trace"
        )
    return profile_findings(view, names, skipped, device, context)
