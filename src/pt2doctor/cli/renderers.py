"""Which function renders a report: one table, ``RENDERERS[(kind, format)]``, for every report
kind (``run``, ``check``, ``ablate``, ``profile``: report/types.py ``report_kind``) and every rendering
(``term``: the terminal summary; ``md``: report.md; ``html``: report.html). JSON is the report
itself, the same for every kind (``dumps_report``).

It lives in cli/ because it is the one place that sees every kind: the core report package
must not import the command packages. Each entry imports its renderer when called, so
``pt2doctor report`` on a run log never imports check or ablate code (startup matters for a
command people run on every log).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # rich is imported when a summary is printed (not for --format json)
    from rich.console import Console

    from pt2doctor.ablate.types import AblateReport
    from pt2doctor.check.types import CheckReport
    from pt2doctor.report.types import Kind, ProfileReport, RunReport

Rendering = Literal["term", "md", "html"]


@dataclass
class RenderContext:
    """What renderers need besides the report. ``console``: where the terminal summary goes;
    ``links``: compile id -> tlparse page (run HTML); ``source``: the report before
    ``--redact`` (check HTML reads its raw latency samples through the original paths)."""

    console: Console | None = None
    links: dict[str, str] = field(default_factory=dict)
    source: Mapping[str, Any] | None = None


# A renderer returns the document; a terminal renderer prints on ``context.console`` and
# returns ''.
Renderer = Callable[[Any, RenderContext], str]


def _console(context: RenderContext) -> Console:
    from rich.console import Console

    return context.console or Console(highlight=False)


def _run_term(report: RunReport, context: RenderContext) -> str:
    from pt2doctor.report.terminal import render_terminal

    render_terminal(report, _console(context))
    return ""


def _run_md(report: RunReport, context: RenderContext) -> str:
    from pt2doctor.report.markdown import render_markdown

    return render_markdown(report)


def _run_html(report: RunReport, context: RenderContext) -> str:
    from pt2doctor.report.html import render_html

    return render_html(report, context.links)


def _check_term(report: CheckReport, context: RenderContext) -> str:
    from pt2doctor.check.terminal import render_check

    render_check(report, _console(context))
    return ""


def _check_md(report: CheckReport, context: RenderContext) -> str:
    from pt2doctor.check.markdown import render_check_markdown

    return render_check_markdown(report)


def _check_html(report: CheckReport, context: RenderContext) -> str:
    from pt2doctor.check.samples import load_latencies
    from pt2doctor.check.views import build_check_view
    from pt2doctor.report.html import render_view

    latencies = load_latencies(context.source or report)
    return render_view(build_check_view(report, latencies))


def _ablate_term(report: AblateReport, context: RenderContext) -> str:
    from pt2doctor.ablate.render import render_ablate

    render_ablate(report, _console(context))
    return ""


def _ablate_md(report: AblateReport, context: RenderContext) -> str:
    from pt2doctor.ablate.render import render_ablate_markdown

    return render_ablate_markdown(report)


def _ablate_html(report: AblateReport, context: RenderContext) -> str:
    from pt2doctor.ablate.views import build_ablate_view
    from pt2doctor.report.html import render_view

    return render_view(build_ablate_view(report))


def _profile_term(report: ProfileReport, context: RenderContext) -> str:
    from pt2doctor.report.device_report import render_device_terminal

    render_device_terminal(report, _console(context))
    return ""


def _profile_md(report: ProfileReport, context: RenderContext) -> str:
    from pt2doctor.report.device_report import render_device_markdown

    return render_device_markdown(report)


def _profile_html(report: ProfileReport, context: RenderContext) -> str:
    from pt2doctor.report.device_report import build_device_view
    from pt2doctor.report.html import render_view

    return render_view(build_device_view(report))


RENDERERS: dict[tuple[Kind, Rendering], Renderer] = {
    ("run", "term"): _run_term,
    ("run", "md"): _run_md,
    ("run", "html"): _run_html,
    ("check", "term"): _check_term,
    ("check", "md"): _check_md,
    ("check", "html"): _check_html,
    ("ablate", "term"): _ablate_term,
    ("ablate", "md"): _ablate_md,
    ("ablate", "html"): _ablate_html,
    ("profile", "term"): _profile_term,
    ("profile", "md"): _profile_md,
    ("profile", "html"): _profile_html,
}


def render(report: Mapping[str, Any], rendering: Rendering, context: RenderContext) -> str:
    """``report`` rendered as ``rendering`` by the renderer of its kind."""
    from pt2doctor.report.types import report_kind  # here: `report --help` skips the TypedDicts

    return RENDERERS[(report_kind(report), rendering)](report, context)
