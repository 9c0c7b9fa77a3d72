"""Why a cache missed, by diff: pair each graph of run B with the same graph of run A and name
the cache-key components that differ (``cache_miss_cause`` changes of ``pt2doctor diff``).

Graphs are matched by place: the frame (function, file name, first line) and the variant's
rank among that frame's compiles, never by compile id or cache key (both change with the
cause). A graph that missed in B is explained against A's lookup of the same graph: a
different key names its differing components (a config value, the torch or Triton version, a
source file's hash, a device property); the same key means B's cache did not hold A's entry
(another cache dir, an empty one, evicted). A pure function of two report dicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from pt2doctor.analysis.coldstart.caches import full_components
from pt2doctor.analysis.coldstart.explain import baked_key_parts
from pt2doctor.analysis.diff.change import Change

Report = Mapping[str, Any]
# The caches whose lookups are keyed by the graph (Triton's autotune cache is per kernel).
KEYED_CACHES = ("fx_graph", "aotautograd")
# Components named in a change's detail; the full list is in ``components``.
MAX_NAMED = 4


@dataclass
class CacheMissCause(Change):
    """A ``cache_miss_cause`` change: ``components`` lists ``{name, a, b}`` per differing
    key component (values as logged, cut to 80 characters; hash prefixes when values match)."""

    components: list[dict[str, Any]] = field(default_factory=list)


def _place(row: dict[str, Any], rank: int) -> str:
    name = PurePath(row.get("file") or "").name
    return f"{row.get('function')} ({name}:{row.get('line')}) variant {rank}"


def _ranked(report: Report) -> dict[str, tuple[dict[str, Any], int]]:
    """Compile rows by place, with their variant rank (the n-th compile of that frame)."""
    seen: dict[str, int] = {}
    places = {}
    for row in report.get("compiles", []):
        frame = _place(row, 0)
        seen[frame] = seen.get(frame, 0) + 1
        places[_place(row, seen[frame] - 1)] = (row, seen[frame] - 1)
    return places


def graphs_by_place(report: Report) -> dict[str, dict[str, Any]]:
    """Compile rows keyed by frame and variant rank (the n-th compile of that frame)."""
    return {place: row for place, (row, _) in _ranked(report).items()}


def _frame(row: dict[str, Any]) -> tuple[object, str]:
    """A row's frame without its line: (function, file name)."""
    return row.get("function"), PurePath(row.get("file") or "").name


def paired_places(a: Report, b: Report) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(place, A's row, B's row) of the graphs both runs compiled: by frame, line and variant;
    then, for those left, by frame and variant alone where each run has that function at one
    line of that file (an edit above it moved it, as a fix of the code often does)."""
    before, after = _ranked(a), _ranked(b)
    pairs = [(place, before[place][0], row) for place, (row, _) in after.items() if place in before]
    left_a = {(_frame(r), n): r for p, (r, n) in before.items() if p not in after}
    lines_a, lines_b = _lines_by_frame(before), _lines_by_frame(after)
    for place, (row, rank) in after.items():
        old = left_a.get((_frame(row), rank)) if place not in before else None
        if old is not None and len(lines_a[_frame(row)]) == len(lines_b[_frame(row)]) == 1:
            pairs.append((place, old, row))
    return pairs


def _lines_by_frame(
    places: dict[str, tuple[dict[str, Any], int]],
) -> dict[tuple[object, str], set[object]]:
    found: dict[tuple[object, str], set[object]] = {}
    for row, _ in places.values():
        found.setdefault(_frame(row), set()).add(row.get("line"))
    return found


def differing_components(a: dict[str, list[str]], b: dict[str, list[str]]) -> list[dict[str, Any]]:
    """``{name, a, b}`` for every component whose hash differs or that one side lacks."""
    rows = []
    for name in sorted(a.keys() | b.keys()):
        before, after = a.get(name), b.get(name)
        if before is not None and after is not None and before[0] == after[0]:
            continue
        rows.append({"name": name, "a": _shown(before, after), "b": _shown(after, before)})
    return rows


def _shown(value: list[str] | None, other: list[str] | None) -> str | None:
    """A component's value; its hash prefix when the cut values read the same."""
    if value is None:
        return None
    if other is not None and value[1] == other[1]:
        return f"{value[1]} [{value[0]}]"
    return value[1]


def _detail(components: list[dict[str, Any]], same_key: bool) -> str:
    if same_key:
        return "same key as A: B's cache dir did not hold A's entry (another or empty dir)"
    if not components:
        return "the key differs; its components were not logged"
    named = "; ".join(f"{c['name']}: {c['a']} -> {c['b']}" for c in components[:MAX_NAMED])
    more = f" (+{len(components) - MAX_NAMED} more)" if len(components) > MAX_NAMED else ""
    return f"key components differ: {named}{more}"


GRAPH_COMPONENTS = ("gm", "example_inputs[", "fx_kwargs[static_input_idxs]")
"""The FX graph cache key's components that are the graph itself and its inputs: one that
differs at a place means B compiled another graph there (its code, or another variant at
that rank), not that something broke the cache."""


def _is_graph(name: str) -> bool:
    return name.startswith(GRAPH_COMPONENTS)


def _baked_changes(a: Report, b: Report) -> list[tuple[str, str, str]]:
    """(expression, A's value, B's) of each float both runs baked into their graphs with
    other values (``cold_start.baked_constants``): why the graph, and its key, differs when
    the code does not."""
    before = (a.get("cold_start") or {}).get("baked_constants") or {}
    after = (b.get("cold_start") or {}).get("baked_constants") or {}
    return [(baked_key_parts(key)[1], str(value), str(after[key]))
            for key, value in before.items() if key in after and after[key] != value][:MAX_NAMED]  # fmt: skip


def _cause(place: str, cache: str, a: Report, b: Report, rows: tuple[Any, Any]) -> Change | None:
    before, after = rows[0]["caches"][cache], rows[1]["caches"][cache]
    if {before["status"], after["status"]} == {"bypass", "hit"}:
        return _bypass_change(place, cache, before, after)
    if after["status"] != "miss" and before["status"] != "miss":
        return None
    if after["status"] == before["status"] and before["key"] == after["key"]:
        return None  # both missed the same key: nothing tells them apart
    shared_a = (a.get("cold_start") or {}).get("key_components") or {}
    shared_b = (b.get("cold_start") or {}).get("key_components") or {}
    components = differing_components(
        full_components(rows[0], shared_a, cache), full_components(rows[1], shared_b, cache)
    )
    if not components and cache != "fx_graph":
        # torch 2.13 logs no components for the AOTAutograd key, which covers the FX graph's.
        components = differing_components(
            full_components(rows[0], shared_a, "fx_graph"),
            full_components(rows[1], shared_b, "fx_graph"),
        )
    same_key = before["key"] is not None and before["key"] == after["key"]
    # B compiles another graph (the code changed): a new key, so a miss, is what the edit costs
    # once, not something that went wrong.
    new_graph = any(_is_graph(c["name"]) for c in components)
    baked = _baked_changes(a, b) if new_graph else []
    new_graph = new_graph and not baked  # the same code baking another float: the cause
    detail = (
        _detail(components, same_key)
        if after["status"] == "miss"
        else "B hit" + (" the entry A wrote (same key)" if same_key else "")
    )
    if baked and after["status"] == "miss":
        named = ", ".join(f"{k}: {x} → {y}" for k, x, y in baked)
        detail = (f"B's graph bakes other values than A's ({named}): a float that changes between "
                  f"starts changes the key (cache_key_constant); {detail}")  # fmt: skip
    if new_graph and after["status"] == "miss":
        detail = (
            "B compiles another graph than A here (its code or its inputs differ), so its key "
            "is new: a miss the change costs once, nothing to fix"
        )
    return CacheMissCause(
        "cache_miss_cause",
        f"{place} {cache}",
        before["status"],
        after["status"],
        regression=before["status"] == "hit" and after["status"] == "miss" and not new_graph,
        detail=detail,
        components=components,
    )


def _bypass_change(place: str, cache: str, before: dict[str, Any], after: dict[str, Any]) -> Change:
    """A lookup that bypassed the cache in one run and hit in the other: B hitting where A
    bypassed is the fix working (an improvement), the other way a regression."""
    if after["status"] == "hit":
        detail = f"B hit where A bypassed the cache ({before.get('bypass_reason') or 'no reason'})"
        return Change("cache_miss_cause", f"{place} {cache}", "bypass", "hit", False, detail)
    detail = f"B bypassed the cache ({after.get('bypass_reason') or 'no reason'}) where A hit"
    return Change("cache_miss_cause", f"{place} {cache}", "hit", "bypass", True, detail)


def cache_miss_causes(a: Report, b: Report) -> list[Change]:
    """One ``cache_miss_cause`` per graph and cache that missed in one run and not the same
    way in the other, naming the differing key components."""
    changes: list[Change] = []
    for place, old, row in paired_places(a, b):
        if not row.get("caches") or not old.get("caches"):
            continue
        for cache in sorted(row["caches"].keys() & old["caches"].keys() & set(KEYED_CACHES)):
            change = _cause(place, cache, a, b, (old, row))
            if change is not None:
                changes.append(change)
    return changes


def _misses(rows: list[dict[str, Any]]) -> int:
    return sum(
        1 for row in rows for entry in (row.get("caches") or {}).values()
        if entry["status"] == "miss"
    )  # fmt: skip


def rank_miss_causes(
    compiles: list[dict[str, Any]], key_components: dict[str, Any]
) -> list[dict[str, Any]]:
    """Across the ranks (streams) of one job: each graph a rank missed that the rank with the
    fewest misses looked up too, with the differing key components (``cache_miss_cause``
    changes, ``stream`` added). ``compiles`` are the compiles' cache lookups as report rows
    hold them (``stream``, ``function``, ``file``, ``line``, ``caches``), ``key_components``
    the run's shared key components. Empty for a single stream."""
    streams: dict[str, list[dict[str, Any]]] = {}
    for row in compiles:
        streams.setdefault(row.get("stream") or "", []).append(row)
    # Ranks that looked no cache up have nothing to compare.
    streams = {s: rows for s, rows in streams.items() if any(row.get("caches") for row in rows)}
    if len(streams) < 2:
        return []
    shared = {"cold_start": {"key_components": key_components}}
    reference = min(streams, key=lambda stream: _misses(streams[stream]))
    causes = []
    for stream, rows in streams.items():
        if stream == reference:
            continue
        a, b = {**shared, "compiles": streams[reference]}, {**shared, "compiles": rows}
        for change in cache_miss_causes(a, b):
            if change.after == "miss":
                causes.append({"stream": stream, "against": reference, **change.__dict__})
    return causes
