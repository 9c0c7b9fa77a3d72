"""``pt2doctor report PATH``: explain a TORCH_TRACE log, a directory of per-rank logs, a run dir.

A directory of per-rank logs gathered from many nodes is the multi-node path: copy every
node's TORCH_TRACE files into one folder and report on it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from pt2doctor.analysis.ranks import DEFAULT_COLLECTIVE_TIMEOUT_S
from pt2doctor.capture.rundir import is_run_dir, load_manifest
from pt2doctor.errors import UsageError
from pt2doctor.inputs import load_run
from pt2doctor.report import build_report, dumps_report
from pt2doctor.report.terminal import render_terminal

COLLECTIVE_TIMEOUT_OPTION = click.option(
    "--collective-timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Collective timeout in seconds that cross-rank compile skew is compared with "
    "(default: the run's, else 600, torch.distributed's default).",
)


def collective_timeout_for(path: Path, given: float | None) -> float:
    """The timeout given, else the one ``run --collective-timeout`` kept in the manifest, else
    torch.distributed's default."""
    if given is not None:
        return given
    if is_run_dir(path):
        kept = load_manifest(path).get("collective_timeout_s")
        if isinstance(kept, (int, float)) and not isinstance(kept, bool) and kept > 0:
            return float(kept)
    return DEFAULT_COLLECTIVE_TIMEOUT_S


def _default_json_path(path: Path) -> Path:
    """A run directory keeps its report; for a bare log, ./report.json."""
    return path / "report.json" if is_run_dir(path) else Path("report.json")


def _write(target: Path, data: bytes) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as error:
        raise UsageError(f"cannot write {target}: {error.strerror}") from error


def explain(
    path: Path,
    targets: list[Path],
    json_to_stdout: bool,
    console: Console | None,
    collective_timeout: float | None = None,
) -> dict[str, Any]:
    """Build the report for ``path``, write report.json to each target, then print the JSON
    and/or the terminal summary."""
    timeout = collective_timeout_for(path, collective_timeout)
    report = build_report(load_run(path), collective_timeout_s=timeout)
    data = dumps_report(report)
    for target in targets:
        _write(target, data)
    if json_to_stdout:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    if console is not None:
        render_terminal(report, console)
        if targets:
            console.print(f"\nreport written to {targets[0]}")
    return report


def render_run_dir(
    run_dir: Path, json_path: Path | None, console: Console, collective_timeout: float | None = None
) -> dict[str, Any]:
    """Report on a run directory: report.json inside it (and at ``json_path``), summary."""
    targets = [run_dir / "report.json", *([json_path] if json_path is not None else [])]
    return explain(run_dir, targets, False, console, collective_timeout)


@click.command("report")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path),
    help="Where to write report.json ('-' for stdout). Default: ./report.json, or inside a run dir.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["term", "json"]),
    default="term",
    show_default=True,
    help="What to print on stdout.",
)
@click.option("--strict", is_flag=True, help="Exit 1 when the log is damaged (not when it is new).")
@COLLECTIVE_TIMEOUT_OPTION
def report_command(
    path: Path, json_path: Path | None, fmt: str, strict: bool, collective_timeout: float | None
) -> int:
    """Explain every compilation in the TORCH_TRACE log(s) or run directory at PATH."""
    target = json_path or _default_json_path(path)
    to_stdout = str(target) == "-"
    # With the JSON on stdout, the human summary goes to stderr so stdout stays parseable.
    console = Console(highlight=False, stderr=to_stdout) if fmt == "term" else None
    report = explain(
        path, [] if to_stdout else [target], to_stdout or fmt == "json", console, collective_timeout
    )
    problems = report["parse_stats"]["problems"]
    return 1 if strict and problems else 0
