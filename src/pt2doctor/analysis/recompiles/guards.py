"""Failed guards: categorize Dynamo's guard-failure text, and find the ones it did not print.

Dynamo stops at the first failing guard of each cached variant. To list *all* of them, the guard
set of each earlier variant is compared with the guard set of the new variant (which was built
from the inputs that failed), filling dynamic sizes from the symbols the new compile created.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, get_args

import orjson

from pt2doctor.trace.messages import parse_user_stack
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.records import CompileId
from pt2doctor.trace.types import Guard, SourceLine

GuardCategory = Literal[
    "size",
    "python_constant",
    "dtype",
    "stride",
    "requires_grad",
    "grad_mode",
    "autocast",
    "device",
    "object_id",
    "attribute_value",
    "other",
]
GUARD_CATEGORIES: tuple[GuardCategory, ...] = get_args(GuardCategory)

# A guarded name: L['x'] / G['y'] as in guard code, or the bare name Dynamo prints.
_NAME = r"(?:[LG]\[[^\]]+\]|(?![LG]\[)[A-Za-z_]\w*)"
# First match wins; the text is Dynamo's failure message or the failing guard's code.
_CATEGORY_PATTERNS: tuple[tuple[str, GuardCategory], ...] = (
    (
        r"size mismatch|rank mismatch|\.size\(\)|\bsize=|storage_offset|\bEq\(|\bNe\(|numel\(",
        "size",
    ),
    (r"dtype mismatch|\.dtype\b", "dtype"),
    (r"stride mismatch|\.stride\(\)", "stride"),
    (r"requires_grad", "requires_grad"),
    (r"grad_mode|GradMode|is_grad_enabled", "grad_mode"),
    (r"[Aa]utocast", "autocast"),  # also a dispatch key set gaining AutocastCPU
    (r"device mismatch|device index|dispatch key set mismatch|\.device\b", "device"),
    (r"___check_obj_id|ID_MATCH|___check_type_id|TYPE_MATCH|deallocated|\bid\(", "object_id"),
    (rf"^\s*(?:not )?{_NAME}(?:\.\w+|\[[^\]]+\])+\s*(?:==|!=|is\b|<|>)", "attribute_value"),
    (rf"^\s*(?:not )?(?:len\()?{_NAME}\)?\s*(?:==|!=|is\b|<|>)", "python_constant"),
)
_CATEGORY_RULES = tuple(
    (lazy_compile(pattern), category) for pattern, category in _CATEGORY_PATTERNS
)
_DYNAMO_TENSOR = lazy_compile(r"tensor '(.+?)' (\w+(?: \w+)*?) mismatch(?: at index (\d+))?")
_DYNAMO_VALUE = lazy_compile(r"^(?:not )?(\w+)((?:\.\w+|\[[^\]]+\])*) (?:==|!=|is\b)")
_DYNAMO_GLOBAL = lazy_compile(r"GLOBAL_STATE changed: (\w+)")
_VARIANT_PREFIX = lazy_compile(r"^\s*(!?\d+/\d+(?:/\d+)?(?:_\d+)?): ", re.S)
_VALUE_KINDS = frozenset(
    {"TRUE_MATCH", "FALSE_MATCH", "NONE_MATCH", "NOT_NONE_MATCH", "EQUALS_MATCH", "CONSTANT_MATCH"}
)
_TENSOR_FIELDS = lazy_compile(
    r"DispatchKeySet\((?P<keys>[^)]*)\), (?P<dtype>torch\.\w+), device=(?P<device>[^,]+), "
    r"requires_grad=(?P<requires_grad>\w+), size=\[(?P<size>[^\]]*)\], stride=\[(?P<stride>[^\]]*)\]"
)
# "code  # file:line in fn", or "# file:line in fn" when Dynamo could not show the code.
_HINT = lazy_compile(r"\s*\(HINT: (?P<hint>.*)\)\s*$", re.S)
_USER_LINE = lazy_compile(
    r"^(?:(?P<code>.*?)\s+)?#\s*(?P<file>\S+):(?P<line>\d+) in (?P<function>\S+)\s*$"
)


_NOTED_LINE = lazy_compile(
    r"(?P<code>.*?)\s+#\s*(?P<file>\S+):(?P<line>\d+) in (?P<function>\w+)"
    r"(?:\s*\((?:[^()]|\([^()]*\))*\))?(?:\s+and\s+|\s*$)"
)
BRANCH_LINE = lazy_compile(r"\s*(?:if|elif|while)\b")  # a line that branches in Python


@dataclass(slots=True)
class FailedGuard:
    """A guard that failed against one earlier variant, with its cause category."""

    text: str
    category: GuardCategory
    source: SourceLine | None
    against: list[str] = field(default_factory=list)
    """The variants (compile ids) this guard failed for."""
    origin: str = "dynamo"
    """``dynamo`` (Dynamo's recompile reason) or ``guard_diff`` (found by comparing guard sets)."""
    key: tuple[str, ...] = ()
    now_dynamic: bool = False
    """The recompile made the failing value dynamic (automatic dynamic shapes): later calls
    with other values reuse it instead of recompiling."""
    hint: str | None = None
    """Dynamo's own ``(HINT: ...)`` for this guard, when it gave one."""

    @property
    def guarded_source(self) -> str | None:
        """The Dynamo source whose value failed (``L['x'].size()[1]``, ``L['flag']``)."""
        if self.key[:1] == ("tensor",) and len(self.key) == 4 and self.key[3]:
            _, name, field_name, index = self.key
            base = f"L['{name}']" if re.fullmatch(r"\w+", name) else name
            return f"{base}.{field_name}()[{index}]"
        if self.key[:1] == ("value",):
            return self.key[1]
        return None


def categorize_guard(text: str) -> GuardCategory:
    """One category from the vocabulary for a failure message or guard code."""
    for pattern, category in _CATEGORY_RULES:
        if pattern.search(text):
            return category
    return "other"


def _tensor_name(source: str) -> str:
    match = re.fullmatch(r"L\['(\w+)'\]", source)
    return match.group(1) if match else source


def split_hint(text: str | None) -> tuple[str, str | None]:
    """``code  # f.py:3 in g (HINT: ...)`` -> (the text without the hint, the hint). Hints that
    only name a type (``HINT: type Scaled``) say nothing to act on and are dropped."""
    if not text:
        return "", None
    match = _HINT.search(text)
    if match is None:
        return text, None
    hint = match["hint"].strip()
    return text[: match.start()], None if hint.startswith("type ") else hint


def _user_line_source(user_line: str | None) -> SourceLine | None:
    """``return x + 1  # prog.py:19 in f`` -> SourceLine (Dynamo may shorten the path)."""
    user_line = split_hint(user_line)[0]
    if not user_line:
        return None
    match = _USER_LINE.match(user_line)
    if match is None:
        clauses = list(_NOTED_LINE.finditer(user_line))
        if not clauses:
            return SourceLine(None, None, None, user_line)
        # A symbolic guard's lines, each with Dynamo's note: "x.shape  # f.py:20 in g (user
        # code shown is first use ...) and if x.shape[0] > 16:  # f.py:27 in g (...)". The
        # branch is what set the bound; else the last line named.
        match = next((c for c in clauses if BRANCH_LINE.match(c["code"])), clauses[-1])
    code = (match["code"] or "").strip() or None
    return SourceLine(match["file"], int(match["line"]), match["function"], code)


def parse_recompile_reason(reason: str) -> list[FailedGuard]:
    """Split one entry of the ``recompile_reasons`` artifact into failed guards.

    An entry reads ``0/1: <failure>[; <failure>...]  # code  # file:line in fn`` optionally
    followed by ``User stack trace:`` (several failures appear with ``recompiles_verbose``).
    """
    prefix = _VARIANT_PREFIX.match(reason)
    against = prefix.group(1) if prefix else "?"
    body = reason[prefix.end() :] if prefix else reason
    head, _, stack_text = body.partition("\nUser stack trace:")
    stack = parse_user_stack(stack_text.splitlines())
    failures: list[FailedGuard] = []
    for part in _failures_of(head.strip()):
        text, _, user_line = part.partition("  # ")
        text = text.strip()
        if not text:
            continue
        source = stack[-1] if stack else _user_line_source(user_line.strip() or None)
        failure = FailedGuard(
            text, categorize_guard(text), source, [against], "dynamo", _dynamo_key(text)
        )
        failure.hint = split_hint(user_line)[1]
        failures.append(failure)
    return failures


def _failures_of(head: str) -> list[str]:
    """The failures of one entry, split at ``"; "`` outside parentheses: a symbolic guard's
    provenance note reads ``(... 0/1 specialization in the framework; to avoid
    specialization try ...)``, one failure, not two."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(head):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth <= 0 and head.startswith("; ", index):
            parts.append(head[start:index])
            start = index + 2
    parts.append(head[start:])
    return parts


def _dynamo_key(text: str) -> tuple[str, ...]:
    tensor = _DYNAMO_TENSOR.search(text)
    if tensor is not None:
        return ("tensor", tensor.group(1), tensor.group(2), tensor.group(3) or "")
    value = _DYNAMO_VALUE.match(text)
    if value is not None:  # Dynamo strips L[...] from what it prints: "self.training == True"
        return ("value", f"L['{value.group(1)}']{value.group(2)}")
    changed = _DYNAMO_GLOBAL.search(text)
    if changed is not None:
        return ("global", categorize_guard(changed.group(1)))
    return ("text", text.split("#")[0].strip())


def _family(kind: str) -> str:
    return "VALUE" if kind in _VALUE_KINDS else kind


def _index(guards: list[Guard]) -> dict[tuple[str, str], Guard]:
    index: dict[tuple[str, str], Guard] = {}
    for guard in guards:
        if guard.source or guard.kind in ("GLOBAL_STATE", "DEFAULT_DEVICE"):
            index.setdefault((guard.source, _family(guard.kind)), guard)
    return index


def _split_list(text: str) -> list[str]:
    return [item.strip() for item in text.split(",")] if text.strip() else []


@lru_cache(maxsize=4096)  # a variant's guards are compared with those of each later variant
def _tensor_fields(code: str) -> re.Match[str] | None:
    return _TENSOR_FIELDS.search(code)


def _tensor_diff(
    old: Guard, new: Guard, symbol_values: dict[str, str], against: str
) -> list[FailedGuard]:
    before, after = _tensor_fields(old.code), _tensor_fields(new.code)
    if before is None or after is None:
        return []
    name = _tensor_name(old.source)
    source = _user_line_source(old.user_line)
    failures: list[FailedGuard] = []

    def add(
        field_name: str, category: GuardCategory, index: str, expected: str, actual: str
    ) -> None:
        at = f" at index {index}" if index else ""
        text = f"tensor '{name}' {field_name} mismatch{at}. expected {expected}, actual {actual}"
        key = ("tensor", name, field_name, index)
        failures.append(FailedGuard(text, category, source, [against], "guard_diff", key))

    exact: tuple[tuple[str, GuardCategory], ...] = (("dtype", "dtype"), ("device", "device"))
    for field_name, category in exact:
        if before[field_name] != after[field_name]:
            add(field_name, category, "", before[field_name], after[field_name])
    if before["requires_grad"] != after["requires_grad"]:
        add("requires_grad", "requires_grad", "", before["requires_grad"], after["requires_grad"])
    shapes: tuple[tuple[str, GuardCategory], ...] = (("size", "size"), ("stride", "stride"))
    for field_name, shape_category in shapes:
        old_dims, new_dims = _split_list(before[field_name]), _split_list(after[field_name])
        if len(old_dims) != len(new_dims):
            add("rank", "size", "", str(len(old_dims)), str(len(new_dims)))
            break
        for dim, (expected, actual) in enumerate(zip(old_dims, new_dims, strict=True)):
            if actual == "None":
                actual = symbol_values.get(f"{old.source}.{field_name}()[{dim}]", "None")
            if expected != "None" and actual != "None" and expected != actual:
                add(field_name, shape_category, str(dim), expected, actual)
    if not failures and before["keys"] != after["keys"]:
        add("dispatch key set", "device", "", before["keys"], after["keys"])
    return failures


_BACKEND_KEYS = {"CPU": "cpu", "CUDA": "cuda", "Meta": "meta", "XPU": "xpu", "MPS": "mps",
                 "HIP": "hip", "XLA": "xla", "Lazy": "lazy", "HPU": "hpu", "MTIA": "mtia",
                 "PrivateUse1": "privateuse1", "SparseCPU": "cpu", "SparseCUDA": "cuda",
                 "QuantizedCPU": "cpu", "QuantizedCUDA": "cuda", "MkldnnCPU": "cpu"}  # fmt: skip
"""A dispatch key set's backend key -> the device it is on: a tensor moved to another device
fails its dispatch key guard, not its device guard (which compares the device index)."""


def device_of_keys(keys: str) -> str | None:
    """``cpu`` of ``CPU, BackendSelect, ADInplaceOrView, AutogradCPU``; None when no backend
    key is known."""
    return next(
        (_BACKEND_KEYS[k] for k in (k.strip() for k in keys.split(",")) if k in _BACKEND_KEYS), None
    )


# GlobalStateGuard's autocast_state lists one entry per device of
# at::autocast::_AUTOCAST_SUPPORTED_DEVICES (torch/csrc/dynamo/guards.cpp), in this order;
# its dtypes are c10::ScalarType numbers.
_AUTOCAST_DEVICES = (
    "cpu",
    "cuda",
    "mtia",
    "maia",
    "xpu",
    "ipu",
    "hpu",
    "xla",
    "privateuse1",
    "mps",
)
_SCALAR_TYPES = {5: "float16", 6: "float32", 7: "float64", 15: "bfloat16"}


def autocast_text(state: Any) -> str:
    """``on for cpu (bfloat16)`` or ``off``: an autocast_state as the user set it (its raw
    form, ``{'enabled': [True, False, ...], 'dtype': [15, 5, ...]}``, when unreadable)."""
    if not isinstance(state, dict):
        return str(state)
    enabled, dtypes = state.get("enabled"), state.get("dtype")
    if not isinstance(enabled, list) or not isinstance(dtypes, list) or len(enabled) > len(
        _AUTOCAST_DEVICES):  # fmt: skip
        return str(state)
    on = [
        f"{_AUTOCAST_DEVICES[i]} ({_SCALAR_TYPES.get(dtypes[i], dtypes[i]) if i < len(dtypes) else '?'})"
        for i, flag in enumerate(enabled)
        if flag is True
    ]
    return f"on for {', '.join(on)}" if on else "off"


def _differ_only_by(before: str, after: str, prefix: str) -> bool:
    """Two dispatch key sets that differ by keys named ``prefix...`` alone (``Autocast``:
    autocast turned on or off; ``Autograd``: a call's grad or inference mode)."""

    def keys(text: str) -> set[str]:
        text = text.removeprefix("DispatchKeySet(").removesuffix(")")
        return {key.strip() for key in text.split(",") if key.strip()}

    changed = keys(before) ^ keys(after)
    return bool(changed) and all(key.startswith(prefix) for key in changed)


def _global_state_diff(old: Guard, new: Guard, against: str) -> list[FailedGuard]:
    def state(guard: Guard) -> dict[str, Any]:
        _, _, text = guard.code.partition(" against ")
        try:
            value = orjson.loads(text) if text else {}
        except orjson.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    before, after = state(old), state(new)
    failures = []
    for key in sorted(set(before) & set(after)):
        if before[key] != after[key]:
            category = categorize_guard(key) if key != "autocast_state" else "autocast"
            was, now = before[key], after[key]
            if key == "autocast_state":
                was, now = autocast_text(was), autocast_text(now)
            text = f"global state {key} changed: expected {was}, actual {now}"
            failures.append(
                FailedGuard(text, category, None, [against], "guard_diff", ("global", category))
            )
    return failures


def _value_diff(
    old: Guard, new: Guard | None, symbol_values: dict[str, str], against: str
) -> list[FailedGuard]:
    if new is not None:
        if new.code == old.code:
            return []
        actual = new.code
    else:
        value = symbol_values.get(old.source)
        rhs = old.code.rpartition("==")[2].strip()
        if value is None or "==" not in old.code or value == rhs:
            return []
        actual = f"{old.source} == {value}"
    text = f"{old.code} (now {actual})"
    category = categorize_guard(old.code)
    key = ("value", old.source)
    failure = FailedGuard(
        text, category, _user_line_source(old.user_line), [against], "guard_diff", key
    )
    failure.hint = split_hint(old.user_line)[1]
    return [failure]


def _id_diff(old: Guard, new: Guard, against: str) -> list[FailedGuard]:
    if new.code == old.code:
        return []
    text = f"{old.code} (now {new.code})"
    source = _user_line_source(old.user_line)
    key = ("id", old.source, old.kind)
    return [FailedGuard(text, "object_id", source, [against], "guard_diff", key)]


def diff_guard_sets(
    old: list[Guard], new: list[Guard], symbols: dict[str, tuple[str, str]], against: str
) -> list[FailedGuard]:
    """Guards of variant ``against`` (``old``) that the inputs of the new variant fail.

    ``symbols`` maps the new compile's dynamic symbols to (source, value at creation), which
    gives the actual value of a size or int Dynamo no longer specializes on.
    """
    symbol_values = {source: value for source, value in symbols.values()}
    new_index = _index(new)
    failures: list[FailedGuard] = []
    for key, guard in _index(old).items():
        counterpart = new_index.get(key)
        if guard.kind == "TENSOR_MATCH" and counterpart is not None:
            failures += _tensor_diff(guard, counterpart, symbol_values, against)
        elif guard.kind == "GLOBAL_STATE" and counterpart is not None:
            failures += _global_state_diff(guard, counterpart, against)
        elif key[1] == "VALUE":
            failures += _value_diff(guard, counterpart, symbol_values, against)
        elif key[1] in ("ID_MATCH", "TYPE_MATCH") and counterpart is not None:
            failures += _id_diff(guard, counterpart, against)
    if any(f.category == "grad_mode" for f in failures):
        # A call under torch.inference_mode() (or no_grad) and one outside it: every tensor's
        # dispatch keys gain or lose the Autograd keys with it: the grad mode's change.
        failures = [f for f in failures if not (f.key[:1] == ("tensor",) and f.key[2:3] == (
            "dispatch key set",) and _differ_only_by(*_keys_of(f.text), "Autograd"))]  # fmt: skip
    if any(f.category == "autocast" for f in failures):
        # Autocast on or off adds or drops AutocastCPU in every tensor's dispatch keys: one
        # change, not one per parameter.
        failures = [f for f in failures if not (f.key[:1] == ("tensor",) and f.key[2:3] == (
            "dispatch key set",) and _differ_only_by(*_keys_of(f.text), "Autocast"))]  # fmt: skip
    return failures


_DISPATCH_CHANGE = lazy_compile(r"expected (.*), actual (.*)$")


def inference_modes(guards: list[Guard]) -> bool | None:
    """Whether the call a variant was compiled for ran under ``torch.inference_mode()``, read
    from a module parameter's dispatch keys in its guards: inside the mode every tensor's
    Autograd keys are excluded, and a parameter is never an inference tensor, so its keys tell
    the mode (an input's cannot: an inference tensor outside the mode has the keys of a normal
    tensor inside it). None when no parameter is guarded (a plain function's inputs alone)."""
    for guard in guards:
        if guard.kind != "TENSOR_MATCH" or "_parameters[" not in guard.source:
            continue
        fields = _tensor_fields(guard.code)
        if fields is None:
            continue
        keys = {key.strip() for key in fields["keys"].split(",")}
        if "ADInplaceOrView" in keys:
            return not any(key.startswith("Autograd") for key in keys)
    return None


def fold_inference_mode(
    failures: list[FailedGuard], old: list[Guard], new: list[Guard], against: str
) -> list[FailedGuard]:
    """``failures`` (Dynamo's and the guard-set diff's, against variant ``against``) with the
    inference mode's change as one failure, when one call ran under ``torch.inference_mode()``
    and the other outside it (no_grad is not enough: it leaves the keys as they are). Every
    tensor's dispatch keys change with the mode: a normal tensor's Autograd keys, an inference
    tensor's ADInplaceOrView; those are the mode's change, not the tensors'. A tensor whose
    keys changed by both was also made the other way (an inference tensor, then a normal one),
    and stays."""
    modes = inference_modes(old), inference_modes(new)
    if None in modes or modes[0] == modes[1]:
        return failures
    on_off = ["on" if mode else "off" for mode in modes]
    kept = [f for f in failures if not _follows_inference_mode(f)]
    return [*kept, FailedGuard(
        f"inference mode changed: expected {on_off[0]}, actual {on_off[1]}", "grad_mode",
        None, [against], "guard_diff", ("global", "inference_mode"))]  # fmt: skip


def _follows_inference_mode(failure: FailedGuard) -> bool:
    """A tensor's dispatch key change that the inference mode's change alone makes: its
    Autograd keys (a normal tensor) or its ADInplaceOrView (an inference tensor), not both."""
    if failure.key[:1] != ("tensor",) or failure.key[2:3] != ("dispatch key set",):
        return False
    before, after = _keys_of(failure.text)
    return _differ_only_by(before, after, "Autograd") or _differ_only_by(
        before, after, "ADInplaceOrView")  # fmt: skip


def _keys_of(text: str) -> tuple[str, str]:
    """The two key sets of a dispatch key change's text (``expected A, actual B``)."""
    match = _DISPATCH_CHANGE.search(text)
    return (match[1], match[2]) if match else ("", "x")


def merge_failed_guards(failures: list[FailedGuard]) -> list[FailedGuard]:
    """One entry per distinct failure, with every variant it failed for; Dynamo's text first."""
    merged: dict[tuple[str, ...], FailedGuard] = {}
    for failure in sorted(failures, key=lambda f: f.origin != "dynamo"):
        key = failure.key or (failure.text,)
        existing = merged.get(key)
        if existing is None:
            merged[key] = FailedGuard(
                failure.text,
                failure.category,
                failure.source,
                list(failure.against),
                failure.origin,
                key,
                hint=failure.hint,
            )
            continue
        existing.hint = existing.hint or failure.hint
        for variant in failure.against:
            if variant not in existing.against:
                existing.against.append(variant)
        if existing.source is None:
            existing.source = failure.source
    for failure in merged.values():
        failure.against.sort(key=_variant_order)
    # The guard that failed against the most variants is what made all of them miss: first.
    return sorted(merged.values(), key=lambda failure: -len(failure.against))


def _variant_order(compile_id: str) -> tuple[int, ...]:
    parsed = CompileId.parse(compile_id)
    if parsed is None:
        return (1 << 30,)
    return (parsed.frame_id or 0, parsed.frame_compile_id or 0, parsed.attempt)
