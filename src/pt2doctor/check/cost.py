"""Where ``check``'s own wall time goes: per worker launch, from the timestamps of the events
it wrote, and summed into the check report's ``cost``.

A check spends most of its time starting processes (a Python with torch imported: ~3-5 s on
2 CPU cores), running each cell eagerly twice and in float64 for the reference, compiling for
alignment (Dynamo is reset per cell), compiling again in the group's warmup, then measuring.
``ratio`` divides the wall time by what a user would pay anyway (compiling once and measuring):
it says how much the protocol costs on top. Pure functions of events and records.
"""

from __future__ import annotations

from typing import Any

from pt2doctor.analysis.text import counted

PARTS = (
    "process_start_s",
    "align_build_s",
    "align_eager_s",
    "fp64_reference_s",
    "align_compile_s",
    "warmup_s",
    "measure_s",
    "cold_start_s",
)


def _between(events: list[dict[str, Any]], start: Any, end: Any) -> float:
    """Sum of the spans from each event matching ``start`` to the next one matching ``end``."""
    total, opened = 0.0, None
    for event in events:
        if opened is None and start(event):
            opened = event["t"]
        elif opened is not None and end(event):
            total += event["t"] - opened
            opened = None
    return total


def _align_seconds(events: list[dict[str, Any]], part: str) -> float:
    return sum(
        float((event.get("seconds") or {}).get(part) or 0.0)
        for event in events
        if event["event"] == "alignment"
    )


def launch_cost(
    kind: str, spawned: float, ended: float, events: list[dict[str, Any]]
) -> dict[str, Any]:
    """Seconds of one worker launch by part; ``other_s`` is what no event accounts for
    (interpreter exit, the parent's polling, a crash)."""
    timed = [event for event in events if isinstance(event.get("t"), (int, float))]
    first = timed[0]["t"] if timed else ended
    cost = {part: 0.0 for part in PARTS}
    cost["wall_s"] = max(ended - spawned, 0.0)
    if kind == "cold":
        cost["cold_start_s"] = cost["wall_s"]
    else:
        cost["process_start_s"] = max(first - spawned, 0.0)
        cost["align_build_s"] = _align_seconds(timed, "build")
        cost["align_eager_s"] = _align_seconds(timed, "eager")
        cost["fp64_reference_s"] = _align_seconds(timed, "fp64_reference")
        cost["align_compile_s"] = _align_seconds(timed, "compiled")
        cost["warmup_s"] = _between(
            timed,
            lambda e: e["event"] == "cell_start" and e.get("phase") == "warmup",
            lambda e: e["event"] in ("warmup_done", "done"),
        )
        cost["measure_s"] = _between(
            timed,
            lambda e: e["event"] == "cell_start" and e.get("phase") == "steady",
            lambda e: e["event"] in ("steady_done", "done"),
        )
        compile_s = [e.get("compile_time_s") for e in timed if e["event"] == "steady_done"]
        cost["warmup_compile_s"] = float(compile_s[0] or 0.0) if compile_s else 0.0
    accounted = sum(cost[part] for part in PARTS)
    cost["other_s"] = max(cost["wall_s"] - accounted, 0.0)
    return {key: round(value, 6) for key, value in cost.items()}


def _command_seconds(records: list[dict[str, Any]]) -> float | None:
    """The check command's wall time up to its last worker: from the ``started`` of its settings
    record to the ``t`` of its ``finished`` one (None for an interrupted or older check)."""
    started = next((r.get("started") for r in records if r.get("record") == "settings"), None)
    ended = next((r.get("t") for r in records if r.get("record") == "finished"), None)
    if not isinstance(started, (int, float)) or not isinstance(ended, (int, float)):
        return None
    return max(float(ended) - float(started), 0.0)


def check_cost(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The check report's ``cost``: every launch's parts summed, the launches, the parent
    process's own time, and the ratio of wall time to compile-plus-measure time (None before
    any launch was recorded)."""
    launches = [record for record in records if record.get("record") == "cost"]
    if not launches:
        return None
    keys = [*PARTS, "other_s", "wall_s", "warmup_compile_s"]
    total = {key: round(sum(float(r.get(key) or 0.0) for r in launches), 6) for key in keys}
    # What a user pays anyway: compiling once (the groups' warmup compiles) and measuring.
    useful = total["warmup_compile_s"] + total["measure_s"]
    command_s = _command_seconds(records)
    return {
        **total,
        "command_s": None if command_s is None else round(command_s, 6),
        "parent_s": None if command_s is None else round(max(command_s - total["wall_s"], 0), 6),
        "compile_s": total["warmup_compile_s"],
        "launches": len(launches),
        "ratio": round(total["wall_s"] / useful, 3) if useful else None,
    }


COST_LABELS = {
    "process_start_s": "process starts",
    "align_build_s": "building models",
    "align_eager_s": "eager runs",
    "fp64_reference_s": "fp64 references",
    "align_compile_s": "alignment compiles",
    "warmup_s": "warmup (compiles)",
    "measure_s": "measurement",
    "cold_start_s": "cold starts",
    "other_s": "other",
}


def cost_line(cost: dict[str, Any]) -> str:
    """``check took 45.3 s: its own process 6.2 s (...), worker 6 processes 39.1 s: process
    starts 14.2 s, ...; 4.1x its compile and measure time``: the parts over 0.05 s, largest
    first."""
    parts = sorted(
        ((label, float(cost.get(key) or 0.0)) for key, label in COST_LABELS.items()),
        key=lambda item: -item[1],
    )
    shown = ", ".join(f"{label} {seconds:.1f} s" for label, seconds in parts if seconds >= 0.05)
    processes = counted(cost["launches"], "process")
    line = f"check took {cost['wall_s']:.1f} s over {processes}: {shown}"
    if cost.get("command_s") is not None:
        line = (f"check took {cost['command_s']:.1f} s: its own process {cost['parent_s']:.1f} s "
                f"(loading the cases, planning, between workers), worker {processes} "
                f"{cost['wall_s']:.1f} s: {shown}")  # fmt: skip
    if cost.get("ratio") is not None:
        line += (f"; {cost['ratio']:.1f}x its compile ({cost['compile_s']:.1f} s) and "
                 f"measure ({cost['measure_s']:.1f} s) time")  # fmt: skip
    return line
