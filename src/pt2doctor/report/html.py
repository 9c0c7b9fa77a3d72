"""report.html: one self-contained page (inline CSS, charts as SVG data URIs, no script, no
network). Builds the view-model (report/views.py), draws its charts (report/charts.py), then
fills the Jinja templates in report/templates with autoescaping on: every user-derived string
(source lines, names, guard text, exception messages) is escaped by the template engine."""

from __future__ import annotations

from typing import Any

import jinja2

from pt2doctor.analysis.text import counted
from pt2doctor.report.types import RunReport
from pt2doctor.report.views import build_view


def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("pt2doctor.report", "templates"),
        autoescape=True,  # every template here is HTML, whatever its file name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["counted"] = lambda n, word: counted(int(n), word)
    return environment


def render_view(view: dict[str, Any]) -> str:
    """The page for a view-model (see report/views.py)."""
    from pt2doctor.report.charts import draw_chart

    charts = [[draw_chart(spec) for spec in section["charts"]] for section in view["sections"]]
    return _environment().get_template("report.html.j2").render(view=view, charts=charts)


def render_html(report: RunReport, links: dict[str, str] | None = None) -> str:
    """report.html for a run report; ``links`` maps compile ids to drill-down pages. Check and
    ablate reports have their own view-models (check/views.py, ablate/views.py), filled by
    :func:`render_view` too; cli/renderers.py picks the one for a report's kind."""
    return render_view(build_view(report, links))
