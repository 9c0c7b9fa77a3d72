"""Find and read the budget: ``--budget FILE``, else pt2doctor.toml or pyproject.toml's
``[tool.pt2doctor]`` next to the case file, then in the current directory."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pt2doctor.check.contract import Budget, BudgetError, parse_budget
from pt2doctor.errors import UsageError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]


def _table(path: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsageError(f"cannot read budget {path}: {error.strerror}") from error
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"budget {path} is not valid TOML: {error}") from error
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("pt2doctor")
        return table if isinstance(table, dict) else None
    return data


def load_budget(case_file: Path, explicit: Path | None = None) -> Budget:
    """The budget that applies to ``case_file``; defaults when no file sets one."""
    if explicit is not None:
        if not explicit.is_file():
            raise UsageError(f"no such budget file: {explicit}")
        candidates = [explicit]
    else:
        folders = dict.fromkeys([case_file.resolve().parent, Path.cwd().resolve()])
        candidates = [d / name for d in folders for name in ("pt2doctor.toml", "pyproject.toml")]
    for path in candidates:
        if not path.is_file():
            continue
        table = _table(path)
        if table is None and explicit is None:
            continue
        try:
            return parse_budget(table or {}, str(path))
        except BudgetError as error:  # say which file, once
            message = str(error) if str(path) in str(error) else f"{path}: {error}"
            raise UsageError(message) from error
    return parse_budget({})
