"""The report as a notebook object: HTML in Jupyter (``_repr_html_``), the terminal summary as
text. Formats the report dict only; every user-derived string is HTML-escaped."""

from __future__ import annotations

import io
from html import escape
from typing import Any, cast

from rich.console import Console

from pt2doctor.report.terminal import render_terminal
from pt2doctor.report.types import RunReport

_SEVERITY_COLOR = {"error": "#b00020", "warning": "#8a6d00", "info": "#005a9c"}


def _row(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{cell}</{tag}>" for cell in cells) + "</tr>"


def _findings(findings: list[dict[str, Any]]) -> str:
    rows = [_row(["severity", "code", "finding", "fix"], "th")]
    for finding in findings:
        color = _SEVERITY_COLOR.get(finding["severity"], "inherit")
        rows.append(
            _row(
                [
                    f'<b style="color:{color}">{escape(finding["severity"])}</b>',
                    escape(finding["code"]),
                    escape(finding["title"])
                    + "".join(
                        f"<br><code>{escape(str(e))}</code>" for e in finding["evidence"][:4]
                    ),
                    escape(finding["advice"]),
                ]
            )
        )
    return "<table>" + "".join(rows) + "</table>"


def _breaks(breaks: list[dict[str, Any]]) -> str:
    rows = [_row(["site", "code", "category", "compiles", "hits"], "th")]
    for row in breaks:
        site = row["site"]
        rows.append(
            _row(
                [
                    escape(f"{site['file']}:{site['line']} {site['function']}"),
                    f"<code>{escape(site['code'] or '')}</code>",
                    escape(row["category"]),
                    escape(", ".join(row["compile_ids"])),
                    "-" if row["hits"] is None else str(row["hits"]),
                ]
            )
        )
    return "<table>" + "".join(rows) + "</table>"


def render_html_summary(report: dict[str, Any]) -> str:
    """A compact HTML summary: headline counts, findings, graph-break sites."""
    summary = report["summary"]
    headline = (
        f"{summary['frames']} frames, {summary['compiles']} compiles "
        f"({summary['recompiles']} recompiles), {summary['break_sites']} graph-break sites, "
        f"{summary['failures']} failures, {summary['total_compile_time_s']:.2f} s compiling"
    )
    parts = [f"<div><b>pt2doctor</b> — {escape(headline)}</div>", _findings(report["findings"])]
    if report["graph_breaks"]:
        parts.append(_breaks(report["graph_breaks"]))
    return "<div class='pt2doctor-report'>" + "".join(parts) + "</div>"


class Report(dict[str, Any]):
    """The report dict (same keys as report.json), shown as HTML in Jupyter and as the
    terminal summary by ``str()``."""

    def _repr_html_(self) -> str:
        return render_html_summary(self)

    def __str__(self) -> str:
        buffer = io.StringIO()
        render_terminal(cast(RunReport, self), Console(file=buffer, width=100, color_system=None))
        return buffer.getvalue()
