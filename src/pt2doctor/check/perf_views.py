"""Check report sections about time and memory, per compile variant side by side: cold start
(empty vs warm compile cache), warmup, steady-state latency and speedup, and the compiles that
happened after warmup. Builders of check/views.py ``CHECK_SECTIONS``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pt2doctor.check.samples import Latencies, latency_key
from pt2doctor.check.types import CheckReport, Distribution, GroupRow, Steady, VariantRow
from pt2doctor.report.format import cut, frame_name, ms_value, source_where
from pt2doctor.report.sections import Section

Report = CheckReport
CACHE_STATES = ("empty_cache", "warm_cache")
_SIDES: tuple[Literal["eager", "compiled"], ...] = ("eager", "compiled")


def _group_label(variant: VariantRow, group: GroupRow) -> str:
    return cut(f"{variant['name']} {group['group']}", 160)


def _groups(report: Report) -> list[tuple[VariantRow, GroupRow]]:
    return [(v, g) for v in report["variants"] if v["applicable"] for g in v["groups"]]


def _keyed_groups(report: Report) -> list[tuple[VariantRow, GroupRow, str]]:
    """Groups of variants that ran, with their latency key."""
    return [
        (variant, group, latency_key(v, g))
        for v, variant in enumerate(report["variants"])
        if variant["applicable"]
        for g, group in enumerate(variant["groups"])
    ]


def _cache(cache: dict[str, Any] | None) -> str:
    """``fx_graph 1 hit, 0 miss; aotautograd ...`` from a compile summary's cache counts."""
    parts = []
    for name, counts in sorted((cache or {}).items()):
        shown = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
        parts.append(f"{name} {shown}" if shown else name)
    return "; ".join(parts) or "-"


def _memory(memory: dict[str, Any] | None) -> Any:
    memory = memory or {}
    return memory.get("cuda_reserved_mb") or memory.get("peak_rss_mb")


def cold_start(report: Report, latencies: Latencies) -> Section | None:
    """Per variant, a fresh process with an empty then a warm compile cache: time to the
    first result, compile time, cache hits and misses, peak memory."""
    rows = []
    for variant in report["variants"]:
        for state in CACHE_STATES:
            cold = variant["cold_start"].get(state)
            if cold is None:
                continue
            rows.append(
                {
                    "variant": variant["name"],
                    "case": cut(variant["case"]),
                    "cache_state": state.replace("_", " "),
                    "first_result_s": cold.get("first_result_s"),
                    "compile_time_s": cold.get("compile_time_s"),
                    "compiles": cold.get("compiles"),
                    "cache": _cache(cold.get("cache")),
                    "peak_memory_mb": _memory(cold.get("memory")),
                    "error": cut(cold.get("error")),
                }
            )
    if not rows:
        return None
    return Section("cold", "Cold start (fresh process)", "check_cold", {"rows": rows})


def frame_place(frame: Mapping[str, Any]) -> str:
    """``file:line`` of a frame or a compile of it; '' when its display name already says where
    (a wrapped method: ``... (through transformers' wrapper at utils/generic.py:1030)``)."""
    if frame.get("through"):
        return ""
    return cut(f"{frame.get('file')}:{frame.get('line')}", 200)


def warmup(report: Report, latencies: Latencies) -> Section | None:
    """Per variant and group: warmup seconds, per cell, and the most variants of one frame."""
    rows = [
        {
            "where": _group_label(variant, group),
            "seconds": group["warmup"].get("seconds"),
            "per_cell": [
                {"cell": cut(cell, 160), "seconds": seconds}
                for cell, seconds in group["warmup"]["per_cell"].items()
            ],
            "max_variants_per_frame": group["max_variants_per_frame"],
            "frames": [
                {
                    "function": frame_name(f),
                    "where": frame_place(f),
                    "variants": f["variants"],
                }
                for f in group.get("frames", [])
            ],
            "compiles": group.get("compiles"),
            "compile_time_s": group.get("compile_time_s"),
            "peak_memory_mb": _memory(group.get("memory")),
        }
        for variant, group in _groups(report)
    ]
    if not rows:
        return None
    return Section("warmup", "Warmup", "check_warmup", {"rows": rows})


def _latency_rows(report: Report, latencies: Latencies) -> list[dict[str, Any]]:
    """Chart rows: eager and compiled per group, raw per-iteration values when the samples are
    there, else the percentiles."""
    rows = []
    for variant, group, key in _keyed_groups(report):
        steady: Steady = group.get("steady") or {}
        raw = latencies.get(key, {})
        for kind in _SIDES:
            dist = steady.get(kind)
            if not dist:
                continue
            rows.append(
                {
                    "label": cut(f"{_group_label(variant, group)} {kind}", 60),
                    "compiled": kind == "compiled",
                    "values_ms": [ms_value(v) for v in raw.get(kind, [])],
                    "p50_ms": ms_value(dist["p50_s"]),
                    "p95_ms": ms_value(dist["p95_s"]),
                    "p99_ms": ms_value(dist["p99_s"]),
                }
            )
    return rows


def _speedup(steady: Steady) -> dict[str, Any] | None:
    if steady.get("speedup") is None:
        return None
    low, high = steady.get("speedup_ci95") or (None, None)
    return {"value": steady["speedup"], "low": low, "high": high}


def _percentiles_ms(dist: Distribution | None) -> dict[str, float | None]:
    dist = dist or {}
    return {
        "p50": ms_value(dist.get("p50_s")),
        "p95": ms_value(dist.get("p95_s")),
        "p99": ms_value(dist.get("p99_s")),
    }


def _why(profile: dict[str, Any] | None) -> str | None:
    """The profiled explanation of the speedup (``check --profile``), or why there is none."""
    if not profile:
        return None
    if not profile.get("available"):
        return f"no profile: {profile.get('error')}"
    return str(profile["statement"])


def steady_state(report: Report, latencies: Latencies) -> Section | None:
    """Latency distributions (eager vs compiled) and speedup with its 95% interval per variant
    and group; the noise warnings that say how far to trust them."""
    rows: list[dict[str, Any]] = []
    for variant, group, key in _keyed_groups(report):
        steady: Steady = group.get("steady") or {}
        rows.append(
            {
                "where": _group_label(variant, group),
                "iterations": steady.get("iterations", 0),
                "eager": _percentiles_ms(steady.get("eager")),
                "compiled": _percentiles_ms(steady.get("compiled")),
                "speedup": _speedup(steady),
                "noise_warnings": [cut(w) for w in steady.get("noise_warnings", [])],
                "error": cut(group.get("error")),
                "raw": bool(latencies.get(key)),
                "why": _why(group.get("profile")),
            }
        )  # fmt: skip
    if not rows:
        return None
    charts = []
    latency_rows = _latency_rows(report, latencies)
    if latency_rows:
        charts.append({"kind": "latency", "title": "steady-state latency per iteration",
                       "xlabel": "ms per iteration", "rows": latency_rows})  # fmt: skip
    speedups = [(r["where"], r["speedup"]) for r in rows if r["speedup"]]
    if speedups:
        charts.append({"kind": "speedup", "title": "speedup (eager / compiled) with 95% interval",
                       "xlabel": "speedup (x)",
                       "rows": [{"label": cut(w, 60), **s} for w, s in speedups]})  # fmt: skip
    return Section("steady", "Steady state", "check_steady", {"rows": rows}, charts)


def late_compiles(report: Report, latencies: Latencies) -> Section | None:
    """Compiles after warmup (warmup did not cover every variant), each with its failed guards."""
    rows = [
        {
            "where": _group_label(variant, group),
            "compile_id": late.get("compile_id"),
            "function": frame_name(late),
            "source": frame_place(late),
            "guards": [
                {
                    "category": guard["category"],
                    "text": cut(guard["text"]),
                    "source": cut(source_where(guard.get("source")), 200),
                    "code": cut((guard.get("source") or {}).get("code")),
                }
                for guard in late.get("failed_guards", [])
            ],
        }
        for variant, group in _groups(report)
        for late in group.get("late_compiles", [])
    ]
    if not rows:
        return None
    return Section("late", "Recompiles after warmup", "check_late", {"rows": rows})
