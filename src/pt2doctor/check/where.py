"""The module a failing cell's compiled numbers leave eager's at, in a few words (every check
rendering)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def where_note(where: Mapping[str, Any]) -> str:
    """``leaves eager at blocks.2.ff.act (Act, models.py:27)``, fused or in its own code;
    ``backward (its gradients) leaves eager at ...`` when it is the gradients that do."""
    module = where.get("culprit") or "the model"
    source = str(where.get("source") or "").rsplit("/", 1)[-1]
    how = (" when its children are compiled together" if where.get("fused")
           else " in its own code" if where.get("own_code") else "")  # fmt: skip
    what = "backward (its gradients) " if where.get("gradients") else ""
    return (f"{what}leaves eager at {module} ({where.get('kind')}"
            f"{', ' + source if source else ''}){how}")  # fmt: skip
