"""Decode the compile caches' records: what each lookup found, under which key, and why not.

torch logs one artifact per lookup, ``fx_graph_cache_{hit,miss,bypass}`` (Inductor's FX graph
cache) and ``aotautograd_cache_{hit,miss,bypass}``. The payload (torch 2.5 .. 2.13) is a JSON
object with ``key``, ``cache_state``, ``cache_status_detailed``, ``cache_bypass_reason`` and, for
the FX graph cache, ``components``: one ``"[hash] name: value"`` string per input of the key
(the graph, each example input, every Inductor config value, the torch version, the system's
device and Triton version ...). ``triton_kernel_info`` gives each Triton kernel's autotune cache
state. Every field is optional; a payload that is not JSON still yields the status.

Key components repeat across compiles (600+ config values each); their values are kept once
per run, in a table shared by all compiles, so memory grows with distinct components only.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from pt2doctor.trace.types import CacheEvent

CACHE_ARTIFACTS: dict[str, tuple[str, str]] = {
    f"{prefix}_cache_{status}": (cache, status)
    for prefix, cache in (("fx_graph", "fx_graph"), ("aotautograd", "aotautograd"))
    for status in ("hit", "miss", "bypass")
}
TRITON_KERNEL_INFO = "triton_kernel_info"
# A component's value is shown in a diff; longer values (a graph's code) are cut here.
MAX_COMPONENT_VALUE = 80
# Longer components (a graph's code, up to megabytes) are parsed each time, never kept.
MAX_CACHED_COMPONENT = 1024
_UNSEEN = ("", "")
_COMPONENT = re.compile(r"\[(\w+)\] (.*?): ", re.S)


class ComponentTable:
    """The values of key components, shared by every compile of a run: (name, hash) -> text."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, str], str] = {}
        self.parsed: dict[Any, tuple[str, str] | None] = {}

    def pair(self, item: Any) -> tuple[str, str] | None:
        """The (name, hash) of one ``"[hash] name: value"`` string, parsed once per distinct
        string: a 200 MB log repeats the same 375 components 600 000 times."""
        match = _COMPONENT.match(item) if isinstance(item, str) else None
        pair = None if match is None else (match.group(2), match.group(1))
        if pair is not None and pair not in self.values:
            value = item[match.end() : match.end() + 4 * MAX_COMPONENT_VALUE] if match else ""
            self.values[pair] = " ".join(value.split())[:MAX_COMPONENT_VALUE]
        if isinstance(item, str) and len(item) <= MAX_CACHED_COMPONENT:
            self.parsed[item] = pair
        return pair


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _components(raw: Any, table: ComponentTable) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, list):
        return ()
    parsed = table.parsed
    pairs = []
    for item in raw:  # the hot loop of a big log: ~350 components per lookup
        if item.__class__ is not str:
            continue
        pair = parsed.get(item, _UNSEEN)
        if pair is _UNSEEN:
            pair = table.pair(item)
        if pair is not None:
            pairs.append(pair)
    if len({name for name, _ in pairs}) < len(pairs):
        return _renamed_repeats(pairs, table)
    return tuple(pairs)


def _renamed_repeats(
    pairs: list[tuple[str, str]], table: ComponentTable
) -> tuple[tuple[str, str], ...]:
    """A name logged twice keeps both entries, the later ones as ``name#2``, ``name#3``."""
    seen: dict[str, int] = {}
    renamed = []
    for name, digest in pairs:
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            value = table.values.get((name, digest), "")
            name = f"{name}#{seen[name]}"
            table.values.setdefault((name, digest), value)
        renamed.append((name, digest))
    return tuple(renamed)


def _seconds(payload: dict[str, Any]) -> float | None:
    """What the entry cost to build (a miss: ``time_taken_ns``) or saved (a hit)."""
    for key, scale in (("time_taken_ns", 1e-9), ("time_saved_ns", 1e-9), ("time_saved_ms", 1e-3)):
        value = payload.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) * scale
    return None


def decode_cache_event(name: str, payload: str | None, table: ComponentTable) -> CacheEvent | None:
    """The lookup an artifact named ``name`` records (None: not a cache artifact)."""
    if name not in CACHE_ARTIFACTS:
        return None
    cache, status = CACHE_ARTIFACTS[name]
    try:
        decoded = orjson.loads(payload) if payload else None
    except orjson.JSONDecodeError:
        decoded = None
    if not isinstance(decoded, dict):
        return CacheEvent(cache, status)
    return CacheEvent(
        cache=cache,
        status=status,
        key=_text(decoded.get("key")),
        bypass_reason=_text(decoded.get("cache_bypass_reason")),
        detail=_text(decoded.get("cache_status_detailed")),
        # The AOTAutograd key covers the FX graph key's components (torch 2.13 logs none for
        # it): decoding them once per graph halves the work on logs that repeat them.
        components=_components(decoded.get("components"), table) if cache == "fx_graph" else (),
        seconds=_seconds(decoded),
    )


def decode_autotune_event(payload: str | None) -> CacheEvent | None:
    """The Triton autotune cache of one compile's kernels: a miss when any kernel missed, a hit
    when all that were autotuned hit (kernels with one config are not autotuned)."""
    try:
        decoded = orjson.loads(payload) if payload else None
    except orjson.JSONDecodeError:
        return None
    if not isinstance(decoded, dict):
        return None
    states = [
        info.get("autotune_cache_state") for info in decoded.values() if isinstance(info, dict)
    ]
    tuned = [state for state in states if state in ("hit", "miss")]
    if not tuned:
        return None
    status = "miss" if "miss" in tuned else "hit"
    return CacheEvent(
        "triton_autotune",
        status,
        detail=f"{len(tuned)} kernel{'s' if len(tuned) != 1 else ''} autotuned",
    )
