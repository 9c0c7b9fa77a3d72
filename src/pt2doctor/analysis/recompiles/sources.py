"""Guard sources as a person writes them: ``L['self']._modules['h']._modules['0'].attn`` is
``self.h[0].attn``.

Dynamo names what a guard checks by how it reached the value (frame locals ``L[...]``, globals
``G[...]``, ``nn.Module`` internals ``_modules``/``_parameters``/``_buffers``, ``.size()[i]``).
Its recompile messages print a half-rewritten form (``kwargs['x']`` for ``L['kwargs']['x']``),
so the same value appears under two spellings; :func:`human_source` maps both to one.
Pure string functions: no torch, no state.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

from pt2doctor.trace.patterns import lazy_compile

_LOCAL = lazy_compile(r"\bL\['(\w+)'\]")
_GLOBAL = lazy_compile(r"\bG\['(\w+)'\]")
_BUILTIN = lazy_compile(r"\bG\['__builtins_dict___\d+'\]\['(\w+)'\]")
_IMPORTED = lazy_compile(r"\bG\['__import_(\w+?)'\]")
_MODULE_ITEM = lazy_compile(r"\._(?:modules|parameters|buffers)\['([^']+)'\]")
_SIZE_OR_STRIDE = lazy_compile(r"\.(size|stride)\(\)\[(\d+)\]")
_DICT_ACCESS = lazy_compile(r"\.__dict__\['(\w+)'\]")
_STACK = lazy_compile(r"\b___stack(\d+)\b")
# A dict's Nth value as Dynamo reaches it (a Hugging Face ModelOutput indexed by position).
_DICT_NTH = lazy_compile(r"\bdict\.__getitem__\((.+?), list\(dict\.keys\(\1\)\)\[(\d+)\]\)")
_INDEX = lazy_compile(r"(?<!\.shape)(?<!\.stride\(\))\[(\d+)\]")


def _module_item(match: re.Match[str]) -> str:
    key = match.group(1)
    return f"[{key}]" if key.isdigit() else f".{key}"


@lru_cache(maxsize=4096)  # the same few sources recur in every pair of variants compared
def human_source(source: str) -> str:
    """The expression the user wrote for a Dynamo guard source.

    ``L['x']`` -> ``x``; ``L['kwargs']['x']`` -> ``kwargs['x']``; ``G['name']`` -> ``name``;
    ``._modules['h']._modules['0']`` -> ``.h[0]``; ``.size()[1]`` -> ``.shape[1]``;
    ``dict.__getitem__(d, list(dict.keys(d))[0])`` -> ``list(d.values())[0]``.
    """
    text = source.strip()
    text = _BUILTIN.sub(r"\1", text)
    text = _IMPORTED.sub(lambda m: m.group(1).replace("_dot_", "."), text)
    text = _LOCAL.sub(r"\1", text)
    text = _GLOBAL.sub(r"\1", text)
    text = _MODULE_ITEM.sub(_module_item, text)
    text = _DICT_ACCESS.sub(r".\1", text)
    text = _DICT_NTH.sub(r"list(\1.values())[\2]", text)
    text = _STACK.sub(r"(value carried over the graph break, #\1)", text)
    return _SIZE_OR_STRIDE.sub(lambda m: f".{'shape' if m[1] == 'size' else 'stride()'}[{m[2]}]",
                               text)  # fmt: skip


class UserExpr(NamedTuple):
    """A guarded value as the user's expression, with its parts, worked out once where the
    expression is made from torch's text (:func:`user_expr`): the analyses read the parts,
    never the text again."""

    text: str
    """``kwargs['input_ids'].shape[1]``, ``self.blocks[0].attn.training``."""
    root: str
    """Its first name: ``self``, ``x``, ``kwargs['input_ids']``."""
    argument: str
    """The argument it starts from: ``input_ids`` for ``kwargs['input_ids']...``."""
    keyword: bool
    """The argument is passed by keyword (``kwargs['x']``, ``batch['x']`` at the call)."""
    tensor: str | None
    """For a tensor's dim (``.shape[i]``): the tensor (``kwargs['input_ids']``), else None."""
    dim: int | None
    """That dim, else None."""
    stride_of: str | None
    """For a stride (``.stride()[i]``): the tensor whose stride it is, else None."""
    direct: bool
    """The tensor of a dim is an argument itself (``x``, ``kwargs['x']``), not an attribute."""
    pattern: str
    """The text with every integer index as ``*`` (``layers[*].keys``): the sources that
    change alike at every index are one line."""
    unit: str
    """What the ``[*]`` of :attr:`pattern` counts (``layers``; ``items`` for a name that is
    not a plural word)."""
    call_form: str
    """The text as the caller names it: ``input_ids.shape[1]`` for
    ``kwargs['input_ids'].shape[1]``."""
    leaf: str | None
    """The attribute it ends in (``training`` for ``self.h[0].drop.training``), else None."""
    length_of: str | None = None
    """For ``len(x)`` (a dict's length, from its guarded keys): ``x``, else None."""
    indices: tuple[int, ...] = ()
    """Its integer indices, in order (``(2,)`` for ``layers[2].keys``): what :attr:`pattern`
    stands ``*`` for."""

    def collapsed(self) -> UserExpr:
        """This expression standing for every index: its text is its pattern."""
        return self._replace(text=self.pattern, call_form=self.pattern)


_DIM = lazy_compile(r"(.+)\.shape\[(\d+)\]")
_STRIDE = lazy_compile(r"(.+)\.stride\(\)\[\d+\]")
_ARGUMENT = lazy_compile(r"(?:kwargs|args)\['(\w+)'\]|(\w+)")
_ROOT = lazy_compile(r"\w+(?:\['\w+'\])?")
_PLAIN = lazy_compile(r"(?:\w+|(?:kwargs|args)\['\w+'\])")
_UNIT = lazy_compile(r"\.?(\w+)\[\*\]")
_KWARG = lazy_compile(r"\bkwargs\['(\w+)'\]")
_LEAF = lazy_compile(r"\.(\w+)$")


@lru_cache(maxsize=4096)
def user_expr(source: str) -> UserExpr:
    """A Dynamo guard source (``L['kwargs']['x'].size()[1]``, or Dynamo's half-rewritten
    ``kwargs['x']``, or a user expression already) as a :class:`UserExpr`."""
    text = human_source(source)
    dim = _DIM.fullmatch(text)
    stride = _STRIDE.fullmatch(text)
    argument = _ARGUMENT.match(text)
    root = _ROOT.match(text)
    pattern = _INDEX.sub("[*]", text)
    unit = _UNIT.search(pattern)
    return UserExpr(
        text=text,
        root=root.group(0) if root else text,
        argument=(argument.group(1) or argument.group(2)) if argument else text,
        keyword=text.startswith("kwargs["),
        tensor=dim.group(1) if dim else None,
        dim=int(dim.group(2)) if dim else None,
        stride_of=stride.group(1) if stride else None,
        direct=bool(dim and _PLAIN.fullmatch(dim.group(1))),
        pattern=pattern,
        unit=unit.group(1)
        if unit is not None and unit.group(1).endswith("s") and len(unit.group(1)) > 2
        else "items",
        call_form=_KWARG.sub(r"\1", text),
        leaf=leaf.group(1) if (leaf := _LEAF.search(text)) else None,
        indices=tuple(int(index) for index in _INDEX.findall(text)),
    )


def named_value(text: str, root: str | None = None, leaf: str | None = None) -> UserExpr:
    """An expression pt2doctor names itself (``grad mode``, ``self.training`` for the
    submodules of ``self``): its parts are what it is told."""
    base = root or text
    return UserExpr(text, base, base, False, None, None, None, False, text, "items", text, leaf)


def length_of(of: UserExpr) -> UserExpr:
    """``len(of)``: the length of a dict or list Dynamo guarded key by key."""
    text = f"len({of.text})"
    return named_value(text, of.root)._replace(pattern=f"len({of.pattern})", length_of=of.text)
