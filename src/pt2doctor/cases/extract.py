"""The definitions a repro needs from the program itself, read from its source, never run.

A pass or a custom op defined in ``train.py`` cannot be imported from it: importing runs the
training. ``extract_definitions`` reads the program with ``ast`` and keeps, in source order,
the top-level statements the roots need: the roots themselves (a hook function by name; for a
custom op, every statement that names ``"ns::op"``: ``@custom_op``, ``register_fake("ns::op")``,
``define``), the statements attached to what is kept (``@rms_score.register_fake def _``,
``rms_score.register_autograd(...)``), and what those reference at module level (imports,
constants, helper functions, classes), transitively. What they reference that the module only
computes at run time (a name bound in a loop, under ``if __name__``, by a call's result the
program needs state for) is named in ``missing``: such a piece cannot be captured.
"""

from __future__ import annotations

import ast
import builtins
from typing import NamedTuple

_BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__"}


class Extracted(NamedTuple):
    source: str
    """The kept statements, in source order ('' when no root was found)."""
    found: list[str]
    """The roots found."""
    missing: list[str]
    """Why a piece cannot be captured: each a sentence naming it."""


def _bound(statement: ast.stmt) -> set[str]:
    """The module-level names a definition-like statement binds (none for other code)."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    if isinstance(statement, ast.Assign | ast.AnnAssign):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        return {t.id for t in targets if isinstance(t, ast.Name)}
    return set()


def _loaded(statement: ast.stmt) -> set[str]:
    """Names a statement reads, less those it binds inside itself (arguments, locals)."""
    loaded: set[str] = set()
    stored: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else stored).add(node.id)
        elif isinstance(node, ast.arg):
            stored.add(node.arg)
    return loaded - stored - _bound(statement)


def _segment(lines: list[str], statement: ast.stmt) -> str:
    first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
    return "".join(lines[first - 1 : statement.end_lineno])


def extract_definitions(source: str, functions: list[str], op_names: list[str]) -> Extracted:
    """The statements of ``source`` that define ``functions`` (top-level names) and the
    custom ops ``op_names`` (``ns::op``), with what they need."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    body = tree.body
    binders: dict[str, int] = {}
    for index, statement in enumerate(body):
        for name in _bound(statement):
            binders[name] = index  # the last binding wins, as at run time
    texts = [_segment(lines, s) for s in body]  # decorators included: @custom_op("ns::op")
    wanted: set[int] = set()
    found: list[str] = []
    for name in functions:
        if name in binders:
            wanted.add(binders[name])
            found.append(name)
    for op in op_names:
        hits = [i for i, text in enumerate(texts) if f'"{op}"' in text or f"'{op}'" in text]
        wanted.update(hits)
        if hits:
            found.append(op)
    missing: list[str] = []
    pending = list(wanted)
    while pending:
        index = pending.pop()
        for name in sorted(_loaded(body[index])):
            if name in binders and binders[name] not in wanted:
                wanted.add(binders[name])
                pending.append(binders[name])
            elif name not in binders and name not in _BUILTINS:
                user = ", ".join(sorted(_bound(body[index]))) or "the statement"
                missing.append(
                    f"{name}, which {user} (line {body[index].lineno}) uses, is not defined at "
                    "the program's top level (it exists only while the program runs)"
                )
        # Statements that attach to a kept name: decorators (``@op.register_fake``) and calls
        # (``op.register_autograd(...)``) of a definition already kept.
        kept_names = {
            n
            for i in wanted
            if not isinstance(body[i], ast.Import | ast.ImportFrom)
            for n in _bound(body[i])
        }
        for other, statement in enumerate(body):
            if other in wanted or not _attaches(statement, kept_names):
                continue
            wanted.add(other)
            pending.append(other)
    kept = "\n\n".join(_segment(lines, body[i]).rstrip("\n") for i in sorted(wanted))
    kept = kept + "\n" if kept else ""
    return Extracted(kept, found, sorted(set(missing)))


def _attaches(statement: ast.stmt, kept: set[str]) -> bool:
    """A definition decorated by, or a bare call on, an attribute of a kept name."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        roots = [_root_name(d) for d in statement.decorator_list]
        return any(isinstance(d, ast.Attribute | ast.Call) and r in kept
                   for d, r in zip(statement.decorator_list, roots, strict=True))  # fmt: skip
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return isinstance(func, ast.Attribute) and _root_name(func) in kept
    return False


def _root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute | ast.Call):
        node = node.value if isinstance(node, ast.Attribute) else node.func
    return node.id if isinstance(node, ast.Name) else None
