"""Words for counts, so a report never reads "1 time(s): 1 variants"."""

from __future__ import annotations

_IRREGULAR = {"miss": "misses", "was": "were", "is": "are", "this": "these"}


def counted(n: int, word: str) -> str:
    """``1 time``, ``5 times``, ``0 variants``, ``2 misses``."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {_IRREGULAR.get(word, word + 's')}"
