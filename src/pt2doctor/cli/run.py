"""``pt2doctor run -- python script.py ARGS``: run a program unchanged, capture, then report."""

from __future__ import annotations

import os
import time
from pathlib import Path

import click
from rich.console import Console

from pt2doctor.capture.runner import RunOptions, run_program
from pt2doctor.cli.outputs import FORMATS
from pt2doctor.cli.report import render_run_dir


def _default_out() -> Path:
    return Path("pt2doctor-runs") / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


@click.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Run directory (default: ./pt2doctor-runs/<time>).",
)
@click.option(
    "--backend",
    type=click.Choice(["eager", "aot_eager", "inductor"]),
    help="Override the backend every torch.compile asks for (eager: fast triage).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    help="Kill the program after S seconds (exit 124).",
)
@click.option(
    "--warmup-calls",
    type=click.IntRange(min=1),
    help="Warmup ends after a frame's N-th compiled call.",
)
@click.option(
    "--steady-after", type=click.FloatRange(min=0), help="Warmup ends S seconds after start."
)
@click.option(
    "--json", "json_path", type=click.Path(path_type=Path), help="Also write report.json here."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="term",
    show_default=True,
    help="What to print at the end: the summary (on stderr) or a document (on stdout).",
)
@click.option("--redact", is_flag=True, help="Reports without source lines, with relative paths.")
@click.option(
    "--tlparse", "use_tlparse", is_flag=True, help="Also render tlparse's report; link to it."
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def run_command(
    out: Path | None,
    backend: str | None,
    timeout: float | None,
    warmup_calls: int | None,
    steady_after: float | None,
    json_path: Path | None,
    fmt: str,
    redact: bool,
    use_tlparse: bool,
    command: tuple[str, ...],
) -> int:
    """Run COMMAND (e.g. python train.py ARGS) under probes and explain its compilations.
    The run directory gets report.json, report.md and report.html."""
    options = RunOptions(
        command=list(command),
        out=out or _default_out(),
        backend=backend,
        timeout=timeout,
        warmup_calls=warmup_calls,
        steady_after=steady_after,
    )
    manifest = run_program(options)
    console = Console(highlight=False, stderr=True)
    console.rule("[bold]pt2doctor")
    render_run_dir(options.out, json_path, fmt, redact, use_tlparse)
    returned = manifest["returned"]
    return int(returned)
