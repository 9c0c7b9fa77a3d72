"""What each compiled callable returned, digested (``run --try-fixes``): for its first calls,
the shape and two float64 sums (plain and absolute) of every tensor it returned, and the
numbers; the same of what each call was given, and of the module's parameters at its first
call. A try's re-run digests the same calls, so a fix that changes what the compiled code
computes is seen even where the program prints nothing (analysis/findings/verdicts.py
``output_change``); a program that draws other inputs or weights at each start (unseeded)
is told apart by those.

Only public torch API (``torch.compile``); its wrapping goes through dynamo.py's one place.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from pt2doctor.torchcompat.dynamo import Call, intercept_compiled_calls

CALLS = 16
"""Calls digested per compiled callable (its first)."""
VALUES = 16
"""Tensors and numbers digested per call, at most (the first, depth first)."""
MAX_TARGETS = 8


def _leaves(value: Any, depth: int = 0) -> Iterator[Any]:
    """Tensors and numbers in a result: tuples, lists and dicts (a ModelOutput is one),
    depth first."""
    if depth > 4:
        return
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item, depth + 1)
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _leaves(item, depth + 1)
    else:
        yield value


def digest(value: Any) -> list[Any]:
    """``[[shape, sum, abs sum], number, ...]`` of what a compiled call returned."""
    import torch

    found: list[Any] = []
    with torch.no_grad():
        for leaf in _leaves(value):
            if len(found) >= VALUES:
                break
            if isinstance(leaf, torch.Tensor):
                if leaf.is_complex():
                    leaf = torch.view_as_real(leaf)
                whole = leaf.detach().to(torch.float64)
                found.append([list(leaf.shape), float(whole.sum()), float(whole.abs().sum())])
            elif isinstance(leaf, bool | int | float):
                found.append(float(leaf))
    return found


def digest_compiled_outputs(
    on_digest: Callable[[dict[str, Any]], None],
    where: Callable[[], dict[str, Any] | None] = lambda: None,
    calls: int = CALLS,
    paused: Callable[[], bool] = lambda: False,
) -> bool:
    """Wrap what ``torch.compile`` returns so that its first ``calls`` results are digested and
    sent to ``on_digest`` (``site``: the user's line that compiled it, ``call``: the call's
    number, ``values``); False when torch is not importable. A compiled module's ``forward``
    is wrapped on the module torch.compile returned; ``module.compile()`` (in place) is left
    alone. While ``paused()`` (a profiled run, once its warmup is over: its window, paired
    and plain calls are timed, and a digest reads every element of what a call was given and
    returned, a pass over each in float64), calls are not digested: a try's re-run pauses at
    the same calls, and the two runs are compared call by call where both digested one."""
    made = [0]

    def make(compiled: Any, model: Any) -> Call | None:
        if made[0] >= MAX_TARGETS:
            return None
        at = where() or {}
        site = f"{at.get('file')}:{at.get('line')}#{made[0]}"
        made[0] += 1
        seen, digested = [0], [0]

        def call(function: Callable[..., Any], args: Any, kwargs: Any) -> Any:
            seen[0] += 1
            if digested[0] >= calls or paused():
                return function(*args, **kwargs)
            digested[0] += 1
            found: dict[str, Any] = {"site": site, "call": seen[0]}
            with contextlib.suppress(Exception):  # inputs it cannot read: not digested
                found["inputs"] = digest([args, kwargs])
                if seen[0] == 1 and hasattr(model, "parameters"):
                    found["state"] = digest(list(model.parameters()))
            result = function(*args, **kwargs)
            with contextlib.suppress(Exception):  # a result it cannot read: not digested
                found["values"] = digest(result)
                on_digest(found)
            return result

        return call

    return intercept_compiled_calls("_pt2doctor_digests", make)
