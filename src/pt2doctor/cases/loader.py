"""Load a case file and select its cells; every problem is one line and exit 2."""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pt2doctor.cases.case import Case, Cell, cells, matches
from pt2doctor.errors import UsageError

# The module name a case file runs under. It is registered in sys.modules, as an imported module
# is: Dynamo imports a function's module by name when it inlines a function whose globals are
# not the compiled frame's (a case file's module inside nn.Sequential or a Hugging Face model).
CASES_MODULE = "__pt2doctor_cases__"


def require_case_file(path: Path) -> None:
    """A one-line error unless ``path`` is a file (checked before anything is started)."""
    if not path.is_file():
        raise UsageError(f"no such case file: {path}")


def load_cases(path: Path) -> list[Case]:
    """Run ``path`` and return its ``CASES`` (a list of :class:`Case`)."""
    return cases_of(load_namespace(path), path)


def load_namespace(path: Path) -> dict[str, object]:
    """Run the case file ``path`` once; its namespace (see :func:`_run_case_file`)."""
    require_case_file(path)
    try:
        return _run_case_file(path)
    except Exception as error:  # the user's file: say what broke, in one line
        raise UsageError(f"cannot load {path}: {type(error).__name__}: {error}") from error


def cases_of(namespace: dict[str, object], path: Path) -> list[Case]:
    """The ``CASES`` a case file's namespace defines, checked (one-line errors)."""
    found = namespace.get("CASES")
    if not isinstance(found, (list, tuple)) or not found:
        raise UsageError(f"{path} must define CASES = [pt2doctor.cases.Case(...), ...]")
    for item in found:
        if not isinstance(item, Case):
            raise UsageError(f"{path}: CASES holds {type(item).__name__}, not a Case")
    names = [case.name for case in found]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: case names must be unique, got {names}")
    return list(found)


def _run_case_file(path: Path) -> dict[str, object]:
    """Run the case file as module ``CASES_MODULE`` (kept in sys.modules; no .pyc written
    beside the user's file) and return its namespace. Its folder goes first on sys.path, as
    Python puts a script's: ``from train import GPT`` finds train.py beside the case file."""
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module = types.ModuleType(CASES_MODULE)
    module.__file__ = str(path)
    sys.modules[CASES_MODULE] = module
    code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module.__dict__


def select_cells(
    cases: Sequence[Case], patterns: Sequence[str] = (), flag: str = "--cells"
) -> list[Cell]:
    """The cells of all cases, filtered by ``patterns`` when given (``flag``: the option
    they came from, as the error names it)."""
    selected, every = [], []
    for case in cases:
        try:
            case_cells = cells(case)
        except (ValueError, TypeError) as error:
            raise UsageError(str(error)) from error
        every += [cell.id for cell in case_cells]
        selected += [cell for cell in case_cells if not patterns or matches(cell.id, patterns)]
    if not selected:
        shown = ", ".join(every[:6]) + (f" (+{len(every) - 6} more)" if len(every) > 6 else "")
        raise UsageError(f"no cell matches {flag} {' '.join(patterns)}; the cells are {shown}")
    return selected


def spec_case(spec: dict[str, Any]) -> Case:
    """The case a check or ablate worker's spec names (``case`` in ``case_file``)."""
    return {case.name: case for case in load_cases(Path(spec["case_file"]))}[spec["case"]]
