"""Per frame: what each recompile changed, the state each variant serves, and whether the set
of variants is bounded.

The goal of guard work is a variant set with a known upper bound, not zero guards: two stable
states (train+grad, eval+no_grad), pre-warmed, are a sound design; a counter that takes a new
value every call will hit ``recompile_limit`` and then run eagerly. The rules:

- a value that became dynamic is reused for new values (bounded);
- flags with few values (bools, ``training``, grad mode, a dtype or device) give at most the
  product of their values (bounded);
- a value that took a new value at every recompile (two or more) and never became dynamic is
  unbounded: counters, Python numbers baked in, ids of objects rebuilt per call, sizes Python
  code specializes (a dict keyed by a length);
- unless its values recur: a variant called again after one for another value was compiled
  (the probes' heat) serves a value that came back. Values that come back are a fixed set
  (sizes padded to buckets, prefill and decode), bounded by the values seen.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.changes import (
    FLAG_KINDS,
    LAYOUT_KINDS,
    ZERO_ONE,
    SourceChange,
    dynamic_exprs,
    kind_words,
    nearest_changes,
    went_zero_one,
)
from pt2doctor.analysis.recompiles.guards import BRANCH_LINE
from pt2doctor.analysis.recompiles.ledger import RESUME_NAME, FrameEntry, produced_code
from pt2doctor.analysis.recompiles.sources import UserExpr, human_source
from pt2doctor.analysis.recompiles.variant_values import guard_values, value_of
from pt2doctor.analysis.source_lines import parameters_at, positional_parameters
from pt2doctor.analysis.text import counted, id_ranges
from pt2doctor.trace.messages import is_user_file
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import CompileRecord, SourceLine

if TYPE_CHECKING:  # heat exists only for a run directory's probes
    from pt2doctor.analysis.breaks.heat import Heat

# torch._dynamo.config.recompile_limit's default in torch 2.x.
DEFAULT_RECOMPILE_LIMIT = 8
_LIMIT_IN_REASON = lazy_compile(
    r"(?:recompile_limit|cache_size_limit) \((\d+)\)|currently set to (\d+)"
)


@dataclass(slots=True)
class RecompileExplanation:
    compile_id: str
    compared_with: str | None
    """The earlier variant the changes are counted from (the nearest one)."""
    changes: list[SourceChange]


@dataclass(slots=True)
class VariantRow:
    compile_id: str
    serves: dict[str, str]
    """The values, of the sources that differ between variants, this variant was built for."""
    dynamic: list[str]
    calls: int | None
    compile_time_s: float | None
    grad_mode: str | None = None
    """``True``/``False``: the grad mode its GLOBAL_STATE guard requires (None: not in the
    trace), whether or not it differs between variants."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "compile_id": self.compile_id,
            "serves": self.serves,
            "dynamic": self.dynamic,
            "calls": self.calls,
            "compile_time_s": self.compile_time_s,
        }


@dataclass(slots=True)
class Varying:
    source: str
    kind: str
    values: list[str]
    dynamic: bool
    changes: int = 0
    """Recompiles (and the refused attempt) in which this source changed."""
    instances: int | None = None
    """A per-instance constant: an int attribute of ``self`` whose values are those of the
    ``instances`` modules of one class compiled one by one (regional compilation), not a
    counter (attach_compile_calls)."""
    recurs: bool = False
    """A value of it came back after another value compiled (a variant was called again after
    a later one compiled): a fixed set of values, not a counter (:func:`recurring_sources`)."""
    expr: UserExpr | None = None
    """The source's parts (None: it stands for several, ``layers[*].keys (2 layers)``)."""
    pattern: str | None = None
    """The source with every index as ``*`` (``h[*].attn.c_attn.enabled``)."""
    items: int = 1
    """How many indices of the pattern this row stands for (8 for ``h[*]... (8 items)``)."""
    held: int | None = None
    """The fewest calls a variant serving one of its values got before the next value came
    (the probes' counts): a schedule that steps holds each value for many calls, a counter
    for one (:func:`held_sources`). None: not counted, or not held."""


@dataclass(slots=True)
class Outlook:
    bounded: bool | None
    reason: str
    varying: list[Varying] = field(default_factory=list)
    limit_after_calls: int | None = None
    """Calls with a new value left before the recompile limit stops compiling (0: hit)."""
    recompile_limit: int = DEFAULT_RECOMPILE_LIMIT
    branch: str | None = None
    """A dynamic size's bound that a branch on the shape set (:func:`_branch_bound`): what the
    variants are, for the finding's title and its fix."""

    def as_dict(self) -> dict[str, Any]:
        return {
            "bounded": self.bounded,
            "reason": self.reason,
            "varying": [
                {
                    "source": v.source,
                    "kind": v.kind,
                    "values": v.values,
                    "dynamic": v.dynamic,
                    "call_form": v.source if v.expr is None else v.expr.call_form,
                }
                for v in self.varying
            ],
            "limit_after_calls": self.limit_after_calls,
            "recompile_limit": self.recompile_limit,
        }


@dataclass(slots=True)
class FrameExplanation:
    recompiles: list[RecompileExplanation]
    refused: RecompileExplanation | None
    variants: list[VariantRow]
    outlook: Outlook
    after_warmup: list[str] = field(default_factory=list)
    """Compile ids that happened after warmup (runs only)."""
    hf_cache_class: str | None = None
    """The transformers KV-cache class the frame's guards type (``StaticCache``): the cache
    kind, by evidence."""
    compile_call: dict[str, Any] | None = None
    """The ``torch.compile`` call this frame came from, with its ``settings`` (``dynamic``,
    ``mode`` ...) and line, when a run recorded it (attach_compile_calls)."""
    split_off: bool = False
    """A library's frame that no recorded ``torch.compile`` call names (a loss function, an
    output class): Dynamo compiled it on its own, below a graph break, with tensors the library
    made as its arguments, not ones the user passes (attach_compile_calls)."""
    stores: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Varying source -> the user's line that stores its attribute (``m.p = p``), when a
    run's probes saw one (attach_attribute_stores)."""
    resume_line: int | None = None
    """For the code after a graph break (a resume function), the break's line."""
    resumed_parameters: frozenset[str] | None = None
    """The parameters of the function the resume function continues (None: unknown): an
    argument of the resume function that is one of them is the caller's value, not a local
    the break hands over."""
    call_site: SourceLine | None = None
    """The user's line that called the frame (``out = model(input_ids=ids).logits``), from
    the first compile's stack: the fix that marks an input names the tensor passed there."""
    parameters: tuple[str, ...] | None = None
    """The compiled function's positional parameters, ``self`` left out (None: unknown):
    which argument of the calling line a guarded input is."""
    call_sites: dict[str, SourceLine] = field(default_factory=dict)
    """Each compile's own calling line (compile id -> line), where its stack has one: a
    warmup call and a serving call are two lines, and what each passed is made above it."""


def attach_attribute_stores(
    explanations: list[FrameExplanation], stores: list[dict[str, Any]]
) -> None:
    """Give each varying attribute (``self.drop1.p``) the user's line that stores it, as the
    probes saw the program do it (``m.p = p``): the line the fix names, not the library line
    that reads it. A store outside ``__init__`` (the value changed while running) first, and
    of those the line first seen last: a library module's own ``__init__`` stores from the
    user's line that builds it (``nn.Dropout(0.0)``), before the loop sets it (``m.p = p``)."""
    for explanation in explanations:
        for row in explanation.outlook.varying:
            leaf = row.expr.leaf if row.expr is not None else None
            if leaf is None:
                continue
            found = [s for s in stores if s.get("attr") == leaf and s.get("file")]
            found.sort(key=lambda store: (store.get("function") == "__init__",
                                          -float(store.get("t") or 0.0)))  # fmt: skip
            if found:
                explanation.stores[row.source] = found[0]


def attach_compile_sites(
    explanations: list[FrameExplanation], sites: dict[str, SourceLine]
) -> None:
    """Each variant's calling line as the probes saw it at its compile (the trace's stack may
    leave the caller out: ``main()`` for a line inside ``main``), over the trace's."""
    for explanation in explanations:
        for variant in explanation.variants:
            if variant.compile_id in sites:
                explanation.call_sites[variant.compile_id] = sites[variant.compile_id]


def attach_compile_calls(
    frames: list[FrameEntry], explanations: list[FrameExplanation], calls: list[dict[str, Any]]
) -> None:
    """Give each frame the torch.compile call it came from: the call that compiled its
    class (``self``'s type) or its function by name, else the only call of the run."""
    for frame, explanation in zip(frames, explanations, strict=True):
        record = frame.compiles[0].record if frame.compiles else None
        owner = ((record.self_type or "") if record else "").rsplit(".", 1)[-1]
        names = {owner, frame.function} - {""}
        # A compiled bound method is named ``Cls.forward``: its class names the frame too.
        named = [c for c in calls if c.get("name") in names
                 or (owner and str(c.get("name")).split(".")[0] == owner)]  # fmt: skip
        found = named or (calls if len(calls) == 1 else [])
        # torch's own wrappers (a compiled module's entry) are the call's frame, not split off.
        package = library_path(str(frame.file)) if frame.file else None
        stdlib = package is None and bool(frame.file) and not is_user_file(str(frame.file))
        library = stdlib or (package is not None and not package.startswith("torch/"))
        # Split off: Dynamo reached it as a frame of its own below a caller it compiled (or
        # skipped) first. The first frame of its stream is the entry of a compiled call (a
        # compiled HF model's forward behind transformers' own decorator), not split off.
        below = any(other.stream == frame.stream and other.frame_id < frame.frame_id
                    for other in frames)  # fmt: skip
        explanation.split_off = (bool(calls) and library and not named and not frame.is_resume
                                 and below)  # fmt: skip
        explanation.compile_call = found[0] if len(found) == 1 else None
        instances = [
            c for c in named if str(c.get("target")).startswith("module") and c.get("name") == owner
        ]
        if len(instances) > 1:
            explanation.compile_call = instances[0]
            _per_instance(frame, explanation, len(instances))


def _per_instance(frame: FrameEntry, explanation: FrameExplanation, instances: int) -> None:
    """``instances`` modules of the frame's class were compiled one by one: an int attribute
    of ``self`` with no more values than that is each instance's constant (a layer index),
    and the variants are bounded by the instances (times the states each serves)."""
    outlook = explanation.outlook
    constants = [
        row
        for row in outlook.varying
        if row.kind == "value"
        and row.source.startswith("self.")
        and len(row.values) <= instances
        and all(value.lstrip("-").isdigit() for value in row.values)
    ]
    for row in constants:
        row.instances = instances
    if not constants or any(_unbounded(r) for r in outlook.varying if r not in constants):
        return
    names = ", ".join(row.source for row in constants)
    limit = outlook.recompile_limit
    reason = (
        f"{names}: one value per instance of the {instances} modules compiled one by one, so "
        f"at most one variant per instance and state ({frame.variants} so far)"
    )
    if frame.limit_hit:
        reason += f"; the recompile limit ({limit}) was hit: the other instances run eagerly"
    explanation.outlook = Outlook(True, reason, outlook.varying, None, limit)


def _expand(line: SourceLine | None, frame_file: str | None) -> SourceLine | None:
    if line is None or not line.file or not frame_file or line.file == frame_file:
        return line
    if frame_file.endswith(line.file):
        return SourceLine(frame_file, line.line, line.function, line.code)
    return line


def _explain(frame: FrameEntry, index: int) -> RecompileExplanation:
    entry = frame.compiles[index]
    earlier = [e.record for e in frame.compiles[:index] if produced_code(e.record)]
    against, changes = nearest_changes(entry.record, earlier)
    for change in changes:
        change.installed_at = _expand(change.installed_at, frame.file)
        if change.kind == "size":
            change.specialized_at = _specialized_at(frame, change.source)
    return RecompileExplanation(entry.compile_id, against, changes)


def _specialized_at(frame: FrameEntry, source: str) -> SourceLine | None:
    """Where the user's own code made ``source`` (a size, as the user writes it) static: the
    innermost frame outside libraries of a ``symbolic_shape_specialization`` user stack of any
    of the frame's compiles."""
    for entry in frame.compiles:
        for raw, stack in entry.record.specialization_stacks.items():
            if human_source(raw) != source:
                continue
            own = [line for line in stack if line.file and library_path(line.file) is None]
            if own:
                return own[-1]
    return None


def _serves(
    frame: FrameEntry, explained: list[RecompileExplanation], dynamic: dict[str, set[str]]
) -> dict[str, dict[str, str]]:
    """Each variant's values of the sources that change between variants, from its own guards;
    from the changes (``new`` of its own, ``old`` when a later one is compared with it) where
    the guards are not in the log or do not give the value. A source absent from a variant is
    left out."""
    sources: dict[str, UserExpr] = {}
    for item in explained:
        for change in item.changes:
            sources.setdefault(change.source, change.expr)
    told: dict[str, dict[str, str]] = {e.compile_id: {} for e in frame.compiles}
    for item in explained:
        for change in item.changes:
            if item.compared_with is not None and change.old is not None:
                told[item.compared_with].setdefault(change.source, change.old)
            if change.new is not None:
                told[item.compile_id][change.source] = change.new
    # A tensor's requires_grad reads as such: "args[0] = True" was read as the tensor's value.
    shown = {c.source: f"{c.source}.requires_grad" for item in explained for c in item.changes
             if c.kind == "requires_grad"}  # fmt: skip
    serves: dict[str, dict[str, str]] = {}
    for entry in frame.compiles:
        own = guard_values(entry.record)
        values = {}
        for source, expr in sources.items():
            value = value_of(own, expr) if own else None
            if value is None:  # not in its guards as a value (a stride): what a change told
                value = told[entry.compile_id].get(source)
            if expr.pattern in dynamic[entry.compile_id]:
                value = "dynamic"
            if value is not None:
                values[shown.get(source, source)] = value
        serves[entry.compile_id] = values
    return serves


def _varying(
    explained: list[RecompileExplanation],
    recurring: AbstractSet[str] = frozenset(),
    held: Mapping[str, int] | None = None,
) -> list[Varying]:
    by_source: dict[str, Varying] = {}
    for item in explained:
        for change in item.changes:
            expr = change.expr if change.count == 1 else None
            row = by_source.setdefault(
                change.label,
                Varying(change.label, change.kind, [], change.dynamic, expr=expr,
                        pattern=change.expr.pattern, items=change.count),
            )  # fmt: skip
            row.changes += 1
            row.dynamic = row.dynamic or change.dynamic
            row.recurs = row.recurs or change.source in recurring
            row.held = (held or {}).get(change.source, row.held)
            for value in (change.old, change.new):
                if value is not None and value not in row.values:
                    row.values.append(value)
    return list(by_source.values())


def recompile_limit_of(frame: FrameEntry, environment: dict[str, Any]) -> int:
    """The limit in force: Dynamo's refusal message, else the run's config, else the default."""
    for entry in frame.compiles:
        match = _LIMIT_IN_REASON.search(entry.record.fail_reason or "")
        if match is not None:
            return int(match.group(1) or match.group(2))
    config = (environment.get("config_changes") or {}).get("torch._dynamo.config") or {}
    for name in ("recompile_limit", "cache_size_limit"):
        value = config.get(name)
        if isinstance(value, int):
            return value
    return DEFAULT_RECOMPILE_LIMIT


def _unbounded(row: Varying) -> bool:
    return (not row.dynamic and row.kind not in FLAG_KINDS and row.changes >= 2
            and not row.recurs and row.held is None)  # fmt: skip


HELD_CALLS = 2
"""Calls a value must serve before the next for its source to be a schedule that steps
(each value held a while), not a value that changes at every call."""


def schedule_steps(varying: list[Varying]) -> list[Varying]:
    """The varying values a schedule steps through (each value held for several calls) that
    nothing else bounds: one variant per step."""
    return [v for v in varying if v.held is not None and not settled(v)]


def held_sources(rows: list[VariantRow]) -> dict[str, int]:
    """Source -> the fewest calls a variant for one of its static values served, where every
    variant but the last (the run may end early in it) served ``HELD_CALLS`` or more: a
    schedule rounded to steps (a dropout p 0.0, 0.1, 0.2, 0.3, each for many steps) compiles
    one variant per value it takes, as many as its steps, where a counter compiles one per
    call. Empty without the probes' counts."""
    calls: dict[str, list[int]] = {}
    for row in rows:
        if row.calls is None:
            return {}
        for source, value in row.serves.items():
            if value != "dynamic":
                calls.setdefault(source, []).append(row.calls)
    return {source: min(counts[:-1]) for source, counts in calls.items()
            if len(counts) >= 2 and min(counts[:-1]) >= HELD_CALLS}  # fmt: skip


def recurring_sources(rows: list[VariantRow], frame_calls: dict[str, int | None]) -> set[str]:
    """The sources one of whose static values came back: variant i, serving value v, was
    called more often than its frame was called before the first later variant with another
    value of that source compiled, so calls after that compile came back to v (the probes count
    calls per variant and the frame's calls at each compile). Empty without probes."""
    found = set()
    for i, row in enumerate(rows):
        calls, start = row.calls, frame_calls.get(row.compile_id)
        if calls is None or start is None:
            continue
        for source, value in row.serves.items():
            if value == "dynamic" or source in found:
                continue
            later = next((r for r in rows[i + 1 :] if r.serves.get(source, value) != value), None)
            then = None if later is None else frame_calls.get(later.compile_id)
            if then is not None and calls > then - start:
                found.add(source)
    return found


def _layout(row: Varying) -> bool:
    """A stride that changed once at the same sizes: a second memory layout (bounded)."""
    return not row.dynamic and row.kind in LAYOUT_KINDS and row.changes < 2


def _to_one(row: Varying) -> bool:
    """A size that changed once, to or from 1 (a prompt, then one token at a time): Dynamo
    always specializes sizes 0 and 1, so the size-1 calls are one variant of their own and the
    other size still goes dynamic if it changes (bounded)."""
    if went_zero_one(row.kind, row.values):  # dynamic, then 0 or 1
        return True
    return (row.kind == "size" and not row.dynamic and row.changes < 2
            and len(row.values) == 2 and bool({"0", "1"} & set(row.values)))  # fmt: skip


def settled(row: Varying) -> bool:
    """A varying value whose variants are bounded: dynamic, a flag, a second layout, values
    that recur, a size that went to 1, or an optimizer's state created at its first step."""
    return (row.dynamic or row.kind in FLAG_KINDS or _layout(row) or row.recurs
            or _to_one(row) or state_created(row))  # fmt: skip


def state_created(row: Varying) -> bool:
    """``len(self.state[...])`` 0 → N once: a torch optimizer's per-parameter state (momentum,
    Adam's moments), empty before its first step and made by it, so a compiled ``step``
    compiles once before and once after (bounded, by design)."""
    return (row.source.startswith("len(self.state[") and row.changes == 1
            and row.values[:1] == ["0"])  # fmt: skip


def flag_states(flags: list[Varying]) -> int:
    """How many states flags give at most: the product of their values (a bool seen with one
    value still has two); a flag of every instance of a module, set one instance at a time
    (:func:`per_instance_flags`), is one flag per instance."""
    apart = {id(row) for rows in per_instance_flags(flags).values() for row in rows}
    states = math.prod(max(len(v.values), 2) for v in flags if id(v) not in apart)
    for rows in per_instance_flags(flags).values():
        states *= max(max(len(row.values), 2) for row in rows) ** instances_of(rows)
    return states


def per_instance_flags(flags: list[Varying]) -> dict[str, list[Varying]]:
    """Flags of one attribute of many module instances (``h[*].attn.c_attn.enabled``) that
    did not change together: the recompiles name different sets of the instances (8 of them,
    then 7, then ``h[5]`` alone), so each instance is a flag of its own and every combination
    is a variant. Pattern -> its rows. (Instances that always change together, every block's
    ``training`` at ``model.eval()``, are one row: one flag.)"""
    groups: dict[str, list[Varying]] = {}
    for row in flags:
        if row.kind == "flag" and row.pattern and "[*]" in row.pattern:
            groups.setdefault(row.pattern, []).append(row)
    return {pattern: rows for pattern, rows in groups.items() if len(rows) > 1}


def instances_of(rows: list[Varying]) -> int:
    """How many instances per-instance flag rows stand for, at least (the most any row
    names)."""
    return max(row.items for row in rows)


def unfreezing_params(flags: list[Varying]) -> list[Varying]:
    """Module parameters whose requires_grad went from False to True once each, the only
    flags that changed: a gradual-unfreezing schedule (``p.requires_grad_(True)`` on one
    more block every few steps), not states to pre-warm. The parameters are reached through
    ``self`` or a global model (``model.blocks[5][0].bias``), never an argument itself."""
    if not flags or any(
        row.kind != "requires_grad" or "." not in row.source
        or row.values != ["False", "True"] for row in flags
    ):  # fmt: skip
        return []
    return flags


def _bounded_reason(varying: list[Varying], variants: int) -> str:
    dynamic = [v.source for v in varying if v.dynamic]
    flags = [v for v in varying if not v.dynamic and v.kind in FLAG_KINDS]
    layouts = [v for v in varying if _layout(v)]
    recurring = [v for v in varying if v.recurs and not v.dynamic and v.kind not in FLAG_KINDS
                 and v not in layouts]  # fmt: skip
    ones = [v for v in varying if _to_one(v) and not v.recurs]
    parts = []
    if dynamic:
        parts.append(
            f"{counted(len(dynamic), 'value')} became dynamic and "
            f"{'serves' if len(dynamic) == 1 else 'serve'} new values"
        )
    if flags and unfreezing_params(flags):
        parts.append(f"the requires_grad of {counted(len(flags), 'parameter')} went False → True "
                     "once each: one variant per stage of unfreezing")  # fmt: skip
    elif flags:
        apart = per_instance_flags(flags)
        grouped = {id(row) for rows in apart.values() for row in rows}
        names = ", ".join([f"{v.source}: {' / '.join(v.values)}" for v in flags if id(v) not in grouped]
                          + [f"{pattern}, one per instance ({instances_of(rows)}), set apart"
                             for pattern, rows in apart.items()])  # fmt: skip
        parts.append(f"flags ({names}) give at most {flag_states(flags)} combinations")
    if layouts:
        names = ", ".join(f"{v.source}: {' / '.join(v.values)}" for v in layouts)
        parts.append(f"a second memory layout ({names}) compiles its own variant")
    if recurring:
        names = ", ".join(f"{v.source}: {' / '.join(v.values)}" for v in recurring)
        parts.append(f"values that recur ({names}) compile one variant each")
    if any(state_created(v) for v in varying):
        parts.append("the optimizer's state, empty before its first step, is made by it: one "
                     "variant before, one after")  # fmt: skip
    if ones:
        names = ", ".join(f"{v.source}: {' → '.join(v.values)}" for v in ones)
        size = ("0 or 1" if any(ZERO_ONE in v.values for v in ones)
                else "1" if any("1" in v.values for v in ones) else "0")  # fmt: skip
        parts.append(f"a size of {size} ({names}) is its own variant (Dynamo specializes "
                     "sizes 0 and 1)")  # fmt: skip
    return f"{variants} variants: " + "; ".join(parts) if parts else f"{variants} variants"


def _some(names: list[str], most: int = 4) -> str:
    """The first ``most`` names, then how many more (a loop over 30 carried values lists 30
    sources)."""
    shown = ", ".join(names[:most])
    return shown if len(names) <= most else f"{shown} and {len(names) - most} more"


def outlook(
    frame: FrameEntry,
    explained: list[RecompileExplanation],
    limit: int,
    recurring: AbstractSet[str] = frozenset(),
    dynamic_at_last: AbstractSet[str] = frozenset(),
    held: Mapping[str, int] | None = None,
) -> Outlook:
    """Is the frame's variant set bounded, and when will the recompile limit be hit?
    ``recurring``: the sources whose values came back (:func:`recurring_sources`);
    ``dynamic_at_last``: the patterns the frame's last variant serves dynamic (a size that
    shares its symbol with one whose guard failed goes dynamic with it, unnamed);
    ``held``: the sources a schedule steps through, each value held for several calls
    (:func:`held_sources`): one variant per step, not unbounded."""
    varying = _varying(explained, recurring, held)
    for row in varying:
        row.dynamic = row.dynamic or row.pattern in dynamic_at_last
    unbounded = [v for v in varying if _unbounded(v)]
    if unbounded:
        names = _some([v.source for v in unbounded])
        left: int | None = 0 if frame.limit_hit else limit - frame.variants
        if frame.limit_hit:
            when = f"the recompile limit ({limit}) was hit: new values now run eagerly"
        elif left is not None and left > 0:
            when = f"recompile_limit ({limit}) is hit after {left} more new {'value' if left == 1 else 'values'}"
        elif left == 0:
            when = f"recompile_limit ({limit}) is hit by the next new value"
        else:  # more variants than the default limit: the run raised it, by how much is unknown
            left = None
            when = f"the recompile limit was raised above {frame.variants} (the log does not say how far)"
        reason = f"{names} took a new value at every recompile and never became dynamic; {when}"
        return Outlook(False, reason, varying, left, limit)
    if varying and all(settled(v) for v in varying):
        reason = _bounded_reason(varying, frame.variants)
        if frame.limit_hit and not any(v.instances for v in varying):
            # A fixed set, yet more values than the limit holds: the rest run eagerly, and
            # no pre-warming can cover them (one per instance is the limit fix's own case).
            reason += (
                f"; but the frame hit the recompile limit ({limit}): values beyond it now run "
                "eagerly"
            )
            return Outlook(False, reason, varying, 0, limit)
        return Outlook(True, reason, varying, None, limit)
    if not explained and frame.variants <= 1:
        return Outlook(True, f"{frame.variants} variant: no recompiles", varying, None, limit)
    if not varying:
        return Outlook(None, "the trace does not say what changed", varying, None, limit)
    branch = _branch_bound(explained, varying)
    if branch is not None:
        return Outlook(True, f"{frame.variants} variants: {branch}", varying, None, limit, branch)
    steps = schedule_steps(varying)
    if steps:
        left = None if frame.limit_hit else limit - frame.variants
        when = (f"the recompile limit ({limit}) was hit" if left is None
                else f"recompile_limit ({limit}) holds {left} more")  # fmt: skip
        reason = (f"{_some([v.source for v in steps])} stepped through "
                  f"{max(len(v.values) for v in steps)} values, each held for "
                  f"{min(v.held or 0 for v in steps)} calls or more: a schedule, not a value "
                  f"that changes at every call, so the variants are as many as the values it "
                  f"takes; {when}")  # fmt: skip
        return Outlook(None, reason, varying, left, limit)
    unclear = _some([v.source for v in varying if not settled(v)])
    reason = f"{unclear} changed once: too few recompiles to tell a counter from a few values"
    return Outlook(None, reason, varying, None, limit)


_RANGE = lazy_compile(r"^(?:\d+ <= )?(?P<size>[\w.\[\]'()]+\.shape\[\d+\])(?: <= \d+)?$")


def _branch_bound(explained: list[RecompileExplanation], varying: list[Varying]) -> str | None:
    """Every unsettled value is a dynamic size's range (``2 <= x.shape[0] <= 16``) that a
    branch on the shape set (``if x.shape[0] > 16:``): each side of the branch is its own
    variant, two at most (tests/programs/real/blind/shape_dependent_python.py)."""
    found = []
    for row in [v for v in varying if not settled(v)]:
        match = _RANGE.match(row.source)
        line = next((c.installed_at for item in explained for c in item.changes
                     if c.label == row.source and c.installed_at is not None), None)  # fmt: skip
        if match is None or "<=" not in row.source or line is None or not line.code:
            return None
        if not BRANCH_LINE.match(line.code) or match["size"] not in line.code:
            return None
        found.append(f"the branch `{line.code.strip()}` (line {line.line}) bounds {match['size']}, "
                     "so each side of it compiles its own variant")  # fmt: skip
    return "; ".join(dict.fromkeys(found)) if found else None


def _grad_mode(record: CompileRecord) -> str | None:
    return next(
        (value for expr, value in guard_values(record).items() if expr.text == "grad mode"), None
    )


def explain_frame(
    frame: FrameEntry,
    calls: dict[str, int | None],
    after_warmup: list[str],
    environment: dict[str, Any],
    frame_calls: dict[str, int | None] | None = None,
) -> FrameExplanation:
    """Changes per recompile, the variant table and the outlook of one frame. ``calls`` is the
    heat per compile id, ``frame_calls`` the frame's calls when each compiled (both empty
    without run probes)."""
    explained = [_explain(frame, i) for i, e in enumerate(frame.compiles) if e.cause == "recompile"]
    refused = frame.refused.compile_id if frame.refused is not None else None
    kept = [item for item in explained if item.compile_id != refused]
    refused_item = next((item for item in explained if item.compile_id == refused), None)
    dynamic = {
        e.compile_id: {expr.pattern for expr in dynamic_exprs(e.record)} for e in frame.compiles
    }
    serves = _serves(frame, kept, dynamic)
    rows = [
        VariantRow(
            entry.compile_id,
            serves[entry.compile_id],
            sorted(dynamic[entry.compile_id]),
            calls.get(entry.compile_id),
            entry.record.compile_time_s,
            _grad_mode(entry.record),
        )
        for entry in frame.compiles
        if produced_code(entry.record)
    ]
    recurring = recurring_sources(rows, frame_calls or {})
    last = next((r.compile_id for r in reversed(rows)), None)
    look = outlook(frame, explained, recompile_limit_of(frame, environment), recurring,
                   dynamic.get(last, set()) if last else set(), held_sources(rows))  # fmt: skip
    cache_class = next(
        (e.record.hf_cache_class for e in frame.compiles if e.record.hf_cache_class), None
    )
    look = _parameter_shapes(frame, look)
    if look.bounded is None and cache_class and "Static" in cache_class and frame.variants <= 2:
        reason = (
            f"generate() with a static KV cache ({cache_class}): the prefill and the decode "
            "step, its two variants by design"
        )
        look = Outlook(True, reason, look.varying, None, look.recompile_limit)
    call_site = next((e.record.call_site for e in frame.compiles if e.record.call_site), None)
    call_sites = {str(e.record.compile_id): e.record.call_site for e in frame.compiles
                  if e.record.call_site is not None}  # fmt: skip
    resume = RESUME_NAME.match(frame.function or "")
    return FrameExplanation(
        kept, refused_item, rows, look, after_warmup, cache_class, call_site=call_site,
        call_sites=call_sites, parameters=positional_parameters(frame.file, frame.line),
        resume_line=int(resume.group(2)) if resume else None,
        resumed_parameters=parameters_at(frame.file, int(resume.group(2))) if resume else None,
    )  # fmt: skip


_SELF_SHAPE = re.compile(r"^self\.(?P<attr>[\w.]+)\.shape\[\d+\]$")


def _parameter_shapes(frame: FrameEntry, look: Outlook) -> Outlook:
    """Every recompile on the shape of a tensor ``self`` holds (a parameter or a buffer:
    ``self.weight.shape[1]`` 20 → 64 → 3): one module class whose instances have weights of
    different shapes (three Linear layers of one class), each compiled as its own variant:
    bounded by the instances, by design."""
    if look.bounded is not None and look.bounded is not False:
        return look
    if not look.varying or not all(
        row.kind == "size" and not row.dynamic and _SELF_SHAPE.match(row.source)
        for row in look.varying
    ):
        return look
    attrs = sorted({m["attr"] for row in look.varying if (m := _SELF_SHAPE.match(row.source))})
    reason = (
        f"{', '.join(f'self.{a}' for a in attrs)}: one shape per instance of the frame's module "
        f"class (layers of different sizes), each its own variant ({frame.variants} so far): "
        "bounded by the instances"
    )
    if frame.limit_hit:
        reason += f"; the recompile limit ({look.recompile_limit}) was hit: the others run eagerly"
    return Outlook(True, reason, look.varying, None, look.recompile_limit)


def explain_frames(
    frames: list[FrameEntry], heat: Heat | None, environment: dict[str, Any]
) -> list[FrameExplanation]:
    """:func:`explain_frame` for every frame, in order, with the run's heat when measured."""
    explanations = []
    for frame in frames:
        items = {} if heat is None else heat.compiles
        own = {e.compile_id: items.get((frame.stream, e.compile_id)) for e in frame.compiles}
        calls = {cid: None if item is None else item.calls for cid, item in own.items()}
        late = [cid for cid, item in own.items() if item is not None and item.after_warmup]
        at = {cid: None if item is None else item.frame_calls for cid, item in own.items()}
        explanations.append(explain_frame(frame, calls, late, environment, at))
    return explanations


MERGE_MIN = 3
"""Consecutive recompiles that change the same value (one per decoder layer, a counter) are
one evidence line from this many on."""
MAX_CHAIN = 6


def merged_change_lines(items: list[tuple[str, str | None, SourceChange]]) -> list[str]:
    """Evidence lines, one per (compile id, the variant it was compared with, change), with
    the changes of consecutive recompiles to the same value merged into one line, from the
    changes themselves: ``0/1–0/5: cache.layers[0..4].ready flag False → True`` (the same
    change at each index), ``0/5–0/7: self.idx value 4..6 → 5..7`` (a counter),
    ``0/1–0/4: x.shape[0] size 5832 → 6120 → 7040 → 7962`` (each new value the next old)."""
    lines: list[str] = []
    start = 0
    while start < len(items):
        end = start + 1
        key = _merge_key(items[start][2])
        while end < len(items) and _merge_key(items[end][2]) == key:
            end += 1
        run = sorted(items[start:end], key=lambda item: _compile_order(item[0]))
        if len(run) >= MERGE_MIN:
            lines.append(_merged_line(run))
        else:
            lines += [change_line(*item) for item in run]
        start = end
    return lines


def _compile_order(compile_id: str) -> tuple[str, int]:
    """``0/10`` after ``0/9``: a merged line's compiles in the order they were made (the
    evidence lists each recompile's first change before any second one)."""
    frame, _, number = compile_id.rpartition("/")
    return (frame, int(number)) if number.isdigit() else (compile_id, -1)


def _merge_key(change: SourceChange) -> tuple[str, str, bool, int, bool]:
    """Changes with one key merge; an unknown value (a refused compile's) stands alone."""
    known = change.old is not None and change.new is not None
    return (change.expr.pattern, change.kind, change.dynamic, change.count, known)


def _index_text(changes: list[SourceChange]) -> str:
    """The changes' common pattern with each ``[*]`` as the range of its indices."""
    pattern = changes[0].expr.pattern
    if changes[0].count > 1 or not changes[0].expr.indices:
        return changes[0].label
    columns = list(zip(*(c.expr.indices for c in changes), strict=False))
    pieces = pattern.split("[*]")
    text = pieces[0]
    for column, piece in zip(columns, pieces[1:], strict=False):
        low, high = min(column), max(column)
        text += f"[{low}]" if low == high else f"[{low}..{high}]"
        text += piece
    return text


def _ints(values: list[str | None]) -> list[int] | None:
    try:
        return [int(str(value)) for value in values]
    except ValueError:
        return None


def _values_text(changes: list[SourceChange]) -> str:
    """What the run of changes did to the value: one ``old → new`` when all did the same, a
    chain when each new value is the next one's old, ranges for a counter (both sides
    stepping alike), else the pairs."""
    olds, news = [c.old for c in changes], [c.new for c in changes]
    if all(new is None for new in news) and len(set(olds)) > 1:  # the new values unknown
        shown = [str(old) for old in olds]
        return (
            ", ".join(shown[:MAX_CHAIN])
            + (", …" if len(shown) > MAX_CHAIN else "")
            + (" → a new value each time")
        )
    if len(set(olds)) == 1 and len(set(news)) == 1:
        return f"{olds[0] or 'a value'} → {news[0] or 'a new value'}"
    if all(a == b for a, b in zip(news, olds[1:], strict=False)):
        chain = [str(olds[0]), *(str(v) for v in news)]
        numbers = _ints(list(chain))
        if len(chain) > 4 and numbers is not None and _steps_alike(numbers):
            return f"{chain[0]} → {chain[1]} → … → {chain[-1]}"  # a counter, or a growing size
        if len(chain) > MAX_CHAIN:
            return " → ".join([*chain[: MAX_CHAIN - 1], "…", chain[-1]])
        return " → ".join(chain)
    old_ints, new_ints = _ints(olds), _ints(news)
    if old_ints and new_ints and _steps_alike(old_ints) and _steps_alike(new_ints):
        return f"{old_ints[0]}..{old_ints[-1]} → {new_ints[0]}..{new_ints[-1]}"
    pairs = [f"{old} → {new}" for old, new in zip(olds, news, strict=True)]
    return ", ".join(pairs[:MAX_CHAIN]) + (", …" if len(pairs) > MAX_CHAIN else "")


def _steps_alike(values: list[int]) -> bool:
    steps = {b - a for a, b in itertools.pairwise(values)}
    return len(steps) == 1 and steps != {0}


def _merged_line(run: list[tuple[str, str | None, SourceChange]]) -> str:
    changes = [change for _, _, change in run]
    first = changes[0]
    dynamic = " (now dynamic)" if first.dynamic else ""
    kind = kind_words(first.kind, first.source)
    ids = id_ranges([compile_id for compile_id, _, _ in run])
    return f"{ids}: {_index_text(changes)} {kind}{_values_text(changes)}{dynamic}"


def change_line(compile_id: str, compared_with: str | None, change: SourceChange) -> str:
    """``0/1 vs 0/0: kwargs['input_ids'].shape[1] size 8 → 1`` (one line of evidence)."""
    against = f" vs {compared_with}" if compared_with else ""
    # A refused or unguarded new value is unknown: "a new value", never "None".
    values = (
        f"{change.old or 'a value'} → {change.new or 'a new value'}"
        if change.old or change.new
        else "changed"
    )
    dynamic = " (now dynamic)" if change.dynamic else ""
    kind = kind_words(change.kind, change.source)
    return f"{compile_id}{against}: {change.label} {kind}{values}{dynamic}"
