"""``pt2doctor report TRACE.json[.gz]``: a profiler trace the user already has, explained (the
report of kind ``profile``).

A trace, or a directory of them (one per rank), is read without torch
(trace/chrome.py), its device side analysed (analysis/time/device.py) and its findings made
(analysis/time/device_findings.py ``traces_findings``: nothing here makes or changes one). The report holds, per trace, the ``device`` section
(kernels by kind, steps, syncs, CUDA graphs, compiled regions, streams), and the findings and
plan every report kind has. Rendered here too: the terminal summary, report.md, report.html.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pt2doctor import __version__
from pt2doctor.analysis.findings.plan import plan
from pt2doctor.analysis.paths import shorten_paths
from pt2doctor.analysis.time.analyse import ProfileResult, trace_analysis
from pt2doctor.analysis.time.device import DeviceProfile, device_profile
from pt2doctor.analysis.time.device_findings import traces_findings
from pt2doctor.errors import UsageError
from pt2doctor.report.document import SCHEMA_VERSION
from pt2doctor.report.profile_schema import profile_section
from pt2doctor.report.sections import Section
from pt2doctor.report.types import ProfileReport
from pt2doctor.trace.chrome import read_chrome_trace, read_head
from pt2doctor.trace.profile_paths import trace_paths

if TYPE_CHECKING:
    from rich.console import Console

CPU_ONLY = "no device events: a CPU-only trace (nothing ran on a GPU while it recorded)"
NO_FINDINGS = "No findings: nothing on the device side needs action."


@dataclass
class TraceRead:
    """One trace: its device side, and its host side as ``run --profile`` splits it."""

    device: DeviceProfile
    host: ProfileResult


def _read(path: Path) -> TraceRead:
    try:
        head = read_head(path, 4096).lstrip()
    except (OSError, EOFError) as error:
        raise UsageError(f"cannot read {path}: {error}") from error
    if not head:
        raise UsageError(f"{path} is empty: not a profiler trace")
    if not head.startswith((b"{", b"[")):
        raise UsageError(f"{path} is not a profiler trace (not JSON)")
    try:
        trace = read_chrome_trace(path)
    except (ValueError, OSError, EOFError) as error:
        raise UsageError(f"{path} is not a profiler trace ({error})") from error
    if not len(trace) and not trace.bad_events:
        raise UsageError(f"{path} holds no events: an empty profiler trace")
    return TraceRead(device_profile(trace, path), trace_analysis(trace, str(path)))


def _read_all(paths: list[Path]) -> list[TraceRead]:
    """Each trace read and analysed; several (one per rank) by a process per core, in their
    order. A bad one is checked here first, so its one-line error comes from this process."""
    workers = min(len(os.sched_getaffinity(0)), len(paths))
    if workers < 2:
        return [_read(p) for p in paths]
    method = "fork" if threading.active_count() == 1 else "spawn"
    with multiprocessing.get_context(method).Pool(workers) as pool:
        return pool.map(_read, paths, chunksize=1)


def build_device_report(path: Path) -> ProfileReport:
    """The report of kind ``profile`` for a trace or a directory of traces."""
    from pt2doctor.report.schema import finding_row

    paths = trace_paths(path)
    if not paths:
        raise UsageError(f"no profiler trace in {path}")
    reads = _read_all(paths)
    profiles = [read.device for read in reads]
    findings = traces_findings([(read.device, read.host.findings) for read in reads])
    notes = [f"{Path(p.path).name}: {CPU_ONLY}" for p in profiles if not p.device_events]
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "profile",
        "tool": {"name": "pt2doctor", "version": __version__},
        "inputs": {"paths": [str(p) for p in paths]},
        "summary": _summary(profiles),
        "plan": [
            {"step": item.step, "code": item.code, "title": item.title, "saves_ms": item.saves_ms}
            for item in plan(findings)
        ],
        "findings": [finding_row(f) for f in findings],
        "device": [{**read.device.as_dict(), "host": profile_section(read.host)} for read in reads],
        "notes": notes,
        "parse_stats": {
            "events": sum(p.events for p in profiles),
            "bad_events": sum(p.bad_events for p in profiles),
            "problems": sum(p.bad_events for p in profiles),
        },
    }


def _summary(profiles: list[DeviceProfile]) -> dict[str, Any]:
    return {
        "traces": len(profiles),
        "events": sum(p.events for p in profiles),
        "kernels": sum(p.kernels for p in profiles),
        "kernel_ms": round(sum(p.kernel_us for p in profiles) / 1000, 3),
        "steps": sum(len(p.steps) for p in profiles),
        "syncs": sum(p.syncs for p in profiles),
        "host_wait_ms": round(sum(p.sync_us for p in profiles) / 1000, 3),
        "graph_launches": sum(p.graph_launches for p in profiles),
        "cpu_only": all(not p.device_events for p in profiles),
    }


# --- rendering --------------------------------------------------------------------------


def _ms(us: float) -> str:
    return f"{us / 1000:.1f}"


def _trace_lines(device: Mapping[str, Any]) -> list[str]:
    """What one trace holds, in a few lines (every rendering)."""
    name = Path(device["path"]).name
    gpus = ", ".join(dict.fromkeys(device["gpus"])) or "no GPU named"
    rank = f", rank {device['rank']}" if device.get("rank") is not None else ""
    copies = ", ".join(f"{kind} {g['count']}" for kind, g in sorted(device["copies"].items()))
    lines = [
        f"{name} ({gpus}{rank}): {device['events']} events over {_ms(device['span_us'])} ms, "
        f"steps from {device['steps_from']} ({len(device['steps'])})",
    ]
    host = device.get("host") or {}
    if host.get("available"):
        regions = ", ".join(
            f"{r['compile_id']}{' backward' if r['part'] == 'backward' else ''} "
            f"{r['ms_per_call']:.3f} ms (kernels {r['kernels_ms']:.3f}, library "
            f"{r['library_ms']:.3f}, fallback {r['fallback_ms']:.3f}, overhead "
            f"{r['overhead_ms']:.3f})"
            for r in host["regions"][:4]
        )
        lines.append(
            f"host, per step: {host['window']['ms_per_call']:.3f} ms, "
            f"{100 * host['compiled_share']:.0f}% in compiled regions: {regions}"
        )
    if not device["by_kind"]:
        return [*lines, CPU_ONLY]
    kinds = ", ".join(
        f"{kind} {g['count']} ({_ms(g['us'])} ms)"
        for kind, g in sorted(device["by_kind"].items(), key=lambda kv: -kv[1]["us"])
    )
    lines.append(
        f"kernels: {device['kernels']} ({_ms(device['kernel_us'])} ms); device events by "
        f"kind: {kinds}"
    )
    lines.append(
        f"copies: {copies or 'none'}; syncs: {device['syncs']} "
        f"({_ms(device['sync_us'])} ms host waiting); CUDA graph launches: "
        f"{device['graph_launches']} ({device['graph_kernels']} kernels replayed)"
    )
    return lines


def _step_rows(device: Mapping[str, Any]) -> list[list[str]]:
    return [
        [
            step["name"],
            _ms(step["wall_us"]),
            _ms(step["busy_us"]),
            _ms(step["idle_us"]),
            _ms(step["idle_host_us"]),
            _ms(step["idle_sync_us"]),
            _ms(step["sync_us"]),
        ]
        for step in device["steps"]
    ]


STEP_COLUMNS = ("step", "wall ms", "device busy", "idle", "waiting on host", "after a sync",
                "host in syncs")  # fmt: skip


def _region_rows(device: Mapping[str, Any]) -> list[list[str]]:
    return [
        [
            region["label"],
            str(region["calls"]),
            str(region["kernels"]),
            _ms(region["device_us"]),
            str(region["graph_launches"]),
        ]
        for region in device["regions"]
    ]


REGION_COLUMNS = ("launched from", "calls", "device events", "device ms", "graph replays")


def render_device_terminal(report: ProfileReport, console: Console) -> None:
    from rich.markup import escape
    from rich.table import Table

    from pt2doctor.report.terminal import render_findings, render_plan

    console.print("[bold]pt2doctor report[/] — profiler trace")
    for device in report["device"]:
        for line in _trace_lines(device):
            console.print(escape(shorten_paths(line)))
        if device["steps"] and device["by_kind"]:
            table = Table(title="Per step (ms)", expand=False)
            for column in STEP_COLUMNS:
                table.add_column(column, no_wrap=column == "step")
            for row in _step_rows(device)[:12]:
                table.add_row(*row)
            console.print(table)
        if device["by_kind"] and (len(device["regions"]) > 1
                                  or any(r["calls"] for r in device["regions"])):  # fmt: skip
            table = Table(title="Device time by where it was launched", expand=False)
            for column in REGION_COLUMNS:
                table.add_column(column)
            for row in _region_rows(device)[:8]:
                table.add_row(*(escape(cell) for cell in row))
            console.print(table)
        console.print()
    render_plan(console, report)  # type: ignore[arg-type]
    render_findings(console, report["findings"], empty=NO_FINDINGS)
    for note in report.get("notes") or []:
        console.print(f"[dim]{escape(note)}[/]")


def render_device_markdown(report: ProfileReport) -> str:
    from pt2doctor.report.markdown import markdown_findings, markdown_plan

    lines = ["# pt2doctor report — profiler trace", ""]
    for device in report["device"]:
        lines += [f"- {line}" for line in _trace_lines(device)]
        lines.append("")
        if device["steps"] and device["by_kind"]:
            lines += ["| " + " | ".join(STEP_COLUMNS) + " |",
                      "|" + "---|" * len(STEP_COLUMNS)]  # fmt: skip
            lines += ["| " + " | ".join(row) + " |" for row in _step_rows(device)]
            lines.append("")
    lines += markdown_plan(report)  # type: ignore[arg-type]
    lines += markdown_findings(report, NO_FINDINGS)  # type: ignore[arg-type]
    lines += [f"*{note}*" for note in report.get("notes") or []]
    return "\n".join(lines) + "\n"


def build_device_view(report: ProfileReport) -> dict[str, Any]:
    """The HTML page's view-model: the trace lines, the steps, and the findings."""
    sections = []
    for index, device in enumerate(report["device"]):
        sections.append(
            Section(
                f"trace-{index}",
                Path(device["path"]).name,
                "device",
                {
                    "lines": _trace_lines(device),
                    "steps": {"columns": list(STEP_COLUMNS), "rows": _step_rows(device)},
                    "regions": {"columns": list(REGION_COLUMNS), "rows": _region_rows(device)},
                },
            )
        )
    sections.append(
        Section(
            "findings",
            "Findings",
            "device_findings",
            {
                "plan": report["plan"],
                "findings": report["findings"],
                "empty": NO_FINDINGS,
                "notes": report.get("notes") or [],
            },
        )
    )
    from dataclasses import asdict

    return {
        "title": "pt2doctor profile report",
        "schema_version": report["schema_version"],
        "links": {},
        "sections": [asdict(section) for section in sections],
    }
