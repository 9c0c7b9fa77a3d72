"""Where a command's report goes: files (report.json / .md / .html) and stdout (``--format``).

Shared by every command that produces a report (report, run, check, ablate): the same
options (``output_options``) and one function that writes them (``emit``). A run directory keeps
all three files; ``--format`` picks what is printed: the terminal summary, or one document.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

from pt2doctor.cli.renderers import RenderContext, render
from pt2doctor.errors import UsageError

FORMATS = ("term", "json", "md", "html")
DOCUMENTS = ("json", "md", "html")
# A report of any kind (run, check, ablate); cli/renderers.py picks its renderers by kind.
Report = Mapping[str, Any]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class OutputPlan:
    """``files``: format -> paths to write; ``stdout``: the format printed on stdout;
    ``tlparse_dir``: where tlparse renders (None: no drill-down)."""

    files: dict[str, list[Path]] = field(default_factory=dict)
    stdout: str = "term"
    redact: bool = False
    tlparse_dir: Path | None = None
    summary_to_stderr: bool = False
    # The terminal summary besides a document on stdout (on stderr then): `--json -`.
    summary_with_document: bool = False
    # False after `pt2doctor run`: a missing tlparse is a warning, not a lost run's exit code.
    tlparse_required: bool = True

    def add(self, fmt: str, path: Path | None) -> None:
        if path is not None and path not in self.files.setdefault(fmt, []):
            self.files[fmt].append(path)


def output_options(command: F, tlparse: bool = True) -> F:
    """``--format``, ``--md``, ``--html``, ``--redact``, ``--tlparse`` for a command."""
    options = [
        click.option("--format", "fmt", type=click.Choice(FORMATS), default="term",
                     show_default=True, help="What to print on stdout: the summary or a document."),
        click.option("--md", "md_path", type=click.Path(path_type=Path),
                     help="Also write the Markdown summary (report.md) here."),
        click.option("--html", "html_path", type=click.Path(path_type=Path),
                     help="Also write the HTML report (report.html) here."),
        click.option("--redact", is_flag=True,
                     help="Leave source lines out and make paths relative (reports to share)."),
        click.option("--tlparse", "use_tlparse", is_flag=True,
                     help="Render tlparse's report of the trace too; link compile ids to it."),
    ]  # fmt: skip
    for option in reversed(options if tlparse else options[:-1]):
        command = option(command)
    return command


def document_options(command: F) -> F:
    """``--format``, ``--md``, ``--html``, ``--redact`` (no trace to drill into: check)."""
    return output_options(command, tlparse=False)


def _document(report: Report, fmt: str, context: RenderContext) -> bytes:
    """One document: the report itself (JSON), or its kind's Markdown or HTML rendering."""
    if fmt == "json":
        from pt2doctor.report import dumps_report

        return dumps_report(report)
    return render(report, "md" if fmt == "md" else "html", context).encode()


def _write(target: Path, data: bytes) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except OSError as error:
        raise UsageError(f"cannot write {target}: {error.strerror}") from error


def _tlparse_pages(report: Report, plan: OutputPlan) -> dict[str, str] | None:
    """tlparse's pages per compile id (relative to plan.tlparse_dir), when asked for."""
    if plan.tlparse_dir is None or not (plan.files.get("html") or plan.stdout == "html"):
        return None
    from pt2doctor.report.tlparse import render_tlparse

    try:
        return render_tlparse([Path(p) for p in report["inputs"]["paths"]], plan.tlparse_dir)
    except UsageError as error:
        if plan.tlparse_required:
            raise
        click.echo(f"pt2doctor: warning: {error}", err=True)
        return None


def _links(pages: dict[str, str] | None, plan: OutputPlan, html_dir: Path) -> dict[str, str]:
    if pages is None or plan.tlparse_dir is None:
        return {}
    from pt2doctor.report.tlparse import links_from

    return links_from(pages, plan.tlparse_dir, html_dir)


def emit(report: Report, plan: OutputPlan) -> None:
    """Write the planned files, then print the chosen format (documents on stdout; the
    terminal summary on stdout, or on stderr when stdout carries a document or the program's
    own output)."""
    shown = report
    if plan.redact:
        from pt2doctor.report.redact import redact_report

        shown = redact_report(report)
    pages = _tlparse_pages(report, plan)
    for fmt in DOCUMENTS:
        for target in plan.files.get(fmt, []):
            links = _links(pages, plan, target.parent) if fmt == "html" else {}
            _write(target, _document(shown, fmt, RenderContext(links=links, source=report)))
    if plan.stdout != "term":
        links = _links(pages, plan, Path.cwd()) if plan.stdout == "html" else {}
        context = RenderContext(links=links, source=report)
        sys.stdout.buffer.write(_document(shown, plan.stdout, context))
        sys.stdout.flush()
        if not plan.summary_with_document:
            return
    to_stderr = plan.summary_to_stderr or plan.stdout != "term"
    from rich.console import Console

    console = Console(highlight=False, stderr=to_stderr)
    render(shown, "term", RenderContext(console=console))
    written = [str(path) for fmt in DOCUMENTS for path in plan.files.get(fmt, [])]
    if written:
        console.print(f"\nreport written to {', '.join(written)}")
