"""The user's code after a line, read from the user's file: where a value read at a graph
break goes (analysis/breaks), the body of a loop whose count is guarded (analysis/recompiles).
"""

from __future__ import annotations

import ast
import functools
import linecache
from pathlib import Path

from pt2doctor.trace.types import SourceLine


def following_code(site: SourceLine | None, limit: int = 15) -> list[str]:
    """The lines of the user's function after ``site``'s line (at most ``limit``, comments
    and blank lines left out): where the value read at a break goes, the body of a loop."""
    if site is None or not site.file or site.line is None:
        return []
    try:
        lines = Path(site.file).read_text(encoding="utf-8").splitlines()
        tree = ast.parse("\n".join(lines))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    ends = [node.end_lineno or node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.lineno <= site.line <= (node.end_lineno or node.lineno)]  # fmt: skip
    end = min(ends) if ends else None
    found = []
    for text in lines[site.line : end if end is not None else site.line + limit]:
        code = text.split("#", 1)[0].rstrip()
        if code.strip():
            found.append(code)
        if len(found) >= limit:
            break
    return found


def _innermost_function(
    file: str | None, line: int | None
) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    tree = _tree(file) if file and line is not None else None
    if tree is None or line is None:
        return None
    around = [node for node in ast.walk(tree)
              if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
              and node.lineno <= line <= (node.end_lineno or node.lineno)]  # fmt: skip
    return max(around, key=lambda node: node.lineno) if around else None


def parameters_at(file: str | None, line: int | None) -> frozenset[str] | None:
    """The parameter names of the innermost function of ``file`` around ``line`` (a graph
    break's line: the function the code after it resumes); None when the file cannot be read
    or no function holds the line."""
    function = _innermost_function(file, line)
    if function is None:
        return None
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    return frozenset(arg.arg for arg in every if arg is not None)


@functools.lru_cache(maxsize=64)
def _tree(file: str) -> ast.Module | None:
    try:
        return ast.parse(Path(file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def enclosing_class(file: str | None, line: int | None, function: str | None) -> str | None:
    """The class whose body defines ``function`` at ``line`` of ``file`` (a frame's first line:
    its ``def`` or its first decorator), read from the user's file: a frame whose ``self``
    the log does not type (Dynamo skipped it) is still ``MoE.forward``. None when unknown."""
    if not file or line is None or not function:
        return None
    tree = _tree(file)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name == function:
                first = min([item.lineno, *(d.lineno for d in item.decorator_list)])
                if line in (item.lineno, first):
                    return node.name
    return None


def class_of_line(file: str | None, line: int | None) -> str | None:
    """The class whose method holds ``line`` of ``file`` (the innermost), read from the file;
    None when the line is in no method, or the file cannot be read."""
    if not file or line is None:
        return None
    tree = _tree(file)
    if tree is None:
        return None
    found: tuple[int, str] | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            end = getattr(item, "end_lineno", None)
            method = isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            inside = method and end is not None and item.lineno <= line <= end
            if inside and (found is None or item.lineno > found[0]):
                found = (item.lineno, node.name)
    return found[1] if found else None


def positional_parameters(file: str | None, line: int | None) -> tuple[str, ...] | None:
    """The positional parameters, in order, of the function of ``file`` whose first line (its
    ``def`` or first decorator: a frame's line) is ``line``, a leading ``self``/``cls`` left
    out; None when the file cannot be read or no function starts there."""
    tree = _tree(file) if file and line is not None else None
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and line in (
                node.lineno, *(d.lineno for d in node.decorator_list[:1])):  # fmt: skip
            names = [arg.arg for arg in [*node.args.posonlyargs, *node.args.args]]
            return tuple(names[1:] if names[:1] in (["self"], ["cls"]) else names)
    return None


def top_level_function(file: str | None, line: int | None) -> tuple[str, str] | None:
    """(name, source) of the module-level function of ``file`` whose own body holds ``line``
    (not a method, nor a function nested in another): one a program calls by its global name,
    which ``torch.compile`` can wrap from outside. None otherwise, or when unreadable."""
    inner = _innermost_function(file, line)
    tree = _tree(file) if file else None
    if inner is None or tree is None or inner not in tree.body or not file:
        return None
    source = ast.get_source_segment(Path(file).read_text(encoding="utf-8"), inner) or ""
    return inner.name, source


def defined_at(file: str | None, line: int | None) -> frozenset[int] | None:
    """The first lines of the innermost function around ``line`` of ``file``: its ``def`` and
    its first decorator (a frame's line is one of them); None when unknown."""
    function = _innermost_function(file, line)
    if function is None:
        return None
    return frozenset({function.lineno, *(d.lineno for d in function.decorator_list[:1])})


def whole_statement(site: SourceLine | None) -> str:
    """The statement that starts at ``site``'s line, all of its lines (a call wrapped over
    several lines has its arguments below the first), read from the user's file; the logged
    line alone when the file cannot be read."""
    fallback = (site.statement if site is not None else "") or ""
    if site is None or not site.file or site.line is None:
        return fallback
    tree = _tree(site.file)
    if tree is None:
        return fallback
    starting = [node for node in ast.walk(tree)
                if isinstance(node, ast.stmt) and node.lineno == site.line
                and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]  # fmt: skip
    if not starting:
        return fallback
    try:
        text = Path(site.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return fallback
    node = min(starting, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
    segment = ast.get_source_segment(text, node)
    return " ".join(segment.split()) if segment else fallback


_MODES = ("inference_mode", "no_grad", "enable_grad", "set_grad_enabled", "autocast")
"""The context managers (and decorators) that set the mode a call runs in: the guarded grad
and inference modes, and autocast."""


def modes_around(site: SourceLine | None) -> list[SourceLine]:
    """The ``with`` items and decorators around ``site``'s line that set a mode
    (``torch.inference_mode()``, ``torch.no_grad()``, ``torch.autocast(...)``), outermost
    first, each as its line with ``code`` the item's own text; read from the user's file, in
    the innermost function that holds the line (or the module's top level). [] when none is
    there (a caller may set it) or the file cannot be read."""
    if site is None or not site.file or site.line is None:
        return []
    tree = _tree(site.file)
    if tree is None:
        return []
    line = site.line
    function = _innermost_function(site.file, line)
    scope: ast.AST = function if function is not None else tree
    found: list[SourceLine] = []

    def add(node: ast.expr) -> None:
        call = node.func if isinstance(node, ast.Call) else node
        name = call.attr if isinstance(call, ast.Attribute) else getattr(call, "id", "")
        if name in _MODES:
            found.append(SourceLine(site.file, node.lineno, site.function, ast.unparse(node)))

    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        for decorator in function.decorator_list:
            add(decorator)
    for node in ast.walk(scope):
        if (isinstance(node, ast.With | ast.AsyncWith) and node.body
                and node.body[0].lineno <= line <= (node.end_lineno or node.lineno)
                and _innermost_function(site.file, node.lineno) is function):  # fmt: skip
            for item in node.items:
                add(item.context_expr)
    return sorted(found, key=lambda item: item.line or 0)


def assigned_before(site: SourceLine | None, name: str) -> SourceLine | None:
    """The user's line that last assigned ``name`` before ``site``'s line, in the function that
    holds it (a ``for`` target or a ``with ... as`` too); in a loop with no earlier assignment,
    the assignment later in the loop (the previous iteration's). None when the file cannot be
    read or nothing there assigns it (a parameter, a global)."""
    if site is None or not site.file or site.line is None or not name.isidentifier():
        return None
    tree = _tree(site.file)
    if tree is None:
        return None
    function = _innermost_function(site.file, site.line)
    scope: ast.AST = function if function is not None else tree
    lines: list[int] = []
    for node in ast.walk(scope):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(
            node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For | ast.AsyncFor
        ):
            targets = [node.target]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            targets = [node.optional_vars]
        for target in targets:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                lines.append(int(getattr(node, "lineno", None) or target.lineno))
    if function is not None:
        lines = [n for n in lines if _innermost_function(site.file, n) is function]
    before = [n for n in lines if n < site.line]
    loops = [node for node in ast.walk(scope) if isinstance(node, ast.For | ast.While)
             and node.lineno <= site.line <= (node.end_lineno or node.lineno)]  # fmt: skip
    after = [n for n in lines if n > site.line and any(
        loop.lineno <= n <= (loop.end_lineno or loop.lineno) for loop in loops)]  # fmt: skip
    chosen = max(before) if before else (max(after) if after else None)
    if chosen is None and function is not None:  # a module-level name the function reads
        chosen = max((n for n in _top_level_assignments(tree, name) if n < function.lineno),
                     default=None)  # fmt: skip
    if chosen is None:
        return None
    code = linecache.getline(site.file, chosen).strip()
    return SourceLine(site.file, chosen, site.function, code or None)


_GROWERS = frozenset({"append", "extend", "insert", "pop", "update", "setdefault", "clear",
                      "popitem", "remove"})  # fmt: skip


def grown_in_function(site: SourceLine | None, name: str) -> bool | None:
    """Whether the function of the user's file around ``site``'s line changes the list or dict
    ``name`` (``temps.append(...)``, ``self.history['loss'] += [...]``, ``d[k] = v``): a
    compiled function that grows it itself, against one that is handed it grown. None when the
    file cannot be read or no function holds the line."""
    if site is None or site.file is None:
        return None
    function = _innermost_function(site.file, site.line)
    if function is None:
        return None
    wanted = name.replace('"', "'")
    for node in ast.walk(function):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in _GROWERS and ast.unparse(node.func.value) == wanted):  # fmt: skip
            return True
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        for target in targets:
            base = target.value if isinstance(target, ast.Subscript) else target
            if ast.unparse(base) == wanted and (
                isinstance(node, ast.AugAssign) or base is not target
            ):
                return True
    return False


def _top_level_assignments(tree: ast.Module, name: str) -> list[int]:
    """The lines of the module's own statements (outside functions and classes) that assign
    ``name`` (inside an ``if __name__ == "__main__":`` or a ``with`` block too)."""
    found: list[int] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(node, ast.Assign | ast.AnnAssign) and any(
                isinstance(n, ast.Name) and n.id == name
                for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
                for n in ast.walk(target)):  # fmt: skip
            found.append(node.lineno)
        for field in ("body", "orelse", "finalbody"):
            pending += [child for child in getattr(node, field, []) if isinstance(child, ast.stmt)]
    return found


def called_on(site: SourceLine | None, method: str) -> str | None:
    """The name whose ``method`` the statement at ``site`` calls (``opt`` for
    ``opt.step()``), read from the user's file; None when it calls none, or several."""
    if site is None or site.file is None or site.line is None:
        return None
    tree = _tree(site.file)
    if tree is None:
        return None
    names = {node.func.value.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == method and isinstance(node.func.value, ast.Name)
             and node.lineno == site.line}  # fmt: skip
    return names.pop() if len(names) == 1 else None
