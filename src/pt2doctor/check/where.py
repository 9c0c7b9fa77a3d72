"""The module a failing cell's compiled numbers leave eager's at, in a few words, and every note
a cell carries (every check rendering)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def where_note(where: Mapping[str, Any]) -> str:
    """``leaves eager at blocks.2.ff.act (Act, models.py:27)``, fused or in its own code;
    ``backward (its gradients) leaves eager at ...`` when it is the gradients that do; then the
    knob that clears it and what that means, or that Dynamo's tracing alone diverges."""
    module = where.get("culprit") or "the model"
    source = str(where.get("source") or "").rsplit("/", 1)[-1]
    how = (" when its children are compiled together" if where.get("fused")
           else " in its own code" if where.get("own_code") else "")  # fmt: skip
    what = "backward (its gradients) " if where.get("gradients") else ""
    why = (f"; {where['cleared_by']} clears it: {where.get('cleared_because')}"
           if where.get("cleared_by") else
           "; compiled by Dynamo alone (backend eager) it still diverges: the code Dynamo "
           "traces differs from eager's (an is_compiling() branch, a custom op's kernel)"
           if where.get("dynamo_only") else "")  # fmt: skip
    return (f"{what}leaves eager at {module} ({where.get('kind')}"
            f"{', ' + source if source else ''}){how}{why}")  # fmt: skip


def cell_note_lines(cell: Mapping[str, Any]) -> list[str]:
    """Every note of one cell, whole, as the terminal and report.md print them under the cell
    table: per variant its stride difference, eager's nondeterminism and where its numbers
    leave eager's; then the cell's own notes (the user side: a custom op's fix, precision by
    design, the build's mode)."""
    notes = []
    for name, entry in cell["variants"].items():
        if entry.get("stride_mismatches"):
            notes.append(f"{name}: stride differs ({', '.join(entry['stride_mismatches'][:2])})")
        if entry.get("eager_nondeterministic"):
            notes.append(f"{name}: eager differs from itself")
        if (entry.get("where") or {}).get("culprit") is not None:
            notes.append(f"{name}: {where_note(entry['where'])}")
    return notes + list(cell.get("notes", []))


def notes_by_text(cells: Iterable[Mapping[str, Any]]) -> list[tuple[list[str], str]]:
    """(cell ids, note) for every note of ``cells``, a note the cells share said once with all
    their ids (a custom op's fix on every cell that calls it), in first-seen order."""
    found: dict[str, list[str]] = {}
    for cell in cells:
        for note in cell_note_lines(cell):
            found.setdefault(note, []).append(str(cell["id"]))
    return [(ids, note) for note, ids in found.items()]
