"""``pt2doctor ablate CASES.py --cell ID`` / ``pt2doctor ablate -- python script.py``: localize a
crash or a wrong result to a compiler layer (and, for a case, a submodule), write a repro;
exit 1 when the failure reproduces, 0 when no rung fails."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console

from pt2doctor.cases.case import Cell
from pt2doctor.cli.outputs import OutputPlan, document_options, emit
from pt2doctor.errors import UsageError
from pt2doctor.rundir.write import default_run_dir, require_fresh_dir


def _pick_cell(case_file: Path, pattern: str | None) -> Cell:
    from pt2doctor.cases.loader import load_cases, select_cells

    chosen = select_cells(load_cases(case_file), [pattern] if pattern else [], "--cell")
    exact = [cell for cell in chosen if cell.id == pattern]
    if exact:
        return exact[0]
    if len(chosen) > 1:
        ids = ", ".join(cell.id for cell in chosen[:6])
        more = " ..." if len(chosen) > 6 else ""
        raise UsageError(f"choose one cell with --cell (it matches {len(chosen)}: {ids}{more})")
    return chosen[0]


def _check_backend(backend: str) -> None:
    from pt2doctor import torchcompat

    known = torchcompat.known_backends()
    if known is not None and backend not in known:
        raise UsageError(f"unknown backend {backend!r} (one of {', '.join(known)})")


def _case_pieces(case_file: Path, cell_id: str | None, out: Path, **kw: Any) -> Any:
    from pt2doctor.ablate.driver import AblateOptions, run_ablation
    from pt2doctor.forkserver import start_fork_server

    start_fork_server()  # before the case file runs: no worker inherits the user's module
    cell = _pick_cell(case_file, cell_id)
    console = Console(stderr=True, highlight=False)
    options = AblateOptions(case_file, cell, out, **kw)
    pieces = run_ablation(options, lambda message: console.print(f"[dim]ablate: {message}[/]"))
    target = {"mode": "case", "case_file": str(case_file), "case": cell.case, "cell": cell.id}
    return pieces, target


@click.command("ablate", context_settings={"ignore_unknown_options": True, "show_default": True})
@click.option("--cell", "cell_id", help="The failing cell's id (or a pattern matching one).")
@click.option(
    "--backend",
    help="The backend forced on the top rung [default: a case's inductor; a program's own "
    "torch.compile backend, as written].",
)
@click.option("--dynamic/--no-dynamic", default=None, help="Compile with dynamic=True / False.")
@click.option("--mode", help="Inductor mode you compile with (e.g. reduce-overhead).")
@click.option("--fullgraph", is_flag=True, help="Compile with fullgraph=True, as you do.")
@click.option("--out", type=click.Path(path_type=Path), help="Directory for trials and repro.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    help="Seconds one trial process may take (then it counts as a hang).",
)
@click.option("--modules/--no-modules", default=True, help="Bisect the module tree.")
@click.option(
    "--bisect/--no-bisect",
    default=None,
    help="Run Inductor's compiler_bisector (default: when the failure is in Inductor).",
)
@click.option(
    "--bisect-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    help="Seconds compiler_bisector may take.",
)
@click.option("--repro/--no-repro", default=True, help="Write repro.py for the smallest piece.")
@click.option(
    "--verify-repro/--no-verify-repro",
    default=True,
    help="Run the written repro with plain python to confirm it fails.",
)
@click.option(
    "--accuracy-check",
    "accuracy_check",
    help="Script mode: a command run after each rung's program exits, in its working "
    "directory, with PT2DOCTOR_ABLATE_BACKEND set to the rung's backend; its non-zero exit says "
    "the outputs the program saved are wrong.",
)
@document_options
@click.argument("target", nargs=-1, type=click.UNPROCESSED, required=True)
def ablate_command(
    cell_id: str | None, backend: str | None, dynamic: bool | None, mode: str | None, fullgraph: bool,
    out: Path | None,
    timeout: float, modules: bool, bisect: bool | None, bisect_timeout: float, repro: bool,
    verify_repro: bool, accuracy_check: str | None, target: tuple[str, ...], fmt: str,
    md_path: Path | None, html_path: Path | None, redact: bool,
) -> int:  # fmt: skip
    """Localize a crash or wrong result: the backend ladder (eager, aot_eager,
    aot_eager_decomp_partition, BACKEND), then submodules, then a repro. TARGET is a case file
    (with --cell) or, after --, a command such as: python script.py ARGS."""
    from pt2doctor.ablate.report import build_ablate_report, failure_found
    from pt2doctor.ablate.types import Settings

    out = out or default_run_dir("ablations")
    require_fresh_dir(out, "directory")
    if backend is not None:
        _check_backend(backend)
    if len(target) == 1 and target[0].endswith(".py") and Path(target[0]).is_file():
        backend = backend or "inductor"
        pieces, what = _case_pieces(
            Path(target[0]), cell_id, out, backend=backend, dynamic=dynamic, mode=mode,
            fullgraph=fullgraph,
            modules=modules, bisect=bisect, repro=repro, verify_repro=verify_repro,
            timeout=timeout, bisect_timeout=bisect_timeout,
        )  # fmt: skip
    else:
        pieces, what = _script_pieces(
            list(target), cell_id, out, backend, timeout, accuracy_check, repro, verify_repro
        )
        backend = pieces["backend"]
    settings = Settings(backend=backend, dynamic=dynamic, mode=mode, fullgraph=fullgraph)
    environment = pieces.get("environment")
    if environment is None:  # case mode, or no rung got as far as importing torch
        from pt2doctor import torchcompat

        environment = torchcompat.environment()
    report = build_ablate_report(pieces, what, settings, str(out), environment)
    emit(report, ablate_output_plan(out, fmt, md_path, html_path, redact))
    return 1 if failure_found(report) else 0


def _script_pieces(
    command: list[str], cell_id: str | None, out: Path, backend: str | None, timeout: float,
    check: str | None, repro: bool, verify: bool,
) -> Any:  # fmt: skip
    from pt2doctor.ablate.script import ablate_script
    from pt2doctor.cases.loader import require_case_file

    if cell_id is not None:
        raise UsageError("--cell needs a case file: pt2doctor ablate CASES.py --cell ID")
    if Path(command[0]).suffix == ".py":
        require_case_file(Path(command[0]))
    script = next((arg for arg in command[1:2] if arg.endswith(".py")), None)
    if script and Path(command[0]).name.startswith("python") and not Path(script).is_file():
        raise UsageError(f"no such program: {script}")
    console = Console(stderr=True, highlight=False)
    pieces = ablate_script(
        command, backend, out, timeout, check, lambda m: console.print(f"[dim]ablate: {m}[/]"),
        repro=repro, verify=verify,
    )  # fmt: skip
    return pieces, {"mode": "script", "command": command, "accuracy_check": check}


def ablate_output_plan(
    out: Path, fmt: str, md_path: Path | None, html_path: Path | None, redact: bool
) -> OutputPlan:
    """report.json, report.md and report.html in --out, plus --md/--html; --format picks what
    goes to stdout (the terminal summary by default)."""
    plan = OutputPlan(stdout=fmt, redact=redact)
    for name in ("json", "md", "html"):
        plan.add(name, out / f"report.{name}")
    plan.add("md", md_path)
    plan.add("html", html_path)
    return plan
