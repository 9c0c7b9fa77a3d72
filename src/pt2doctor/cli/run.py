"""``pt2doctor run -- python script.py ARGS``: run a program unchanged, capture, then report.

With ``--nproc N`` the program runs on N ranks through torchrun (``torch.distributed.run``);
the torchrun options below pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from pt2doctor.capture.baked import remember_constants
from pt2doctor.capture.launch import Launch
from pt2doctor.capture.options import RunOptions, flagged
from pt2doctor.capture.profile import DEFAULT_CALLS
from pt2doctor.capture.runner import run_program
from pt2doctor.cli.outputs import FORMATS
from pt2doctor.cli.report import COLLECTIVE_TIMEOUT_OPTION, render_run_dir
from pt2doctor.errors import UsageError
from pt2doctor.rundir.write import default_run_dir

# Click parameter name -> torchrun option, for the torchrun options ``run`` passes through.
TORCHRUN_OPTIONS = {
    "nnodes": "--nnodes",
    "node_rank": "--node-rank",
    "master_addr": "--master-addr",
    "master_port": "--master-port",
    "rdzv_backend": "--rdzv-backend",
    "rdzv_endpoint": "--rdzv-endpoint",
    "rdzv_id": "--rdzv-id",
}


def _launch(nproc: int | None, torchrun: dict[str, Any], extra: tuple[str, ...]) -> Launch | None:
    """torchrun's launch, or None for a single process (torchrun options need ``--nproc``)."""
    options = [f"{TORCHRUN_OPTIONS[name]}={value}" for name, value in torchrun.items() if value]
    options += list(extra)
    if nproc is None:
        if options:
            raise UsageError("torchrun options need --nproc N (processes per node)")
        return None
    return Launch(nproc=nproc, torchrun_options=options)


Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

_CLICK_TYPES: dict[str, Any] = {
    "positive_float": click.FloatRange(min=0, min_open=True),
    "nonnegative_float": click.FloatRange(min=0),
    "positive_int": click.IntRange(min=1),
    "port": click.IntRange(min=1, max=65535),
    "path": click.Path(path_type=Path, dir_okay=False),
}


def run_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The click options of every RunOptions field that has a flag (capture/options.py)."""
    for name, flag in reversed(flagged()):
        if flag.kind == "flag":
            command = click.option(flag.name, name, is_flag=True, help=flag.help)(command)
        elif flag.kind == "switch":
            negative = f"--no-{flag.name.removeprefix('--')}"
            command = click.option(f"{flag.name}/{negative}", name, default=None,
                                   help=flag.help)(command)  # fmt: skip
        elif flag.kind == "choice":
            choice = click.Choice(list(flag.choices))
            command = click.option(flag.name, name, type=choice, help=flag.help)(command)
        else:
            kind = _CLICK_TYPES[flag.kind]
            command = click.option(flag.name, name, type=kind, help=flag.help)(command)
    return command


def _torchrun_option(name: str, help_text: str, kind: Any = str) -> Decorator:
    """A torchrun option passed through as ``--name=value``."""
    return click.option(TORCHRUN_OPTIONS[name], name, type=kind, help=help_text)


@click.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Run directory (default: ./pt2doctor-runs/<time>).",
)
@run_options
@click.option(
    "--json", "json_path", type=click.Path(path_type=Path), help="Also write report.json here."
)
@click.option(
    "--nproc",
    type=click.IntRange(min=1),
    help="Run on N ranks per node through torchrun (torch.distributed.run).",
)
@_torchrun_option("nnodes", "torchrun: number of nodes, or MIN:MAX.")
@_torchrun_option("node_rank", "torchrun: this node's rank.", click.IntRange(min=0))
@_torchrun_option("master_addr", "torchrun: address of the rank-0 node.")
@_torchrun_option("master_port", "torchrun: port on the rank-0 node.", click.IntRange(1, 65535))
@_torchrun_option("rdzv_backend", "torchrun: rendezvous backend (c10d, etcd ...).")
@_torchrun_option("rdzv_endpoint", "torchrun: rendezvous HOST:PORT.")
@_torchrun_option("rdzv_id", "torchrun: rendezvous (job) id.")
@click.option(
    "--torchrun-arg",
    "torchrun_args",
    multiple=True,
    help="Any other torchrun option, passed as is (repeatable): --torchrun-arg=--max-restarts=1.",
)
@COLLECTIVE_TIMEOUT_OPTION
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="term",
    show_default=True,
    help="What to print at the end: the summary (on stderr) or a document (on stdout).",
)
@click.option(
    "--profile",
    "profile",
    is_flag=True,
    help="Profile steady-state calls of the hot compiled graph (torch profiler, kernels "
    "mapped to your lines, compiled afresh as with --kernels): where the compiled step's time "
    "goes. Chrome trace in profile/trace.json.",
)
@click.option(
    "--profile-calls",
    type=click.IntRange(min=1),
    help="With --profile: calls of the hot graph the window holds (default 20).",
)
@click.option(
    "--try-fixes",
    "try_fixes",
    type=click.IntRange(min=1),
    metavar="N",
    help="Re-run the program up to N times, each with one fix the report names applied (a "
    "config value, input marks, a torch.compile setting), and report its measured effect.",
)
@click.option("--redact", is_flag=True, help="Reports without source lines, with relative paths.")
@click.option(
    "--tlparse", "use_tlparse", is_flag=True, help="Also render tlparse's report; link to it."
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def run_command(
    out: Path | None,
    json_path: Path | None,
    nproc: int | None,
    torchrun_args: tuple[str, ...],
    collective_timeout: float | None,
    fmt: str,
    profile: bool,
    profile_calls: int | None,
    try_fixes: int | None,
    redact: bool,
    use_tlparse: bool,
    command: tuple[str, ...],
    **given: Any,
) -> int:
    """Run COMMAND under probes and explain its compilations.

    COMMAND is e.g. python train.py ARGS. The run directory gets report.json, report.md and
    report.html."""
    if command[0].startswith("-"):  # unknown options reach COMMAND (it may take its own)
        raise UsageError(f"no such option: {command[0]} (pt2doctor run --help lists them)")
    settings = {name: given.pop(name) for name, _ in flagged()}
    torchrun = given  # what is left: the torchrun options passed through
    if not profile and (profile_calls is not None or settings["profile_seconds"] is not None
                        or settings["profile_stacks"]):  # fmt: skip
        raise UsageError("--profile-calls, --profile-seconds and --profile-stacks need --profile")
    options = RunOptions(
        command=list(command),
        out=out or default_run_dir("runs"),
        launch=_launch(nproc, torchrun, torchrun_args),
        collective_timeout=collective_timeout,
        profile_calls=(profile_calls or DEFAULT_CALLS) if profile else None,
        digest_outputs=bool(try_fixes),
        **settings,
    )
    manifest = run_program(options)
    console = Console(highlight=False, stderr=True)
    if try_fixes:
        from pt2doctor.tries import run_tries

        made = run_tries(options, try_fixes, lambda line: console.print(f"[dim]pt2doctor {line}"))
        if not made:
            console.print("[dim]pt2doctor: no fix in the report is one it can apply itself")
    console.rule("[bold]pt2doctor")
    report = render_run_dir(options.out, json_path, fmt, redact, use_tlparse, collective_timeout)
    _remember_baked_constants(report)
    returned = manifest["returned"]
    return int(returned)


def _remember_baked_constants(report: Mapping[str, Any]) -> None:
    """The floats this start baked into its graphs, kept in its cache dir for the next start's
    ``cache_key_constant`` (capture/baked.py)."""
    cold = report.get("cold_start") or {}
    at_start = cold.get("cache_dir_at_start") or {}
    if at_start.get("dir") and at_start.get("program"):
        remember_constants(at_start["dir"], at_start["program"], cold.get("baked_constants") or {})
