"""``pt2doctor opcheck CASES.py``: check the custom ops a file declares.

CASES.py defines ``OPCHECK_CASES``: a list of ``(op, samples)`` pairs, ``op`` a registered custom
op (``torch.ops.ns.name.default``), ``samples`` a list of argument tuples. Exit 1 if any check
fails."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pt2doctor.errors import UsageError


def _cases(path: Path) -> list[tuple[Any, list[Any]]]:
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        namespace = runpy.run_path(str(path))
    except Exception as error:  # the user's file: say what broke, in one line
        raise UsageError(f"cannot load {path}: {type(error).__name__}: {error}") from error
    cases = namespace.get("OPCHECK_CASES")
    if not isinstance(cases, list) or not all(
        isinstance(case, tuple) and len(case) == 2 for case in cases
    ):
        raise UsageError(f"{path} must define OPCHECK_CASES = [(op, [sample_args, ...]), ...]")
    return cases


@click.command("opcheck")
@click.argument("cases_file", type=click.Path(path_type=Path))
@click.option("--backend", default="aot_eager", show_default=True, help="Backend for alignment.")
def opcheck_command(cases_file: Path, backend: str) -> int:
    """Check custom ops: torch.library.opcheck, eager vs compiled, gradcheck."""
    from pt2doctor.customops import opcheck

    console = Console(highlight=False)
    failed = 0
    for op, samples in _cases(cases_file):
        result = opcheck(op, samples, backend=backend)
        table = Table(title=f"{result.op}: {'ok' if result.passed else 'FAILED'}")
        for column in ("check", "sample", "result", "message"):
            table.add_column(column)
        for check in result.checks:
            verdict = {True: "pass", False: "[red]FAIL[/]", None: "n/a"}[check.passed]
            table.add_row(check.name, check.sample, verdict, escape(check.message[:200]))
        console.print(table)
        failed += not result.passed
    return 1 if failed else 0
