"""The advice tables, the fix catalog (tests/fix_catalog.py) and the tests that apply each fix
(``fixproof.prove`` calls) stay together: every paragraph's fixes are catalogued, every quote is
in its paragraph, and every catalogued fix is applied in at least two programs."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

from fix_catalog import FIXES, MODULES, NOT_FIXES

TESTS = Path(__file__).resolve().parents[1]
PROGRAMS_PER_FIX = 2


def _paragraphs() -> dict[str, str]:
    """Every fix paragraph: the advice module's str constants and its tables' entries, and the
    other modules' public paragraphs (str constants of 100 characters or more), each once (a
    module that imports another's paragraph does not list it again)."""
    found: dict[str, str] = {}
    for module_name, module in MODULES.items():
        prefix = "" if module_name == "advice" else f"{module_name}:"
        for name, value in vars(module).items():
            if not name.isupper() or name.startswith("_"):
                continue
            if isinstance(value, str) and (module_name == "advice" or len(value) >= 100):
                found.setdefault(f"{prefix}{name}", value)
            elif isinstance(value, dict) and module_name == "advice":
                found.update({f"{name}[{key}]": text for key, text in value.items()})
    unique: dict[str, str] = {}
    for name, text in found.items():  # the advice module first: its names are kept
        if text not in unique.values():
            unique[name] = text
    return unique


def _parametrized(function: ast.FunctionDef) -> dict[str, list[str]]:
    """Argument name -> the function names a ``pytest.mark.parametrize`` of ``function`` gives
    it (``("before", "after"), [(a, b), (c, d)]`` -> before: [a, c], after: [b, d])."""
    found: dict[str, list[str]] = defaultdict(list)
    for decorator in function.decorator_list:
        if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith(
                "mark.parametrize") and len(decorator.args) >= 2):  # fmt: skip
            continue
        names_node, values = decorator.args[0], decorator.args[1]
        names = (
            ast.literal_eval(names_node) if isinstance(names_node, ast.Constant | ast.Tuple) else ()
        )
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        for row in getattr(values, "elts", []):
            items = row.elts if isinstance(row, ast.Tuple) else [row]
            for name, item in zip(names, items, strict=False):
                found[name].append(ast.unparse(item))
    return found


def _applied() -> dict[str, set[str]]:
    """fix id -> the programs (``before`` functions) a ``prove(fix_id, before, after)`` call in
    the tests applies it to (each value of a parametrized ``before`` is one program)."""
    programs: dict[str, set[str]] = defaultdict(set)
    for path in TESTS.rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            given = _parametrized(function)
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "prove"):
                    continue
                args = list(node.args) + [kw.value for kw in node.keywords if kw.arg == "before"]
                if len(args) >= 2 and isinstance(args[0], ast.Constant):
                    before = ast.unparse(args[1])
                    for name in given.get(before, [before]):
                        programs[str(args[0].value)].add(f"{path.name}:{name}")
    return programs


def test_every_quote_is_in_its_paragraph() -> None:
    for fix_id, entry in FIXES.items():
        assert entry.quote in entry.paragraph(), fix_id


def test_every_paragraph_has_its_fixes_catalogued() -> None:
    paragraphs = _paragraphs()
    catalogued = {entry.text for entry in FIXES.values()} | set(NOT_FIXES)
    contained = {
        name
        for name, text in paragraphs.items()
        if any(paragraphs[other] in text for other in catalogued if other in paragraphs)
    }
    missing = sorted(set(paragraphs) - catalogued - contained)
    assert not missing, f"advice paragraphs with no fix in tests/fix_catalog.py: {missing}"
    assert not set(NOT_FIXES) - set(_paragraphs()), "NOT_FIXES names a paragraph that is gone"


def test_every_fix_is_applied_in_two_programs() -> None:
    applied = _applied()
    unknown = sorted(set(applied) - set(FIXES))
    assert not unknown, f"prove() calls with ids not in the catalog: {unknown}"
    short = {
        fix_id: sorted(applied.get(fix_id, ()))
        for fix_id in FIXES
        if len(applied.get(fix_id, ())) < PROGRAMS_PER_FIX
    }
    assert not short, f"fixes applied in fewer than {PROGRAMS_PER_FIX} programs: {short}"
