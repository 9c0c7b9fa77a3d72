"""Words for counts, so a report never reads "1 time(s): 1 variants"."""

from __future__ import annotations

_IRREGULAR = {"miss": "misses", "process": "processes", "was": "were", "is": "are", "this": "these"}


def counted(n: int, word: str) -> str:
    """``1 time``, ``5 times``, ``0 variants``, ``2 misses``."""
    if n == 1:
        return f"{n} {word}"
    return f"{n} {_IRREGULAR.get(word, word + 's')}"


def id_ranges(compile_ids: list[str]) -> str:
    """``0/0–0/8, 1/0``: runs of one frame's consecutive compile ids joined (a list of nine
    ids reads as one range). Ids of another form (``!0/0/1``, ``0/0_1``) are kept as they are."""
    runs: list[list[tuple[str, int]]] = []
    for compile_id in compile_ids:
        frame, _, number = compile_id.rpartition("/")
        if not frame or not number.isdigit():
            runs.append([(compile_id, -1)])
            continue
        last = runs[-1][-1] if runs else None
        if last is not None and last[1] >= 0 and last[0] == frame and last[1] + 1 == int(number):
            runs[-1].append((frame, int(number)))
        else:
            runs.append([(frame, int(number))])
    parts = []
    for run in runs:
        (frame, first), (_, final) = run[0], run[-1]
        if first < 0:
            parts.append(frame)
        elif len(run) >= 3:
            parts.append(f"{frame}/{first}–{frame}/{final}")
        else:
            parts.extend(f"{frame}/{n}" for _, n in run)
    return ", ".join(parts)
