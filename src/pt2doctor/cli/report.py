"""``pt2doctor report PATH``: explain a TORCH_TRACE log, a directory of per-rank logs, a run dir.

A directory of per-rank logs gathered from many nodes is the multi-node path: copy every
node's TORCH_TRACE files into one folder and report on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from pt2doctor.cli.outputs import OutputPlan, emit, output_options
from pt2doctor.errors import UsageError
from pt2doctor.rundir.read import is_check_dir, is_run_dir, load_manifest

if TYPE_CHECKING:
    from pt2doctor.report.types import RunReport

# The reader and the analyses are imported when a report is built, not for --help.
FAIL_ON = ("recompile", "recompile-after-warmup", "limit-hit", "new-break", "slow-compile",
           "compile-failure", "rank-skew", "cache-miss")  # fmt: skip
"""analysis/live.py's event kinds (kept here: --help imports no analysis)."""

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
    from pt2doctor.analysis.ranks.divergence import DEFAULT_COLLECTIVE_TIMEOUT_S

    return DEFAULT_COLLECTIVE_TIMEOUT_S


def run_dir_plan(run_dir: Path, fmt: str, redact: bool, use_tlparse: bool) -> OutputPlan:
    """A run directory keeps its reports: report.json, report.md and report.html inside it
    (and tlparse's report in tlparse/ with --tlparse)."""
    plan = OutputPlan(stdout=fmt, redact=redact)
    for name in ("json", "md", "html"):
        plan.add(name, run_dir / f"report.{name}")
    if use_tlparse:
        plan.tlparse_dir = run_dir / "tlparse"
    return plan


def explain(path: Path, plan: OutputPlan, collective_timeout: float | None = None) -> RunReport:
    """Build the report for ``path`` and emit it as planned; returns the (unredacted) report."""
    from pt2doctor.trace.profile_paths import is_profile_trace

    if not is_run_dir(path) and is_profile_trace(path):  # a profiler trace the user has
        from pt2doctor.report.device_report import build_device_report

        device = build_device_report(path)
        emit(device, plan)
        return device  # type: ignore[return-value]
    from pt2doctor.report import build_report
    from pt2doctor.rundir.load import load_run

    timeout = collective_timeout_for(path, collective_timeout)
    report = build_report(load_run(path), collective_timeout_s=timeout)
    emit(report, plan)
    return report


def render_run_dir(
    run_dir: Path,
    json_path: Path | None,
    fmt: str = "term",
    redact: bool = False,
    use_tlparse: bool = False,
    collective_timeout: float | None = None,
) -> RunReport:
    """Report on a run directory (reports inside it, report.json also at ``json_path``);
    the terminal summary goes to stderr, stdout being the program's."""
    plan = run_dir_plan(run_dir, fmt, redact, use_tlparse)
    plan.add("json", json_path)
    plan.summary_to_stderr = True
    plan.tlparse_required = False
    return explain(run_dir, plan, collective_timeout)


def _log_plan(json_path: Path | None, html_path: Path | None, use_tlparse: bool) -> OutputPlan:
    """A bare log: report.json at ./report.json (or --json), the others where asked. (A run
    directory given --json/--md/--html also writes only there: it stays untouched.)"""
    plan = OutputPlan()
    target = json_path or Path("report.json")
    if str(target) == "-":  # JSON on stdout; the summary moves to stderr so stdout parses
        plan.stdout, plan.summary_with_document = "json", True
    else:
        plan.add("json", target)
    if use_tlparse:
        plan.tlparse_dir = (html_path.parent if html_path else Path.cwd()) / "tlparse"
    return plan


def _stored_plan(
    json_path: Path | None, fmt: str, md_path: Path | None, html_path: Path | None, redact: bool
) -> OutputPlan:
    """A stored report.json: rendered on stdout as ``--format`` says, and written only where
    ``--json``/``--md``/``--html`` say (never next to it by default: it may be the input)."""
    plan = OutputPlan(stdout=fmt, redact=redact)
    if json_path is not None and str(json_path) == "-":
        if fmt not in ("term", "json"):
            raise UsageError(f"--json - and --format {fmt} both want stdout")
        plan.stdout, plan.summary_with_document = "json", fmt == "term"
    else:
        plan.add("json", json_path)
    plan.add("md", md_path)
    plan.add("html", html_path)
    return plan


def rerender_report(path: Path, plan: OutputPlan, strict: bool) -> int:
    """A stored report.json of any kind rendered again (nothing is analysed: the report as it
    was written, brought to the current shape by report/document.py). With ``strict``, exit 1
    when the log it was made from was damaged."""
    from pt2doctor.report.document import read_report

    report = read_report(path)
    emit(report, plan)
    problems = (report.get("parse_stats") or {}).get("problems")
    return 1 if strict and problems else 0


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (an exited one its parent has not reaped yet is a
    zombie: gone)."""
    import os

    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return True
    return not fields or fields[0] not in ("Z", "X")


def follow_logs(
    path: Path,
    fail_on: tuple[str, ...],
    until_exit: int | None,
    slow_s: float | None,
    warmup_s: float,
    interval_s: float = 0.5,
    metrics_port: int | None = None,
    metrics_textfile: Path | None = None,
    skew_s: float | None = None,
) -> int:
    """``report --follow``: the logs at PATH read as they grow, one explained line per notable
    event; exit 1 at the first event ``fail_on`` names (with that line), else 0 when
    ``until_exit``'s process is gone or at Ctrl-C."""
    import sys
    import time

    from pt2doctor.analysis.live import LiveEvent, LiveState
    from pt2doctor.report.live import LiveFollower
    from pt2doctor.trace.tail import Tail

    if not path.exists() and until_exit is None:  # with a job to wait for, it may come
        raise UsageError(f"no such file or directory: {path}")
    tail = Tail(path)
    state = LiveState(slow_s=slow_s, warmup_s=warmup_s, skew_s=skew_s)

    def show(event: LiveEvent) -> None:
        click.echo(event.line())

    follower = LiveFollower(state, show, fail_on, metrics_port, metrics_textfile)
    waiting = False
    try:
        while True:
            done = until_exit is not None and not _alive(until_exit)
            failed = follower.handle(tail.flush() if done else tail.poll(), final=done)
            sys.stdout.flush()
            if failed is not None:
                click.echo(f"pt2doctor: --fail-on {failed.kind}: {failed.text}", err=True)
                return 1
            if done:
                break
            if not waiting and not tail.files:
                click.echo(f"pt2doctor: waiting for a trace log in {path}", err=True)
                waiting = True
            time.sleep(interval_s)
    except KeyboardInterrupt:
        pass
    finally:
        follower.close()
    click.echo(f"pt2doctor: {state.status()}; {tail.bytes_read} bytes read", err=True)
    return 0


@click.command("report")
@click.argument("path", type=click.Path(path_type=Path))
@click.option(
    "--json",
    "json_path",
    type=click.Path(path_type=Path),
    help="Where to write report.json ('-' for stdout). Default: ./report.json, or inside a run dir.",
)
@output_options
@click.option("--strict", is_flag=True, help="Exit 1 when the log is damaged (not when it is new).")
@COLLECTIVE_TIMEOUT_OPTION
@click.option(
    "--follow",
    is_flag=True,
    help="Read the logs at PATH as they grow (a job pt2doctor did not start): one "
    "explained line per recompile, limit hit, new break site, slow or failed compile.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    type=click.Choice(FAIL_ON),
    help="With --follow: exit 1 at the first such event (repeatable).",
)
@click.option(
    "--until-exit",
    "until_exit",
    type=int,
    metavar="PID",
    help="With --follow: stop when process PID exits (after a last read).",
)
@click.option(
    "--slow-compile",
    "slow_s",
    type=click.FloatRange(min=0),
    metavar="S",
    help="With --follow: a compile over S seconds is an event.",
)
@click.option(
    "--warmup",
    "warmup_s",
    type=click.FloatRange(min=0),
    default=60.0,
    show_default=True,
    metavar="S",
    help="With --follow: a recompile S seconds after the first compile is after warmup.",
)
@click.option(
    "--skew-warn",
    "skew_s",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="With --follow on per-rank logs: a rank compiling over S seconds while every other "
    "rank has finished its compiles is an event (rank-skew).",
)
@click.option(
    "--metrics-port",
    type=click.IntRange(0, 65535),
    metavar="N",
    help="With --follow: serve the events as OpenMetrics on port N (prometheus_client: "
    "pip install 'pt2doctor[metrics]').",
)
@click.option(
    "--metrics-textfile",
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="With --follow: write the same metrics to PATH (node_exporter's textfile "
    "collector), after each read.",
)
def report_command(
    path: Path,
    json_path: Path | None,
    fmt: str,
    md_path: Path | None,
    html_path: Path | None,
    redact: bool,
    use_tlparse: bool,
    strict: bool,
    collective_timeout: float | None,
    follow: bool = False,
    fail_on: tuple[str, ...] = (),
    until_exit: int | None = None,
    slow_s: float | None = None,
    warmup_s: float = 60.0,
    metrics_port: int | None = None,
    metrics_textfile: Path | None = None,
    skew_s: float | None = None,
) -> int:
    """Explain every compilation in the TORCH_TRACE logs at PATH.

    PATH is a log, a directory of per-rank logs or a run directory (a check directory: its check
    report again, judged against the budget it ran with), or a torch.profiler trace
    (TRACE.json[.gz], or a directory of them, one per rank): its device side explained.
    With --follow, the logs are read as they grow and each notable event explained as it
    comes."""
    if follow:
        return follow_logs(path, fail_on, until_exit, slow_s, warmup_s,
                           metrics_port=metrics_port, metrics_textfile=metrics_textfile,
                           skew_s=skew_s)  # fmt: skip
    if (
        fail_on
        or until_exit is not None
        or slow_s is not None
        or skew_s is not None
        or metrics_port is not None
        or (metrics_textfile is not None)
    ):
        raise UsageError(
            "--fail-on, --until-exit, --slow-compile, --skew-warn and --metrics-* go with --follow"
        )
    if is_check_dir(path):
        from pt2doctor.cli.check import rerender_check

        return rerender_check(path, fmt, md_path, html_path, redact)
    from pt2doctor.report.document import is_report_json

    if path.is_dir() and not is_run_dir(path) and is_report_json(path / "report.json"):
        path = path / "report.json"  # an ablate (or diff) output directory: its report again
    if is_report_json(path):
        plan = _stored_plan(json_path, fmt, md_path, html_path, redact)
        if use_tlparse:
            raise UsageError(f"--tlparse reads the trace, and {path} is a stored report: "
                             "report on its log or run directory instead")  # fmt: skip
        return rerender_report(path, plan, strict)
    if is_run_dir(path) and not (json_path or md_path or html_path):
        plan = run_dir_plan(path, fmt, redact, use_tlparse)
    else:  # a bare log, or a run dir whose reports go only where --json/--md/--html say
        plan = _log_plan(json_path, html_path, use_tlparse)
        plan.redact = redact
        if is_run_dir(path) and json_path is None:
            plan.files.pop("json")
        if fmt != "term":
            if plan.stdout != "term" and plan.stdout != fmt:
                raise UsageError(f"--json - and --format {fmt} both want stdout")
            plan.stdout, plan.summary_with_document = fmt, False
    plan.add("md", md_path)
    plan.add("html", html_path)
    if use_tlparse and not (plan.files.get("html") or plan.stdout == "html"):
        raise UsageError("--tlparse links from the HTML report: add --html PATH or --format html")
    report = explain(path, plan, collective_timeout)
    problems = report["parse_stats"]["problems"]
    return 1 if strict and problems else 0
