"""Regular expressions compiled on first use.

Compiling a pattern runs Python code (``re``'s parser and compiler), and the analyses hold about
eighty at module level, most of them for messages a given log never contains: compiled at
import, they cost ``pt2doctor report`` several milliseconds before it reads a line.
:func:`lazy_compile` returns a stand-in that compiles the pattern when it is first used and then
hands out the compiled pattern's own bound methods, so a match costs one attribute lookup as
before.
"""

from __future__ import annotations

import re
from typing import Any, cast

# The attributes copied from the compiled pattern onto the stand-in on first use.
_ATTRIBUTES = (
    "match",
    "fullmatch",
    "search",
    "sub",
    "subn",
    "split",
    "findall",
    "finditer",
    "pattern",
    "flags",
    "groups",
    "groupindex",
)


class LazyPattern:
    """Stands in for ``re.compile(pattern, flags)`` until an attribute is read."""

    def __init__(self, pattern: str, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # only for attributes not yet copied
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(*self._source)
        for attribute in _ATTRIBUTES:
            setattr(self, attribute, getattr(compiled, attribute))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r}, {self._source[1]})"


def lazy_compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, compiled when first used (typed as the pattern it
    becomes: it answers every method and attribute of one)."""
    return cast("re.Pattern[str]", LazyPattern(pattern, flags))
