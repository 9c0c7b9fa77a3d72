"""``pt2doctor report PATH``: explain a TORCH_TRACE log, a directory of per-rank logs, a run dir."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from pt2doctor.capture.rundir import is_run_dir
from pt2doctor.errors import UsageError
from pt2doctor.inputs import load_run
from pt2doctor.report import build_report, dumps_report
from pt2doctor.report.terminal import render_terminal


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
    path: Path, targets: list[Path], json_to_stdout: bool, console: Console | None
) -> dict[str, Any]:
    """Build the report for ``path``, write report.json to each target, then print the JSON
    and/or the terminal summary."""
    report = build_report(load_run(path))
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


def render_run_dir(run_dir: Path, json_path: Path | None, console: Console) -> dict[str, Any]:
    """Report on a run directory: report.json inside it (and at ``json_path``), summary."""
    targets = [run_dir / "report.json", *([json_path] if json_path is not None else [])]
    return explain(run_dir, targets, False, console)


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
def report_command(path: Path, json_path: Path | None, fmt: str, strict: bool) -> int:
    """Explain every compilation in the TORCH_TRACE log(s) or run directory at PATH."""
    target = json_path or _default_json_path(path)
    to_stdout = str(target) == "-"
    # With the JSON on stdout, the human summary goes to stderr so stdout stays parseable.
    console = Console(highlight=False, stderr=to_stdout) if fmt == "term" else None
    report = explain(path, [] if to_stdout else [target], to_stdout or fmt == "json", console)
    problems = report["parse_stats"]["problems"]
    return 1 if strict and problems else 0
