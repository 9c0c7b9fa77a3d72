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


def index_pattern(source: str) -> str:
    """The source with every integer index replaced by ``*``: ``layers[0].keys`` ->
    ``layers[*].keys``. Sources with the same pattern and the same change are one line."""
    return _INDEX.sub("[*]", source)


def collapsed_unit(pattern: str) -> str:
    """What the ``[*]`` of a collapsed source counts, for ``(2 layers)``: the container's name
    when it is a plural word, else ``items``."""
    match = re.search(r"\.?(\w+)\[\*\]", pattern)
    if match is not None and match.group(1).endswith("s") and len(match.group(1)) > 2:
        return match.group(1)
    return "items"


def argument_of(source: str) -> str:
    """The argument a source starts from: ``kwargs['input_ids'].shape[1]`` -> ``input_ids``,
    ``x.shape[0]`` -> ``x``, ``self.num_updates`` -> ``self``."""
    match = re.match(r"(?:kwargs|args)\['(\w+)'\]|(\w+)", source)
    if match is None:
        return source
    return match.group(1) or match.group(2)


def tensor_and_dim(source: str) -> tuple[str, int] | None:
    """``x.shape[1]`` -> (``x``, 1); None when the source is not a tensor dimension."""
    match = re.fullmatch(r"(.+)\.shape\[(\d+)\]", source)
    return None if match is None else (match.group(1), int(match.group(2)))


def root_of(source: str) -> str:
    """The first name of a source: ``self.blocks[0].dropout.training`` -> ``self``."""
    match = re.match(r"\w+(?:\['\w+'\])?", source)
    return match.group(0) if match else source
