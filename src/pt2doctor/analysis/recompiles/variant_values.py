"""The values one variant was built for, read from its own guards: ``x.shape[1]`` from its
TENSOR_MATCH (``dynamic`` where the size is None), a constant from its EQUALS/TRUE/FALSE match,
grad mode from its GLOBAL_STATE. This is what the variant table's ``serves`` shows; values are
never inferred from another variant (a prefill's empty cache has no key length at all)."""

from __future__ import annotations

import orjson

from pt2doctor.analysis.recompiles.guards import inference_modes
from pt2doctor.analysis.recompiles.sources import UserExpr, length_of, named_value, user_expr
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import CompileRecord

_SIZE = lazy_compile(r"size=\[([^\]]*)\]")
_VALUE_KINDS = frozenset({"TRUE_MATCH", "FALSE_MATCH", "EQUALS_MATCH", "CONSTANT_MATCH"})
_GLOBALS = {"grad_mode": "grad mode"}
# The length of a list passed as an argument (``len(L['crops']) == 3``); a list reached
# inside one (a KV cache's ``caches[0]['k']``) keeps the change chain its failures give.
_LENGTH = lazy_compile(r"^len\((?P<of>L\['\w+'\])\)\s*==\s*(?P<n>\d+)$")
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


def guard_values(record: CompileRecord) -> dict[UserExpr, str]:
    """The user's expression -> the value this variant's guards require (``dynamic`` for a
    free size)."""
    values: dict[UserExpr, str] = {}
    for guard in record.guards or []:
        if guard.kind == "TENSOR_MATCH":
            sizes = _SIZE.search(guard.code)
            dims = sizes.group(1).split(",") if sizes and sizes.group(1).strip() else []
            for dim, size in enumerate(item.strip() for item in dims):
                expr = user_expr(f"{guard.source or ''}.size()[{dim}]")
                values[expr] = "dynamic" if size == "None" else size
        elif guard.kind == "GLOBAL_STATE":
            values.update({named_value(k): v for k, v in _global_state(guard.code).items()})
        elif guard.kind == "LENGTH_CHECK" and (counted := _LENGTH.match(guard.code.strip())):
            # A list's length (``len(L['crops']) == 3``): its own guard says which.
            values[length_of(user_expr(counted["of"]))] = counted["n"]
        elif guard.kind in _VALUE_KINDS and guard.source and "==" in guard.code:
            values.setdefault(user_expr(guard.source), guard.code.rpartition("==")[2].strip())
            key = _DICT_KEY.fullmatch(guard.source or "")
            if key is not None:  # a dict's keys are guarded one by one: its length
                length = length_of(user_expr(key["dict"]))
                values[length] = str(max(int(values.get(length, 0)), int(key["index"]) + 1))
    mode = inference_modes(record.guards or [])
    if mode is not None:  # read from a parameter's dispatch keys
        values[named_value("inference mode")] = "on" if mode else "off"
    return values


def value_of(values: dict[UserExpr, str], expr: UserExpr) -> str | None:
    """A value's value in ``values``, where ``expr`` may stand for several (a collapsed
    ``layers[*].keys``, a folded ``root.training``: any submodule's ``.training``)."""
    by_text = {key.text: value for key, value in values.items()}
    if expr.text in by_text:
        return by_text[expr.text]
    matching = [v for key, v in values.items() if key.pattern == expr.text]
    if not matching and expr.leaf == "training":
        matching = [v for k, v in values.items() if k.root == expr.root and k.leaf == "training"]
    return matching[0] if matching else None
