"""The user's code after a line, read from the user's file: where a value read at a graph
break goes (analysis/breaks), the body of a loop whose count is guarded (analysis/recompiles).
"""

from __future__ import annotations

import ast
import functools
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
