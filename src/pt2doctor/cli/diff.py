"""``pt2doctor diff A B``: what changed between two runs (run dirs, report.json files or logs)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import click
import orjson
from rich.console import Console

from pt2doctor.analysis.diff.change import Noise
from pt2doctor.analysis.diff.reports import diff_reports
from pt2doctor.check.diff import diff_check_reports
from pt2doctor.errors import UsageError
from pt2doctor.report import build_report
from pt2doctor.report.diff_view import render_diff_markdown, render_diff_terminal
from pt2doctor.rundir.load import load_run


def load_report(path: Path) -> dict[str, Any]:
    """A stored report.json (a check or ablate run directory: its report.json), read back
    through report/document.py; anything ``pt2doctor report`` reads is analysed afresh."""
    if path.is_dir() and (path / "results.jsonl").is_file() and (path / "report.json").is_file():
        path = path / "report.json"  # a check run directory
    if path.is_dir() and (path / "trials").is_dir() and (path / "report.json").is_file():
        path = path / "report.json"  # an ablate --out directory
    from pt2doctor.report.document import is_report_json, read_report

    if is_report_json(path):
        return read_report(path)
    from pt2doctor.trace.profile_paths import is_profile_trace

    if is_profile_trace(path):  # a profiler trace: explained
        from pt2doctor.report.device_report import build_device_report

        return cast(dict[str, Any], build_device_report(path))
    # The run report as the plain dict the differ walks (analysis/diff/reports.py reads it by key).
    return cast(dict[str, Any], build_report(load_run(path)))


@click.command("diff")
@click.argument("a", type=click.Path(path_type=Path))
@click.argument("b", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["term", "json", "md"]),
    default="term",
    show_default=True,
    help="What to print on stdout.",
)
@click.option("--fail-on-regression", is_flag=True, help="Exit 1 when B regressed from A.")
@click.option(
    "--noise",
    "rel",
    type=click.FloatRange(min=0),
    default=Noise.rel,
    show_default=True,
    help="Relative change below which a time is noise (0.25 = 25 %).",
)
@click.option(
    "--noise-compile-s",
    type=click.FloatRange(min=0),
    default=Noise.compile_s,
    show_default=True,
    help="Compile-time change (s) below which it is noise.",
)
@click.option("--noise-call-s", type=click.FloatRange(min=0), default=Noise.per_call_s,
              show_default=True, help="Per-call time change (s) below which it is noise.")  # fmt: skip
@click.option("--noise-call", "call_rel", type=click.FloatRange(min=0),
              default=Noise.per_call_rel, show_default=True,
              help="Relative per-call time change below which it is noise (1.0 = 2x: two runs "
              "of one unchanged program differed by up to 1.9x on a shared 2-core machine).")  # fmt: skip
def diff_command(
    a: Path,
    b: Path,
    fmt: str,
    fail_on_regression: bool,
    rel: float,
    noise_compile_s: float,
    noise_call_s: float,
    call_rel: float,
) -> int:
    """Compare two runs A and B (run dirs, report.json files, TORCH_TRACE logs or profiler
    traces): break sites
    new and gone, variant counts, new recompile causes, compile time and time per call beyond
    noise, environment. Two check runs (their dirs or report.json): cell verdicts, contract
    clauses, max variants, late compiles, cold starts, speedup beyond its 95% interval, where
    numbers diverge. Two ablate runs: each rung's result, the failing layer, the smallest
    failing module, the module where numbers diverge. Two profiler traces: step time, device busy time, the kernel groups that moved most, syncs
    and CUDA-graph replays per step."""
    noise = Noise(rel=rel, compile_s=noise_compile_s, per_call_s=noise_call_s,
                  per_call_rel=call_rel)  # fmt: skip
    report_a, report_b = load_report(a), load_report(b)
    from pt2doctor.report.types import report_kind

    kinds = report_kind(report_a), report_kind(report_b)
    if kinds[0] != kinds[1]:
        raise UsageError(f"cannot diff a {kinds[0]} report ({a}) with a {kinds[1]} report ({b})")
    from pt2doctor.ablate.diff import diff_ablate_reports
    from pt2doctor.analysis.diff.profiles import diff_device_reports

    differ = {"check": diff_check_reports, "profile": diff_device_reports,
              "ablate": diff_ablate_reports}.get(kinds[0], diff_reports)  # fmt: skip
    diff = differ(report_a, report_b, noise, (str(a), str(b))).as_dict()
    if fmt == "json":
        sys.stdout.buffer.write(orjson.dumps(diff, option=orjson.OPT_INDENT_2) + b"\n")
    elif fmt == "md":
        sys.stdout.write(render_diff_markdown(diff))
    else:
        render_diff_terminal(diff, Console(highlight=False))
    return 1 if fail_on_regression and diff["regressions"] else 0
