"""The compile caches per compile: one status per cache, its key, and the key's components.

Pure functions of the typed run. A compile can look a cache up more than once (forward and
backward graphs, a restart): its status is the worst lookup's (miss > bypass > hit), which is
what decides whether the compile paid for codegen and the kernel build.

The FX graph cache logs the components of its key (600+ of them: the graph, each example
input, every Inductor config value, torch's version, the device and Triton ...). Most are the
same for every compile of a run, so the report keeps them once (``shared``) and, per compile,
only those that differ from the shared set; ``diff`` puts them back together.
"""

from __future__ import annotations

from typing import Any

from pt2doctor.trace.types import CacheEvent, CompileRecord, Run

CACHES = ("fx_graph", "aotautograd", "triton_autotune")
STATUS_RANK = {"hit": 0, "bypass": 1, "miss": 2}
# The first line of a bypass reason, cut here (torch appends a traceback to some).
MAX_REASON = 200
# Characters of a component's hash kept in the report: enough to tell two apart.
HASH_CHARS = 10

Components = dict[str, list[str]]
"""Component name -> [hash prefix, value]."""


def _reason(text: str | None) -> str | None:
    if not text:
        return None
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:MAX_REASON] or None


def worst_events(record: CompileRecord) -> dict[str, CacheEvent]:
    """Per cache, the lookup that decided the compile's cost (miss > bypass > hit)."""
    worst: dict[str, CacheEvent] = {}
    for event in record.cache_events:
        previous = worst.get(event.cache)
        if previous is None or STATUS_RANK[event.status] > STATUS_RANK[previous.status]:
            worst[event.cache] = event
    return worst


def compile_caches(record: CompileRecord) -> dict[str, dict[str, Any]]:
    """``compiles[].caches``: ``{cache: {status, bypass_reason, key, detail, seconds}}``.

    A compile whose artifacts carried no payload (older logs) still has its outcome."""
    caches = {
        cache: {
            "status": event.status,
            "bypass_reason": _reason(event.bypass_reason),
            "key": event.key,
            "detail": event.detail,
            "seconds": None if event.seconds is None else round(event.seconds, 6),
        }
        for cache, event in worst_events(record).items()
    }
    for cache, status in record.cache.items():
        caches.setdefault(
            cache,
            {"status": status, "bypass_reason": None, "key": None, "detail": None,
             "seconds": None},
        )  # fmt: skip
    return dict(sorted(caches.items()))


def _component_map(event: CacheEvent, values: dict[tuple[str, str], str]) -> Components:
    return {
        name: [digest[:HASH_CHARS], values.get((name, digest), "")]
        for name, digest in event.components
    }


def shared_components(run: Run) -> dict[str, Components]:
    """Per cache, the key components every lookup of the run has, with the same hash."""
    shared: dict[str, set[tuple[str, str]]] = {}
    for record in run.compiles:
        for event in record.cache_events:
            if not event.components:
                continue
            pairs = set(event.components)
            shared[event.cache] = shared[event.cache] & pairs if event.cache in shared else pairs
    return {
        cache: {
            name: [digest[:HASH_CHARS], run.cache_component_values.get((name, digest), "")]
            for name, digest in sorted(pairs)
        }
        for cache, pairs in sorted(shared.items())
    }


def own_components(
    record: CompileRecord, shared: dict[str, Components], values: dict[tuple[str, str], str]
) -> dict[str, Components]:
    """Per cache, the components of this compile's deciding lookup that are not shared."""
    own: dict[str, Components] = {}
    for cache, event in worst_events(record).items():
        common = shared.get(cache, {})
        mine = {
            name: pair
            for name, pair in _component_map(event, values).items()
            if common.get(name, [None])[0] != pair[0]
        }
        if mine:
            own[cache] = mine
    return own


def full_components(row: dict[str, Any], shared: dict[str, Components], cache: str) -> Components:
    """A report compile row's whole key for ``cache``: the run's shared part plus its own."""
    own = (row.get("caches") or {}).get(cache, {}).get("components") or {}
    return {**shared.get(cache, {}), **own}
