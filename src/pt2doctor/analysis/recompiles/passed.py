"""What the user's calling line passes to a compiled frame: the expression given as an argument
(``ids`` in ``model(input_ids=ids)``, ``x`` in ``compiled(x)``), read from the line's code as the
compile's stack logged it. A mark names it; the line that made it is found from it."""

from __future__ import annotations

import ast

from pt2doctor.analysis.recompiles.sources import UserExpr
from pt2doctor.trace.types import SourceLine


def line_tree(call_site: SourceLine | None) -> ast.Module | None:
    """The user's calling line, parsed (None when there is none or it does not parse alone:
    a call spread over several lines)."""
    try:
        return ast.parse((call_site.code or "").strip()) if call_site is not None else None
    except SyntaxError:
        return None


def keyword_passed(call_site: SourceLine | None, name: str) -> str | None:
    """What the user's calling line passes as ``name=`` (``ids`` in ``model(input_ids=ids)``,
    ``batch['input_ids']`` in ``model(**batch)``), when the line parses and says so once."""
    tree = line_tree(call_site)
    if tree is None:
        return None
    passed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                # a name or a name's item/attribute: what the line made (ids.to(device)) is a
                # new tensor at every call, and a mark on it marks nothing the user holds
                plain = not any(isinstance(n, ast.Call) for n in ast.walk(keyword.value))
                if keyword.arg == name and plain:
                    passed.add(ast.unparse(keyword.value))
                elif keyword.arg is None and isinstance(keyword.value, ast.Name):
                    passed.add(f"{keyword.value.id}['{name}']")
    return passed.pop() if len(passed) == 1 else None


def positional_passed(call_site: SourceLine | None, index: int) -> str | None:
    """The name the user's calling line passes as positional argument ``index`` (``x`` in
    ``float(compiled(x).sum())``): the one plain name at that position among the line's calls,
    None when there is none or more than one."""
    tree = line_tree(call_site)
    if tree is None:
        return None
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    # ``model(x.to(device))``: device is .to's argument, not the model's; the model gets a
    # tensor the line made, which no mark reaches
    if any(isinstance(c.func, ast.Attribute) and c.func.attr in TENSOR_METHODS for c in calls):
        return None
    passed = [c.args[index] for c in calls if len(c.args) > index]
    names = {arg.id for arg in passed if isinstance(arg, ast.Name)}
    return names.pop() if len(names) == 1 else None


TENSOR_METHODS = frozenset({
    "to", "cuda", "cpu", "float", "half", "double", "bfloat16", "long", "int", "contiguous",
    "view", "reshape", "unsqueeze", "squeeze", "permute", "transpose", "flatten", "expand",
    "clone", "detach", "type", "pin_memory",
})  # fmt: skip


def passed_name(
    call_site: SourceLine | None, expr: UserExpr, parameters: tuple[str, ...] | None = None
) -> str | None:
    """The name the user's calling line passes as the argument ``expr`` starts from: positional
    argument i for ``args[i]`` (a module called through torch.compile's wrapper), else the
    argument by keyword, or by its position among ``parameters`` (the compiled function's own,
    ``self`` left out); None when the line does not name one."""
    if expr.argument == "args" and expr.indices:
        return positional_passed(call_site, expr.indices[0])
    if parameters and expr.argument in parameters:
        index = parameters.index(expr.argument)
        return keyword_passed(call_site, expr.argument) or positional_passed(call_site, index)
    return keyword_passed(call_site, expr.argument)
