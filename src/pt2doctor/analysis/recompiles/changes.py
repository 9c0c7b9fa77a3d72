"""What changed, per recompile: one line per changed value, in the user's names, ``old -> new``.

Dynamo's guard-failure text names one guard per earlier variant, spelled half-raw
(``kwargs['x']``); the guard-set diff (analysis/recompiles/guards.py) names all of them, spelled raw
(``L['kwargs']['x']``). Here both become :class:`SourceChange` lines keyed by the human source,
compared with the *nearest* earlier variant (the one with the fewest changes: what a person means
by "what changed"), and guards that only follow another change are folded into it: a stride that
moved with a size, the ``.training`` of N submodules, the same change at every index of a list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pt2doctor.analysis.recompiles.guards import (
    FailedGuard,
    device_of_keys,
    diff_guard_sets,
    fold_inference_mode,
    parse_recompile_reason,
)
from pt2doctor.analysis.recompiles.sources import (
    UserExpr,
    length_of,
    named_value,
    user_expr,
)
from pt2doctor.analysis.recompiles.variant_values import guard_values
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import CompileRecord, SourceLine

# Kinds whose values come from a small set: a variant per value is bounded by design.
FLAG_KINDS = frozenset(
    {
        "flag",
        "grad_mode",
        "autocast",
        "dtype",
        "device",
        "requires_grad",
        "type",
        "none",
        "rank",
        "inference",
        "inference_mode",
    }
)
# A tensor's memory layout (its strides at the same sizes): layouts come from a small set
# (contiguous, transposed, channels_last, a view of a bigger buffer), each compiling its own
# variant; a stride that changed once is bounded like a flag.
LAYOUT_KINDS = frozenset({"stride"})
# "... expected 20, actual 64." and, for a parameter, Dynamo's advice after it ("... actual 64.
# Guard failed on a parameter, consider using ...force_parameter_static_shapes ..."): the
# values end at the first sentence's end.
_EXPECTED = lazy_compile(r"expected (.+?), actual (.+?)(?:\.\s+[A-Z].*)?\.?$", re.S)
_NOW = lazy_compile(r"^(?P<old>.+?) \(now (?P<new>.+)\)$", re.S)
_TENSOR_TYPE = lazy_compile(r"expected type of '(.+)' to be a tensor type, ' but found (.+)$")
_CHECK_ID = lazy_compile(r"___check_(obj|type)_id\((.+?), \d+\)")
_OTHER_BOOL = {"True": "False", "False": "True"}
_LENGTH = lazy_compile(r"len\((?P<of>.+)\) != (?P<n>\d+)")
# Dynamo's own guard on a list's or dict's length (``len(self.history['loss']) == 2``), and on
# its being empty (``not self.history['loss']``): the guard that failed, so the old value.
_LENGTH_IS = lazy_compile(r"len\((?P<of>.+)\) == (?P<n>\d+)")
_DEALLOCATED = lazy_compile(r"Cache line invalidated because (?P<of>.+) got deallocated")
_EMPTY = lazy_compile(r"not (?P<of>[\w.\[\]'\"]+)")
_CLASS = lazy_compile(r"type=<class '([\w.]+)'>")
_FOUND_CLASS = lazy_compile(r"^<class '([\w.]+)'>$")  # "but found <class 'dict'>"
# A dynamic value Python code needed concrete again, guarded as an expression equal to the
# number it had (``(1e-05 + ___stack0) == 0.45``: a float from .item() or numpy, specialized
# where numpy or a Python branch read it): that expression's value is what changed.
_SPECIALIZED = lazy_compile(
    r"\((?P<expr>.*[A-Za-z_].*)\) == (?P<value>-?\d+(?:\.\d*)?(?:e[-+]?\d+)?)"
)
# A 0-d tensor's value that Python code needed as a number (``cache[pos] = k`` with a tensor
# ``pos``: Dynamo guards ``pos.item() == 3``): the tensor's value changed.
_ITEM_IS = lazy_compile(
    r"(?P<expr>[A-Za-z_][\w.\[\]'\"]*\.item\(\)) == (?P<value>-?\d+(?:\.\d*)?(?:e[-+]?\d+)?)"
)
_TENSOR_KINDS = {"dispatch key set": "dispatch_keys"}
_GLOBAL_NAMES = {"grad_mode": "grad mode", "autocast": "autocast",
                 "inference_mode": "inference mode"}  # fmt: skip


def kind_words(kind: str, source: str) -> str:
    """The change's kind as words before its values, or nothing when the source already says
    it (``grad mode: True → False``, not ``grad mode grad mode``) or its values do
    (``key_padding_mask None → not None``)."""
    if kind in ("none", "inference"):
        return ""
    words = kind.replace("_", " ")
    return "" if words == source else f"{words} "


@dataclass(slots=True)
class SourceChange:
    """One value that differs between a new variant and the earlier one it is compared with."""

    expr: UserExpr
    """The user's expression (``kwargs['input_ids'].shape[1]``, ``self.training``) with its
    parts (the tensor and dim of a size, the argument it starts from)."""
    kind: str
    """``size``, ``stride``, ``rank``, ``dtype``, ``device``, ``requires_grad``, ``flag`` (a
    bool), ``value`` (another Python constant), ``none`` (None or not), ``type``,
    ``object_identity``, ``grad_mode``, ``autocast``, ``dispatch_keys`` or ``other``."""
    old: str | None
    new: str | None
    count: int = 1
    """How many guarded values this line stands for (collapsed indices, submodules)."""
    unit: str = ""
    """What ``count`` counts (``layers``, ``submodules``)."""
    folded: list[str] = field(default_factory=list)
    """Sources whose change only followed this one (a tensor's stride with its size)."""
    dynamic: bool = False
    """The new variant made this value dynamic: later values reuse it."""
    hint: str | None = None
    """Dynamo's own HINT for the failed guard."""
    installed_at: SourceLine | None = None
    """The user line whose code installed the guard (the guard's user stack)."""
    specialized_at: SourceLine | None = None
    """For a size: the innermost line of the user's own code where the shape env made it
    static (``symbolic_shape_specialization``'s user stack), when the log has one."""

    @property
    def source(self) -> str:
        """The user's expression as text."""
        return self.expr.text

    @property
    def label(self) -> str:
        """``source (2 layers)``: the source with what it stands for."""
        return f"{self.source} ({self.count} {self.unit})" if self.count > 1 else self.source


def _rhs(code: str) -> str | None:
    for operator in (" == ", " != ", " is not ", " is "):
        if operator in code:
            value = code.rpartition(operator)[2].strip()
            return f"not {value}" if operator in (" != ", " is not ") else value
    return None


def _value_kind(old: str | None, new: str | None) -> str:
    values = {old, new} - {None}
    if values <= {"True", "False"}:
        return "flag"
    if "None" in values or "not None" in values:
        return "none"
    return "value"


def _tensor_change(failure: FailedGuard) -> SourceChange:
    _, name, field_name, index = failure.key
    expected = _EXPECTED.search(failure.text)
    old, new = (expected.group(1), expected.group(2)) if expected else (None, None)
    if field_name in ("size", "stride") and index:
        return SourceChange(user_expr(f"{name}.{field_name}()[{index}]"), field_name, old, new)
    if field_name == "dispatch key set" and old is not None and new is not None:
        return _dispatch_change(name, _keys(old), _keys(new))
    return SourceChange(user_expr(name), _TENSOR_KINDS.get(field_name, field_name), old, new)


def _keys(text: str) -> str:
    """``CPU, BackendSelect`` for ``DispatchKeySet(CPU, BackendSelect)`` (Dynamo's text) or
    for itself (the guard-set diff's)."""
    return text.removeprefix("DispatchKeySet(").removesuffix(")")


INFERENCE, NORMAL = "an inference tensor", "a normal tensor"


def _dispatch_change(name: str, old: str, new: str) -> SourceChange:
    """What a dispatch key change means: the Autograd keys (and ADInplaceOrView) on one side
    only are a tensor made under ``torch.inference_mode()`` (an inference tensor has no
    Autograd keys) against one made outside it, the side without them the inference tensor;
    a backend key changed (CPU to Meta) is the tensor's device (Dynamo guards the keys, not the
    device); else the keys themselves. Where the call's grad or inference mode changed too,
    every tensor's Autograd keys change with it, and guards.py folds those into its ``grad mode``
    change before this is asked (two calls under ``no_grad``, one given a tensor made under
    inference_mode, differ by AutogradCPU alone)."""
    devices = device_of_keys(old), device_of_keys(new)
    if devices[0] and devices[1] and devices[0] != devices[1]:  # the tensor moved device
        return SourceChange(user_expr(name), "device", devices[0], devices[1])
    before, after = set(old.split(", ")), set(new.split(", "))
    changed = before ^ after
    if any(key.startswith("Autograd") or key == "ADInplaceOrView" for key in changed) and all(
        key == "ADInplaceOrView" or key.startswith("Autograd") for key in changed
    ):
        values = (INFERENCE, NORMAL) if after - before else (NORMAL, INFERENCE)
        return SourceChange(user_expr(name), "inference", *values)
    return SourceChange(user_expr(name), "dispatch_keys", old, new)


def _value_change(failure: FailedGuard, new_values: dict[str, str]) -> SourceChange:
    expr = user_expr(failure.key[1])
    now = _NOW.match(failure.text)
    if now is not None:
        old, new = _rhs(now["old"]), _rhs(now["new"])
    else:
        old, new = _rhs(failure.text), new_values.get(expr.text)
    if new is None and old in ("None", "not None"):  # a failed `is None` guard: the other one
        new = "not None" if old == "None" else "None"
    return SourceChange(expr, _value_kind(old, new), old, new)


def _id_change(failure: FailedGuard) -> SourceChange:
    _, source, guard_kind = failure.key
    if guard_kind == "TYPE_MATCH":
        now = _NOW.match(failure.text)
        old = _CLASS.search(now["old"]) if now else None
        new = _CLASS.search(now["new"]) if now else None
        return SourceChange(user_expr(source), "type", old and old.group(1), new and new.group(1))
    return SourceChange(user_expr(source), "object_identity", "an object", "another object")


def _global_change(failure: FailedGuard) -> SourceChange:
    category = failure.key[1]
    expected = _EXPECTED.search(failure.text)
    old, new = (expected.group(1), expected.group(2)) if expected else (None, None)
    return SourceChange(named_value(_GLOBAL_NAMES.get(category, category)), category, old, new)


_AT_LEAST_TWO = lazy_compile(r"2 <= (?P<dim>\S+\.size\(\)\[\d+\])(?: <= \d+)?")
ZERO_ONE = "0 or 1"
"""The new value of a dynamic size whose ``2 <= size`` guard failed: Dynamo compiles sizes 0
and 1 on their own (0/1 specialization), whichever came."""


def went_zero_one(kind: str, values: list[str]) -> bool:
    """A size that was dynamic and then got 0 or 1 (its own variant by design)."""
    return kind == "size" and "dynamic" in values and values[-1:] in ([ZERO_ONE], ["0"], ["1"])


def _text_change(failure: FailedGuard, new_values: dict[str, str]) -> SourceChange:
    text = failure.text.strip()
    small = _AT_LEAST_TWO.fullmatch(text)
    new = new_values.get(user_expr(small["dim"]).text) if small is not None else None
    if small is not None and new in (None, "0", "1"):
        # a dynamic size got 0 or 1: specialized, a variant of its own (a new value the new
        # compile keeps dynamic, past the upper bound, is a branch's: below)
        return SourceChange(user_expr(small["dim"]), "size", "dynamic", new or ZERO_ONE)
    length = _LENGTH.fullmatch(text) or _LENGTH_IS.fullmatch(text)
    if length is not None:  # a dict or list of another length (kwargs with one key more)
        source = length_of(user_expr(length["of"]))
        return SourceChange(source, "value", length["n"], new_values.get(source.text))
    freed = _DEALLOCATED.fullmatch(text)
    if freed is not None:  # a guarded object was freed: a new one each call
        return SourceChange(user_expr(freed["of"]), "object_identity", "an object", "a new one")
    empty = _EMPTY.fullmatch(text)
    if empty is not None:  # it was empty: a list the code appends to, for one
        source = length_of(user_expr(empty["of"]))
        return SourceChange(source, "value", "0", new_values.get(source.text))
    specialized = _SPECIALIZED.fullmatch(text) or _ITEM_IS.fullmatch(text)
    if specialized is not None:
        return SourceChange(user_expr(specialized["expr"]), "value", specialized["value"], None)
    identity = _CHECK_ID.search(failure.text)
    if identity is not None:
        kind = "object_identity" if identity.group(1) == "obj" else "type"
        return SourceChange(user_expr(identity.group(2)), kind, None, None)
    tensor_type = _TENSOR_TYPE.search(failure.text)
    if tensor_type is not None:
        found = _CLASS.search(tensor_type.group(2)) or _FOUND_CLASS.match(
            tensor_type.group(2).strip()
        )
        new = found.group(1) if found else tensor_type.group(2)
        return SourceChange(user_expr(tensor_type.group(1)), "type", "Tensor", new)
    return SourceChange(user_expr(failure.text), "other", None, None)


def to_change(failure: FailedGuard, new_values: dict[str, str]) -> SourceChange:
    """One failed guard as a change line (human source, kind, old, new)."""
    kind = failure.key[:1]
    if kind == ("tensor",) and len(failure.key) == 4:
        change = _tensor_change(failure)
    elif kind == ("value",):
        change = _value_change(failure, new_values)
    elif kind == ("id",):
        change = _id_change(failure)
    elif kind == ("global",):
        change = _global_change(failure)
    else:
        change = _text_change(failure, new_values)
    if change.kind == "flag" and change.new is None and change.old in _OTHER_BOOL:
        # A bool's guard failed, and the new variant does not read it (a layer's own cache
        # entry, read only by that layer): it holds the other value.
        change.new = _OTHER_BOOL[change.old]
    change.hint = failure.hint
    change.installed_at = failure.source
    return change


def _merge_same_source(changes: list[SourceChange]) -> list[SourceChange]:
    """One line per (source, kind): Dynamo's and the guard diff's spelling of one change."""
    merged: dict[tuple[str, str], SourceChange] = {}
    for change in changes:
        existing = merged.setdefault((change.source, change.kind), change)
        if existing is change:
            continue
        existing.old = existing.old or change.old
        existing.new = existing.new or change.new
        existing.hint = existing.hint or change.hint
        if existing.installed_at is None or existing.installed_at.line is None:
            existing.installed_at = change.installed_at or existing.installed_at
    return list(merged.values())


def _fold_strides(changes: list[SourceChange]) -> list[SourceChange]:
    """A tensor's stride that changed with one of its sizes is that size change."""
    sized = {c.expr.tensor: c for c in changes if c.kind == "size" and c.expr.tensor}
    kept = []
    for change in changes:
        owner = sized.get(change.expr.stride_of) if change.expr.stride_of else None
        if change.kind == "stride" and owner is not None:
            owner.folded.append(change.source)
            continue
        kept.append(change)
    return kept


def _fold_identities(changes: list[SourceChange]) -> list[SourceChange]:
    """A new object's attributes are new objects too: ``fn.__closure__[1]...`` follows ``fn``."""
    replaced = [c for c in changes if c.kind in ("object_identity", "type")]
    kept = []
    for change in changes:
        owner = next(
            (
                r
                for r in replaced
                if r is not change and change.source.startswith((r.source + ".", r.source + "["))
            ),
            None,
        )
        if owner is not None and change.kind in ("object_identity", "type"):
            owner.folded.append(change.source)
            continue
        kept.append(change)
    return kept


def _fold_training(changes: list[SourceChange]) -> list[SourceChange]:
    """``.training`` of N submodules flipping together is one ``model.train()``/``eval()``."""
    groups: dict[tuple[str, str | None, str | None], list[SourceChange]] = {}
    kept = []
    for change in changes:
        if change.kind == "flag" and change.expr.leaf == "training":
            groups.setdefault((change.expr.root, change.old, change.new), []).append(change)
        else:
            kept.append(change)
    for (root, old, new), members in groups.items():
        first = members[0]
        expr = named_value(f"{root}.training", root, "training")
        folded = SourceChange(expr, "flag", old, new, len(members), "submodules")
        folded.installed_at, folded.hint = first.installed_at, first.hint
        folded.folded = [m.source for m in members]
        if len(members) == 1 and first.source == folded.source:
            folded.count, folded.folded = 1, []
        kept.append(folded)
    return kept


def _collapse_indices(changes: list[SourceChange]) -> list[SourceChange]:
    groups: dict[tuple[str, str, str | None, str | None], list[SourceChange]] = {}
    for change in changes:
        key = (change.expr.pattern, change.kind, change.old, change.new)
        groups.setdefault(key, []).append(change)
    collapsed = []
    for (pattern, _, _, _), members in groups.items():
        if len(members) == 1 or pattern == members[0].source:
            collapsed += members
            continue
        first = members[0]
        first.count, first.unit = len(members), first.expr.unit
        first.expr = first.expr.collapsed()
        first.folded = sorted({f for m in members for f in m.folded})
        first.dynamic = all(m.dynamic for m in members)
        collapsed.append(first)
    return collapsed


def fold_changes(changes: list[SourceChange], dynamic: set[str]) -> list[SourceChange]:
    """Distinct changes, derived ones folded, dynamic ones marked, sizes first."""
    changes = _merge_same_source(changes)
    for change in changes:
        change.dynamic = change.source in dynamic
    changes = _collapse_indices(_fold_training(_fold_identities(_fold_strides(changes))))
    order = ("size", "rank", "flag", "none", "type", "value")
    return sorted(changes, key=lambda c: order.index(c.kind) if c.kind in order else len(order))


def dynamic_exprs(record: CompileRecord) -> set[UserExpr]:
    """The values this compile made dynamic: its symbols, less those specialized again
    (``s77 = 5 (range_refined_to_singleton)``: Python code needed the concrete value)."""
    specialized = {text.split(" = ", 1)[0].strip() for text in record.specializations}
    return {
        user_expr(source)
        for symbol, (source, _) in record.symbols.items()
        if symbol not in specialized
    }


def dynamic_sources(record: CompileRecord) -> set[str]:
    """:func:`dynamic_exprs` as the user's expressions."""
    return {expr.text for expr in dynamic_exprs(record)}


def _new_values(record: CompileRecord) -> dict[str, str]:
    values: dict[str, str] = {}
    for guard in record.guards or []:
        value = _rhs(guard.code) if guard.source else None
        if value is not None and guard.kind.endswith("_MATCH"):
            values.setdefault(user_expr(guard.source).text, value)
    for source, value in record.symbols.values():
        values.setdefault(user_expr(source).text, value)
    for expr, value in guard_values(record).items():
        if expr.length_of is not None:  # a dict's length, from its guarded keys
            values.setdefault(expr.text, value)
    return values


def changes_against(
    record: CompileRecord, earlier: CompileRecord, dynamo_failures: list[FailedGuard]
) -> list[SourceChange]:
    """The changes from variant ``earlier`` to the new compile ``record`` (folded)."""
    against = str(earlier.compile_id)
    failures = [f for f in dynamo_failures if against in f.against]
    if record.guards and earlier.guards:
        failures += diff_guard_sets(earlier.guards, record.guards, record.symbols, against)
        failures = fold_inference_mode(failures, earlier.guards, record.guards, against)
    values = _new_values(record)
    return fold_changes([to_change(f, values) for f in failures], dynamic_sources(record))


def dynamo_failures(record: CompileRecord) -> list[FailedGuard]:
    """Dynamo's own failed guards of a recompile (each names the variant it failed for)."""
    return [f for reason in record.recompile_reasons for f in parse_recompile_reason(reason)]


def nearest_changes(
    record: CompileRecord, earlier: list[CompileRecord]
) -> tuple[str | None, list[SourceChange]]:
    """The earlier variant closest to ``record`` and the changes from it: the fewest changes of
    state (a flag, grad mode, a type: values from a small set, each variant serving its own
    state by design), then the fewest changes, the latest on a tie. A person reads "what
    changed" against the closest variant: a decode step is compared with the previous decode
    step, not with the prefill, even when the prefill differs in one flag only and the decode
    step in two strides (the strides are the news)."""
    failures = dynamo_failures(record)
    best: tuple[str | None, list[SourceChange]] = (None, [])
    for old in earlier:
        changes = changes_against(record, old, failures)
        if changes and (best[0] is None or _distance(changes) <= _distance(best[1])):
            best = (str(old.compile_id), changes)
    return best


def _distance(changes: list[SourceChange]) -> tuple[int, int]:
    return sum(change.kind in FLAG_KINDS for change in changes), len(changes)
