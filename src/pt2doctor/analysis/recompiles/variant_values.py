"""The values one variant was built for, read from its own guards: ``x.shape[1]`` from its
TENSOR_MATCH (``dynamic`` where the size is None), a constant from its EQUALS/TRUE/FALSE match,
grad mode from its GLOBAL_STATE. This is what the variant table's ``serves`` shows; values are
never inferred from another variant (a prefill's empty cache has no key length at all)."""

from __future__ import annotations

import orjson

from pt2doctor.analysis.recompiles.sources import human_source, index_pattern
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import CompileRecord

_SIZE = lazy_compile(r"size=\[([^\]]*)\]")
_VALUE_KINDS = frozenset({"TRUE_MATCH", "FALSE_MATCH", "EQUALS_MATCH", "CONSTANT_MATCH"})
_GLOBALS = {"grad_mode": "grad mode"}
_DICT_KEY = lazy_compile(r"list\(dict\.keys\((?P<dict>.+)\)\)\[(?P<index>\d+)\]")


def _global_state(code: str) -> dict[str, str]:
    _, _, text = code.partition(" against ")
    try:
        state = orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(state, dict):
        return {}
    return {name: str(state[key]).capitalize() for key, name in _GLOBALS.items() if key in state}


def guard_values(record: CompileRecord) -> dict[str, str]:
    """Human source -> the value this variant's guards require (``dynamic`` for a free size)."""
    values: dict[str, str] = {}
    for guard in record.guards or []:
        source = human_source(guard.source) if guard.source else ""
        if guard.kind == "TENSOR_MATCH":
            sizes = _SIZE.search(guard.code)
            dims = sizes.group(1).split(",") if sizes and sizes.group(1).strip() else []
            for dim, size in enumerate(item.strip() for item in dims):
                values[f"{source}.shape[{dim}]"] = "dynamic" if size == "None" else size
        elif guard.kind == "GLOBAL_STATE":
            values.update(_global_state(guard.code))
        elif guard.kind in _VALUE_KINDS and source and "==" in guard.code:
            values.setdefault(source, guard.code.rpartition("==")[2].strip())
            key = _DICT_KEY.fullmatch(guard.source or "")
            if key is not None:  # a dict's keys are guarded one by one: its length
                length = f"len({human_source(key['dict'])})"
                values[length] = str(max(int(values.get(length, 0)), int(key["index"]) + 1))
    return values


def value_of(values: dict[str, str], source: str) -> str | None:
    """A source's value, where ``source`` may be a collapsed pattern (``layers[*].keys``) or a
    folded ``root.training`` (any submodule's ``.training``)."""
    if source in values:
        return values[source]
    matching = [v for key, v in values.items() if index_pattern(key) == source]
    if not matching and source.endswith(".training"):
        root = source.removesuffix(".training")
        matching = [v for k, v in values.items() if k.startswith(root) and k.endswith(".training")]
    return matching[0] if matching else None
