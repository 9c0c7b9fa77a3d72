"""``pt2doctor check CASES.py``: alignment per cell, cold start, warmup and steady state per
compile mode, judged against the budget; exit 1 when a contract clause fails."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
import orjson
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from pt2doctor.cases.loader import load_cases, require_case_file, select_cells
from pt2doctor.cases.variants import requested_variants
from pt2doctor.check.budget import load_budget
from pt2doctor.check.contract import Budget
from pt2doctor.check.driver import run_check
from pt2doctor.check.orchestrate import RESULTS, CheckOptions, Orchestrator
from pt2doctor.check.report import build_check_report
from pt2doctor.cli.outputs import OutputPlan, document_options, emit
from pt2doctor.errors import UsageError
from pt2doctor.forkserver import start_fork_server
from pt2doctor.rundir.read import read_jsonl
from pt2doctor.rundir.write import default_run_dir, require_fresh_dir
from pt2doctor.workers import UNIT_RESULTS, EventName

PROFILE_CALLS = 10
"""``--profile``: calls of each kind profiled per group."""
# --quick: a smoke run of the protocol (no cold starts, no regional variant, few samples).
QUICK_ITERATIONS = 8


def _expected_env(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise UsageError(f"cannot read --expect-env {path}: {error}") from error
    env = data.get("environment", data) if isinstance(data, dict) else None
    if not isinstance(env, dict):
        raise UsageError(f"--expect-env {path} holds no environment object")
    return env


def read_results(out: Path) -> list[dict[str, Any]]:
    records = read_jsonl(out / RESULTS)
    if records is None:
        raise UsageError(f"cannot read {out / RESULTS}")
    return [record for record in records if isinstance(record, dict)]


def check_output_plan(
    out: Path, fmt: str, md_path: Path | None, html_path: Path | None, redact: bool
) -> OutputPlan:
    """report.json, report.md and report.html in the run directory, plus --md/--html; --format
    picks what goes to stdout (the terminal summary by default)."""
    plan = OutputPlan(stdout=fmt, redact=redact)
    for name in ("json", "md", "html"):
        plan.add(name, out / f"report.{name}")
    plan.add("md", md_path)
    plan.add("html", html_path)
    return plan


def _progress_callback(progress: Progress, task: Any) -> Any:
    def on_event(event: dict[str, Any]) -> None:
        name: EventName = event["event"]
        if name == "cell_start":
            what = event.get("cell") or "steady state"
            progress.update(task, description=f"{event['phase']}: {what}")
        elif name in UNIT_RESULTS:  # a cell's alignment or warmup, a steady state, a cold start
            progress.advance(task)

    return on_event


@click.command("check")
@click.argument("case_file", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Run directory (default: ./pt2doctor-checks/<time>).",
)
@click.option(
    "--modes", default="default", show_default=True, help="Comma-separated compile modes, or 'all'."
)
@click.option("--backend", default="inductor", show_default=True, help="torch.compile backend.")
@click.option(
    "--cells",
    "cell_patterns",
    multiple=True,
    help="Only cells matching (glob over the id, or id parts like bfloat16/train).",
)
@click.option(
    "--iterations",
    type=click.IntRange(min=2),
    default=40,
    show_default=True,
    help="Steady-state iterations per group.",
)
@click.option(
    "--cell-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds one cell may take before it is killed.",
)
@click.option(
    "--cold-start/--no-cold-start",
    default=True,
    show_default=True,
    help="Measure cold starts in fresh processes.",
)
@click.option(
    "--regional/--no-regional",
    default=None,
    help="Also compile repeated blocks regionally (default: when a case has them).",
)
@click.option(
    "--budget",
    "budget_file",
    type=click.Path(path_type=Path),
    help="Budget TOML (default: pt2doctor.toml or pyproject.toml [tool.pt2doctor]).",
)
@click.option(
    "--expect-env",
    type=click.Path(path_type=Path),
    help="A report.json (or environment JSON) whose environment this run should match.",
)
@click.option(
    "--quick", is_flag=True, help="A smoke run: 8 iterations, no cold starts, no regional variant."
)
@click.option(
    "--profile",
    is_flag=True,
    help=f"Profile {PROFILE_CALLS} steady-state calls of each group, eager and compiled, after "
    "the timed samples: why the speedup is what it is, and its bound.",
)
@document_options
def check_command(
    case_file: Path,
    out: Path | None,
    modes: str,
    backend: str,
    cell_patterns: tuple[str, ...],
    iterations: int,
    cell_timeout: float,
    cold_start: bool,
    regional: bool | None,
    budget_file: Path | None,
    expect_env: Path | None,
    quick: bool,
    profile: bool,
    fmt: str,
    md_path: Path | None,
    html_path: Path | None,
    redact: bool,
) -> int:
    """Acceptance check of the cases in CASE_FILE: alignment, cold start, warmup, steady state,
    per compile mode, against the budget. The run directory gets report.json, report.md and
    report.html."""
    started = time.time()  # check's own time (loading the cases, planning) counts from here
    budget = load_budget(case_file, budget_file)
    expected = _expected_env(expect_env)
    out = out or default_run_dir("checks")
    require_fresh_dir(out)
    require_case_file(case_file)
    start_fork_server()  # before the case file runs: no worker inherits the user's module
    cases = load_cases(case_file)
    cells = select_cells(cases, cell_patterns)
    variants = requested_variants([m.strip() for m in modes.split(",") if m.strip()], backend)
    out.mkdir(parents=True, exist_ok=True)
    options = CheckOptions(
        case_file,
        out,
        variants,
        QUICK_ITERATIONS if quick else iterations,
        cell_timeout,
        cold_start and not quick,
        False if quick else regional,
        profile_calls=PROFILE_CALLS if profile else None,
        try_fixes=budget.values.get("top_fix_tried") is True,
    )
    console = Console(highlight=False, stderr=fmt != "term")
    settings = {"budget": budget.as_dict(), "expected_env": expected, "started": started}
    interrupted = _run(options, cases, cells, console, settings)
    report = build_check_report(read_results(out), budget, expected, interrupted)
    emit(report, check_output_plan(out, fmt, md_path, html_path, redact))
    if interrupted:
        return 130
    return 0 if report["contract"]["ok"] else 1


def rerender_check(
    out: Path, fmt: str, md_path: Path | None, html_path: Path | None, redact: bool
) -> int:
    """``pt2doctor report CHECK_DIR``: the check report again, from results.jsonl alone (the
    budget and expected environment it ran with are kept there); exit 1 if a clause fails."""
    records = read_results(out)
    settings = next((r for r in records if r.get("record") == "settings"), None)
    if settings is None:
        raise UsageError(f"{out / RESULTS} holds no settings record: not a check directory")
    budget = Budget.from_dict(settings["budget"])
    finished = any(r.get("record") == "finished" for r in records)
    report = build_check_report(records, budget, settings.get("expected_env"), not finished)
    emit(report, check_output_plan(out, fmt, md_path, html_path, redact))
    return 0 if report["contract"]["ok"] else 1


def _run(
    options: CheckOptions, cases: Any, cells: Any, console: Console, settings: dict[str, Any]
) -> bool:
    groups = len({cell.group for cell in cells})
    total = len(options.variants) * (2 * len(cells) + groups + 2 * len(cases) * options.cold_start)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task("starting", total=total)
        orch = Orchestrator(options, _progress_callback(progress, task))
        orch.record("settings", **settings)
        try:
            run_check(options, cases, cells, orch)
        except KeyboardInterrupt:
            return True
        finally:
            orch.results.close()
    return False
