"""Parse the guard tree Dynamo logs as ``dynamo_cpp_guards_str`` into flat :class:`Guard`s.

The tree looks like::

    +- RootGuardManager
    | +- GLOBAL_STATE: ___check_global_state() against {...}
    | +- GuardManager: source=L['x'], accessed_by=..., type=<class 'torch.Tensor'>
    | | +- TENSOR_MATCH: check_tensor(L['x'], ...)   # return x + 1  # prog.py:19 in f

Each leaf guard gets the source of the nearest guard manager above it.
"""

from __future__ import annotations

from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import Guard

_NODE = lazy_compile(r"^((?:\| )*)\+- (.*)$")
_MANAGER_SOURCE = lazy_compile(
    r"^[\w ]*Manager[\w]*: (?:.*?\b)?source=(.+?)(?:, (?:accessed_by|type)=.*)?$"
)
_LEAF = lazy_compile(r"^([A-Z][A-Z0-9_]+): (.*)$")


def parse_cpp_guards(text: str) -> list[Guard]:
    """The leaf guards of one compiled variant, in tree order (unparseable lines are skipped)."""
    guards: list[Guard] = []
    sources: dict[int, str] = {}
    for line in text.splitlines():
        node = _NODE.match(line.rstrip())
        if node is None:
            continue
        depth = len(node.group(1)) // 2
        body = node.group(2)
        manager = _MANAGER_SOURCE.match(body)
        if manager is not None:
            sources[depth + 1] = manager.group(1)
            continue
        leaf = _LEAF.match(body)
        if leaf is None:
            continue
        code, _, user_line = leaf.group(2).partition("  # ")
        guards.append(
            Guard(
                source=sources.get(depth, "") if depth > 0 else "",
                kind=leaf.group(1),
                code=code.rstrip(),
                user_line=user_line.strip() or None,
            )
        )
    return guards


_SELF_TYPE = lazy_compile(r"Manager: source=L\['self'\], .*?type=<class '([\w.]+)'>")
_FIRST_ARG_TYPE = lazy_compile(r"Manager: source=L\['args'\]\[0\], .*?type=<class '([\w.]+)'>")


def self_type(text: str) -> str | None:
    """The class of the compiled frame's ``self`` (``pkg.mod.Cls``), from its guard manager
    line; None for a function without ``self`` or a tree that does not name the type."""
    match = _SELF_TYPE.search(text)
    return match.group(1) if match else None


def first_arg_type(text: str) -> str | None:
    """The class of ``args[0]`` of a frame that takes ``*args`` (None when not guarded)."""
    match = _FIRST_ARG_TYPE.search(text)
    return match.group(1) if match else None


_HF_CACHE_TYPE = lazy_compile(r"type=<class 'transformers\.cache_utils\.(\w*Cache)'>")


def hf_cache_class(text: str) -> str | None:
    """The transformers KV-cache class a variant's guards type (``StaticCache``,
    ``DynamicCache``): evidence of the cache kind ``generate()`` runs with."""
    match = _HF_CACHE_TYPE.search(text)
    return match.group(1) if match else None
