"""Words for counts, so a report never reads "1 time(s): 1 variants"."""

from __future__ import annotations

import re

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


_EVIDENCE = re.compile(r"^(?P<id>\S+?)(?: vs (?P<against>\S+?))?: (?P<rest>.*)$", re.S)
_NUMBER = re.compile(r"\d+")
RUN_MIN = 3
"""Evidence lines that differ only in their numbers are merged from this many on."""


def merged_runs(lines: list[str]) -> list[str]:
    """Evidence lines of consecutive recompiles that say the same thing but for their numbers
    (one per decoder layer) as one line: ``0/1–0/5: kwargs['cache'].layers[0..4].is_initialized
    flag False → True``, each differing number as its range (``layer_idx value 0..4 → 1..5``).
    Lines of another shape are kept as they are, in order."""
    out: list[str] = []
    run: list[re.Match[str]] = []

    def close() -> None:
        if len(run) >= RUN_MIN:
            out.append(_merged(run))
        else:
            out.extend(m.string for m in run)
        run.clear()

    for line in lines:
        found = _EVIDENCE.match(line)
        same = (
            found is not None
            and run
            and _NUMBER.sub("#", found["rest"]) == _NUMBER.sub("#", run[-1]["rest"])
        )
        if not same:
            close()
        if found is None:
            out.append(line)
        else:
            run.append(found)
    close()
    return out


def _merged(run: list[re.Match[str]]) -> str:
    numbers = [[int(n) for n in _NUMBER.findall(m["rest"])] for m in run]
    parts = _NUMBER.split(run[0]["rest"])
    text = parts[0]
    for position, tail in enumerate(parts[1:]):
        values = [row[position] for row in numbers]
        text += str(values[0]) if len(set(values)) == 1 else f"{min(values)}..{max(values)}"
        text += tail
    return f"{id_ranges([m['id'] for m in run])}: {text}"
