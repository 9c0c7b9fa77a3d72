"""``pt2doctor opcheck CASES.py``: check the custom ops a file declares, or the ones its check
cases call.

CASES.py defines ``OPCHECK_CASES``: a list of ``(op, samples)`` pairs, ``op`` a registered custom
op (``torch.ops.ns.name.default``), ``samples`` a list of argument tuples. Or it is a case file
of ``check`` and ``ablate`` (``CASES``): the first cell of each case runs eagerly, and every op
outside torch's namespaces it calls is checked on the inputs of its first call. Exit 1 if any
check fails."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pt2doctor.errors import UsageError

if TYPE_CHECKING:
    from pt2doctor.cases.case import Case


def _cases(path: Path) -> list[tuple[Any, list[Any]]]:
    from pt2doctor.cases.loader import cases_of, load_namespace

    namespace = load_namespace(path)  # run once: a second run would register its ops again
    cases = namespace.get("OPCHECK_CASES")
    if cases is None and "CASES" in namespace:
        return _called_ops(cases_of(namespace, path))
    if not isinstance(cases, list) or not all(
        isinstance(case, tuple) and len(case) == 2 for case in cases
    ):
        raise UsageError(
            f"{path} must define OPCHECK_CASES = [(op, [sample_args, ...]), ...] "
            "or CASES (check's cases: the ops they call are checked)"
        )
    return cases


def _called_ops(check_cases: list[Case]) -> list[tuple[Any, list[Any]]]:
    """The custom ops the first cell of each case calls in an eager run, each with the
    positional inputs of its first call (an op first called with keyword inputs is left out:
    opcheck's samples are positional)."""
    from pt2doctor.cases.align import custom_op_calls
    from pt2doctor.cases.loader import select_cells

    found: dict[str, tuple[Any, list[Any]]] = {}
    for case in check_cases:
        cell = select_cells([case])[0]
        try:
            calls = custom_op_calls(case, cell)
        except Exception as error:  # the user's model: one line, as check says it
            raise UsageError(
                f"case {case.name!r}, cell {cell.id}: the eager run failed: "
                f"{type(error).__name__}: {error}"
            ) from error
        for name, (op, args, kwargs) in calls.items():
            if name not in found and not kwargs:
                found[name] = (op, [tuple(args)])
    if not found:
        raise UsageError("the cases call no custom op (no op outside torch's namespaces)")
    return list(found.values())


@click.command("opcheck")
@click.argument("cases_file", type=click.Path(path_type=Path))
@click.option("--backend", default="aot_eager", show_default=True, help="Backend for alignment.")
def opcheck_command(cases_file: Path, backend: str) -> int:
    """Check custom ops: torch.library.opcheck, eager vs compiled, gradcheck."""
    from pt2doctor.inprocess.custom_ops import opcheck

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
