"""Fixes for a frame's recompiles, written for this code: they name the argument and dim, the
attribute, the line that installed a specialization, and a library pattern only when the
evidence matches it.

Every torch API or config named here is applied to a small program in
tests/integration/test_recompile_fixes_applied.py, which shows the recompile disappear on the
installed torch. Measured on torch 2.13 with ``backend="eager"``:

- ``allow_unspec_int_on_nn_module = True``: a counter attribute read in ``forward`` compiles 2
  graphs instead of one per value;
- ``maybe_mark_dynamic(x, 0)`` before the first call: one compile for sizes 4..7 instead of two
  (automatic dynamic shapes), and sizes 0/1 still recompile;
- a plain int *argument* already becomes dynamic after one recompile (automatic dynamic), so it
  is never called "baked in";
- ``mark_dynamic`` on a size that Python code specializes raises ConstraintViolationError;
- Hugging Face ``generate(cache_implementation="static", max_length=N)``: one graph fewer than
  the dynamic cache (the decode step compiles once; tests/programs/real/gpt2_generate_dynamic.py,
  4 graphs → 3, in tests/integration/test_real_programs.py, as the next three);
- the same on an encoder-decoder model (T5), with prompts padded to one length: 2 graphs (the
  first decoder step, the decode step) instead of 6 (t5_generate.py, three prompt lengths);
- values that recur (sizes padded to buckets under ``dynamic=False``): one variant each, reused
  (bucketed_server.py: 12 requests, 3 variants called 6, 3 and 3 times);
- regional compilation of a diffusers UNet (``compile_repeated_blocks()``): one graph per
  BasicTransformerBlock width (unet_denoise.py: 2 graphs for 4 blocks).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.changes import FLAG_KINDS, LAYOUT_KINDS, SourceChange
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    Outlook,
    VariantRow,
    Varying,
    flag_states,
    instances_of,
    per_instance_flags,
    state_created,
    unfreezing_params,
)
from pt2doctor.analysis.source_lines import following_code
from pt2doctor.analysis.text import counted
from pt2doctor.trace.messages import is_user_file
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import SourceLine

_INT = lazy_compile(r"-?\d+")
DYNAMO_CONFIG = "torch._dynamo.config"
CARRIED = "(value carried over the graph break"
"""How sources.py names a value Dynamo carries on the stack across a graph break."""
SHAPES_CONFIG = "torch.fx.experimental._config"


@dataclass(frozen=True, slots=True)
class FixApplication:
    """A fix pt2doctor can apply to the program itself (``run --try-fixes``): config values set
    before the program starts, ``maybe_mark_dynamic`` on named arguments of every compiled
    callable at each call, ``torch.compile`` settings replaced. ``label`` is the fix as the
    user would write it."""

    label: str
    config: tuple[tuple[str, Any], ...] = ()
    """(``module.name``, value): ``torch._dynamo.config.recompile_limit``, 16."""
    marks: tuple[tuple[str, int], ...] = ()
    """(argument name, dim): the argument passed by that keyword, or at that parameter's
    position of the compiled callable's signature."""
    compile: tuple[tuple[str, Any], ...] = ()
    """torch.compile keyword arguments to replace: ("dynamic", None)."""

    def as_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "config": dict(self.config),
            "marks": [{"arg": arg, "dim": dim} for arg, dim in self.marks],
            "compile": dict(self.compile),
        }


@dataclass(frozen=True, slots=True)
class Fix:
    """One fix's text, and how pt2doctor can apply it itself (None: it is code to change)."""

    text: str
    application: FixApplication | None = None


def _at(line: SourceLine | None) -> str:
    if line is None or line.file is None:
        return ""
    code = f" (`{line.statement}`)" if line.statement else ""
    return f" at {line.file}:{line.line}{code}"


def number_keyword_rewrite(code: str) -> str | None:
    """``pt.mul_(decay).add_(po * (1 - decay))`` for ``...add_(po, alpha=1 - decay)``: the
    factor moved onto the tensor, where a 0-d tensor may stand (``alpha=`` takes a number)."""
    keyword = code.find("alpha=")
    comma = code.rfind(",", 0, keyword)
    if keyword < 0 or comma < 0:
        return None
    depth, opening = 0, -1
    for index in range(comma - 1, -1, -1):  # the call's own parenthesis, left of the comma
        depth += {")": 1, "(": -1}.get(code[index], 0)
        if depth < 0:
            opening = index
            break
    depth, closing = 0, -1
    for index in range(keyword, len(code)):  # and its closing one, right of alpha=
        depth += {"(": 1, ")": -1}.get(code[index], 0)
        if depth < 0:
            closing = index
            break
    first, factor = code[opening + 1 : comma].strip(), code[keyword + 6 : closing].strip()
    if opening < 0 or closing < 0 or not first or not factor or "," in first:
        return None
    return f"{code[: opening + 1]}{first} * ({factor}){code[closing:]}"


def _specialized_again(row: Varying, explanation: FrameExplanation) -> Fix | None:
    """A Python number that became dynamic, then an expression of it was made a constant
    again (``3.0*running_avg == 4.47``: a use that needs a plain number, like clamp's
    ``max=``, which Inductor's scalar pass could not keep symbolic): each new value compiles
    again. A 0-d tensor is traced instead."""
    if row.dynamic or row.kind != "value":
        return None
    base = next((other for other in explanation.outlook.varying if other.dynamic
                 and other is not row and other.kind in ("value", "size")
                 and re.search(rf"(?<![\w.]){re.escape(other.source)}(?![\w(])", row.source)),
                None)  # fmt: skip
    if base is None:
        return None
    if base.kind == "size":
        return _float_of_size(row, base, _first_change(explanation, row.source))
    first = _first_change(explanation, base.source)
    line = first.installed_at if first is not None else None
    where = (
        f" (`{line.statement}`, line {line.line})" if line is not None and line.statement else ""
    )
    rewrite = number_keyword_rewrite(line.statement) if line is not None else None
    where_to = (f": `{rewrite}` (`alpha=` takes a number; a factor on the tensor takes a "
                "0-d tensor)" if rewrite else ": ops take a tensor there (clamp's max, a "
                "multiplication)")  # fmt: skip
    return Fix(
        f"{base.source} became dynamic after one recompile, then `{row.source}` was made a "
        f"constant again where the compiled code needs a plain number{where}: every new value "
        f"compiles again. Pass it as a 0-d tensor (`torch.tensor({base.source})`) and use it "
        f"in tensor arithmetic{where_to}, traced, with no guard on its value."
    )


def _float_of_size(row: Varying, base: Varying, change: SourceChange | None) -> Fix:
    """A float computed from a dynamic size (``w0 / sqrt(N)`` for F.interpolate's
    ``scale_factor``) made a constant again: the size serves every value, the float does not
    (tests/programs/real/blind/vit_multires.py: 5 graphs -> 2 with ``size=``)."""
    line = change.installed_at if change is not None else None
    where = (f" (`{line.statement}`, line {line.line})"
             if line is not None and line.statement else "")  # fmt: skip
    scale = line is not None and "interpolate(" in line.statement
    how = ("pass F.interpolate the target size instead of a scale_factor (`size=(h, w)`, "
           "ints from the shape, which stay symbolic)" if scale else "compute what the code "
           "needs from the ints of the shape (they stay symbolic), or as a tensor")  # fmt: skip
    return Fix(
        f"{base.source} became dynamic, but `{row.source}`, a float computed from it, is made "
        f"a constant where the compiled code needs a plain number{where}: each new size "
        f"compiles again, until the recompile limit. Keep floats out of it: {how}; one "
        "variant then serves every size (a different rounding of the float can change the "
        "result in the last digits)."
    )


def _first_change(explanation: FrameExplanation, source: str) -> SourceChange | None:
    items = [*explanation.recompiles, *([explanation.refused] if explanation.refused else [])]
    return next((c for item in items for c in item.changes if c.label == source), None)


def _changes(explanation: FrameExplanation) -> list[SourceChange]:
    return [change for item in explanation.recompiles for change in item.changes]


def _cache_filled(change: SourceChange) -> bool:
    """A KV cache going from None / uninitialized to initialized."""
    return "cache" in change.source and (
        (change.source.endswith("is_initialized") and (change.old, change.new) == ("False", "True"))
        or (change.kind in ("none", "type") and change.old in ("None", "NoneType"))
    )


def _encoder_decoder(explanation: FrameExplanation) -> bool:
    """An encoder-decoder cache or encoder output among what distinguishes the variants
    (``EncoderDecoderCache.is_updated``, its cross-attention cache, ``encoder_outputs``)."""
    sources = [c.source for c in _changes(explanation)]
    sources += [source for row in explanation.variants for source in row.serves]
    return any(
        word in source
        for source in sources
        for word in ("is_updated", "cross_attention_cache", "encoder_outputs")
    )


def hf_generate_pattern(explanation: FrameExplanation) -> str | None:
    """Hugging Face ``generate()``'s first step then decode, in one recompile: the KV cache goes
    from None / uninitialized to initialized while ``input_ids`` goes to length 1 (a decoder
    model: "decoder"), or while the decoder input stays one token long and the cache is an
    encoder-decoder one ("encoder_decoder": T5, BART, Whisper). None when neither matches."""
    for item in explanation.recompiles:
        if not any(_cache_filled(c) for c in item.changes):
            continue
        if any(
            "input_ids" in c.source and c.kind == "size" and c.new == "1" and c.old != "1"
            for c in item.changes
        ):
            return "decoder"
        same_input = not any(c.kind == "size" and "input_ids" in c.source for c in item.changes)
        if same_input and _encoder_decoder(explanation):
            return "encoder_decoder"
    return None


HF_GENERATE_FIX = (
    "This is Hugging Face generate(): the prefill (whole prompt, empty KV cache) and the decode "
    "steps (one token, filled cache) are separate variants, and the cache length grows every "
    "step (one static decode compile, then a dynamic one). Use a static cache of one size: "
    'model.generate(..., cache_implementation="static", max_length=N) with the same N on every '
    "call, so the decode step compiles once (with max_new_tokens the cache is sized per prompt "
    "and recompiles). Marking sizes dynamic is no way out here: generate() builds the cache and "
    "the model's inputs itself, so no tensor you hold reaches the compiled forward."
)
HF_STATIC_GENERATE = (
    "This is Hugging Face generate() with a static KV cache ({cache}, as its guards show): the "
    "prefill (the whole prompt) and the decode step (one token) are the two variants it "
    "needs, by design, and the cache length does not change between steps. Nothing to fix: "
    "generate once before timing or serving to pay both compiles. A prompt of another length "
    "compiles the prefill again: pad prompts to one length to keep two variants."
)
HF_ENCODER_DECODER_FIX = (
    "This is Hugging Face generate() on an encoder-decoder model: the first decoder step "
    "(empty self-attention cache) and the later steps (filled cache) are separate variants, "
    "the self-attention cache grows every step (one static decode compile, then a dynamic "
    "one), and each new prompt length changes the encoder output and the cross-attention "
    "cache (static, then dynamic). Use a static cache, "
    'model.generate(..., cache_implementation="static", max_length=N) with the same N on every '
    "call, so the decode step compiles once; and pad prompts to one length "
    '(tokenizer(..., padding="max_length", max_length=L)) so the encoder length never '
    "changes: two variants in all (the first step and the decode step)."
)
_HF_FIXES = {"decoder": HF_GENERATE_FIX, "encoder_decoder": HF_ENCODER_DECODER_FIX}


def _dynamic_size_fix(rows: list[Varying]) -> Fix | None:
    """One mark fix for every input dim that took the same sizes (they share one symbol: marking
    one alone changes nothing while another pins it). Only inputs the user passes: a tensor
    made inside the model cannot be marked, and ``kwargs['x']`` is the tensor passed as x=.
    When the first call had size 0 or 1, the mark alone changes nothing (0/1 specialization):
    that is said first, and the fix adds ``backed_size_oblivious``."""
    found = [_input_dim(row) for row in rows]
    if None in found:
        return None
    marks = [mark for mark in found if mark is not None]
    sources = ", ".join(row.source for row in rows)
    calls = " and ".join(f"torch._dynamo.maybe_mark_dynamic({t}, {dim})" for t, dim, _, _ in marks)
    keywords = [name for _, _, keyword, name in marks if keyword]
    what = (
        f"every tensor you pass as {' and '.join(f'{k}=' for k in keywords)} before the first "
        f"call: {calls} (for model(**batch))"
        if keywords
        else f"the input before the first call: {calls}"
    )
    shared = (
        " They took the same sizes and share one dynamic size: mark all of them (one left static "
        "pins it)."
        if len(marks) > 1
        else ""
    )
    them = "them" if len(marks) > 1 else "it"
    trial_marks = tuple((name, dim) for _, dim, _, name in marks)
    first = rows[0].values[0] if rows[0].values else None
    if first in ("0", "1"):
        return Fix(
            f"{sources} became dynamic after one static recompile (automatic dynamic shapes). "
            f"The first call had size {first}, and Dynamo always specializes sizes 0 and 1: "
            f"marking the dim alone changes nothing. Warm up with a size of 2 or more first, or "
            f"mark {what} and set {SHAPES_CONFIG}.backed_size_oblivious = True, so that size "
            f"{first} compiles the dynamic variant too.{shared}",
            FixApplication(
                f"{calls} with {SHAPES_CONFIG}.backed_size_oblivious = True",
                config=((f"{SHAPES_CONFIG}.backed_size_oblivious", True),),
                marks=trial_marks,
            ),
        )
    return Fix(
        f"{sources} became dynamic after one static recompile (automatic dynamic shapes). To "
        f"compile {them} dynamic from the first call, mark "
        f"{what}.{shared} maybe_mark_dynamic is the safe form (mark_dynamic raises "
        "ConstraintViolationError when the code specializes that dim); sizes 0 and 1, and sizes "
        "outside min/max, still recompile.",
        FixApplication(calls, marks=trial_marks),
    )


def _split_off_fix(rows: list[Varying]) -> str:
    """A library frame Dynamo compiled on its own (below a graph break): its arguments are
    tensors the library made (``logits``), which the user cannot mark."""
    names = ", ".join(row.source for row in rows)
    return (
        f"{names} became dynamic after one static recompile (automatic dynamic shapes), by "
        "design. This frame is library code that Dynamo compiled on its own, because a graph "
        "break above it split the caller: its arguments are tensors the library made, not "
        "ones you pass, so there is nothing of yours to mark. Remove the break and it compiles "
        "inside its caller's graph."
    )


def _marks_save_a_recompile(explanation: FrameExplanation, rows: list[Varying]) -> bool:
    """Whether marking ``rows`` from the first call removes a recompile: one whose changes are
    all among them. A size that changed together with a flag or a dtype still recompiles for
    the flag (tests/programs/multi_guard.py: the mark changed nothing, --try-fixes measured)."""
    marked = {row.source for row in rows}
    return any(
        item.changes and all(change.label in marked for change in item.changes)
        for item in explanation.recompiles
    )


def _input_dim(row: Varying) -> tuple[str, int, bool, str] | None:
    """The input dim ``row`` is, as a mark names it: (what the user writes, dim, passed by
    keyword, argument name); ``kwargs['x']`` is ``batch['x']``, the tensor passed as x=. None
    when ``row`` is not a dim of a tensor the user passes."""
    expr = row.expr
    if expr is None or expr.dim is None or not expr.direct:
        return None
    name = expr.argument
    return (f"batch['{name}']" if expr.keyword else name, expr.dim, expr.keyword, name)


def _mark_trial(row: Varying) -> FixApplication | None:
    """``maybe_mark_dynamic`` on the input dim of ``row`` (None: not an input's dim)."""
    found = _input_dim(row)
    if found is None:
        return None
    shown, dim, _, name = found
    return FixApplication(f"torch._dynamo.maybe_mark_dynamic({shown}, {dim})", marks=((name, dim),))


def _values(row: Varying, most: int = 6) -> str:
    shown = ", ".join(row.values[:most])
    return shown + (", …" if len(row.values) > most else "")


def _dynamic_false_at(call: dict[str, Any] | None) -> str | None:
    """`` at FILE:LINE`` of the user's torch.compile call when it set ``dynamic=False`` (""
    when the line is unknown), None when it did not."""
    settings = (call or {}).get("settings") or {}
    if settings.get("dynamic") is not False:
        return None
    return f" at {call['file']}:{call['line']}" if call and call.get("file") else ""


def _static_by_setting(
    row: Varying, call: dict[str, Any] | None, same: list[Varying] | None = None
) -> Fix | None:
    """The user's own ``dynamic=False`` keeps the size static: say so, with its line, in one
    fix for every size that took the same values (``same``)."""
    where = _dynamic_false_at(call)
    if where is None or row.kind != "size":
        return None
    names = " and ".join(r.source for r in (same or [row]))
    return Fix(
        f"dynamic=False in your torch.compile call{where} keeps {names} static: each new "
        f"size ({_values(row)}) compiles a new variant. Drop dynamic=False (the size becomes "
        "dynamic at its first change: 2 variants instead of one per size), or pad inputs to a "
        "few fixed sizes if you want static kernels for each.",
        FixApplication("torch.compile without dynamic=False", compile=(("dynamic", None),)),
    )


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _recurring_fix(rows: list[Varying], explanation: FrameExplanation) -> Fix:
    """Values that came back (padding buckets, prefill and decode): a fixed set, one variant
    each, by design; the user's dynamic=False, where set, is the reason each is static."""
    row = rows[0]
    names = " and ".join(r.source for r in rows)
    calls: dict[str, int] = {}
    for variant in explanation.variants:
        value = variant.serves.get(row.source.split(" (")[0])
        if value is not None and value != "dynamic" and variant.calls is not None:
            calls[value] = calls.get(value, 0) + variant.calls
    seen = _values(row)
    if len(calls) > 1:  # each value with its calls, in one order
        values, times = list(calls), [str(n) for n in calls.values()]
        seen = f"{_and(values)}: {_and(times)} calls"
    text = (
        f"{names} {'takes' if len(rows) == 1 else 'take'} {len(row.values)} values that recur "
        f"({seen}): a fixed set{', as padding to buckets gives' if row.kind == 'size' else ''}, with one variant "
        "per value, reused whenever the value comes back. Bounded by design: warm each value up "
        "(one call each) before timing or serving, so no request pays a compile."
    )
    where = _dynamic_false_at(explanation.compile_call)
    if where is not None:
        text += (
            f" dynamic=False in your torch.compile call{where} is what keeps each value its "
            "own static variant; keep it for static kernels per bucket, or drop it to serve "
            "every value with 2 variants."
        )
    return Fix(text)


_TENSOR_OF_RANGE = lazy_compile(r"torch\.tensor\(\s*(?:list\(\s*)?range\((?P<args>[^()]*)\)")


def _specializing_rewrite(code: str) -> str:
    """A rewrite of the line that needs the concrete size, where the line is a known idiom
    (``torch.tensor(list(range(T)))``: a tensor made from Python ints, one per position)."""
    found = _TENSOR_OF_RANGE.search(code)
    if found is not None:
        return (f" Here `torch.arange({found['args'].strip()})` makes the same tensor from the "
                "size itself, traced symbolically: `torch.tensor` of a Python list needs every "
                "element's value.")  # fmt: skip
    return ""


def user_specialized(explanation: FrameExplanation) -> list[tuple[Varying, SourceLine]]:
    """Sizes that kept changing and never became dynamic because the user's own line needed
    the concrete value (its ``symbolic_shape_specialization`` stack), with that line: a cause
    the user can remove, whether or not the values recur."""
    found = []
    for row in explanation.outlook.varying:
        if row.kind != "size" or row.dynamic or row.changes < 2:
            continue
        change = _first_change(explanation, row.source)
        if change is not None and change.specialized_at is not None:
            found.append((row, change.specialized_at))
    return found


def _specialized_size_fix(row: Varying, change: SourceChange | None) -> Fix:
    site = change.specialized_at if change else None
    installed = change.installed_at if change else None
    if site is not None:  # the user's own line that needed the concrete size
        return Fix(
            f"{row.source} is made static by your code at {site.file}:{site.line}"
            + (f" (`{site.code.strip()}`)" if site.code else "")
            + f": it needs the concrete size (a dict key, a Python int, a shape-dependent "
            f"branch, a tensor made from Python ints), so each new size ({_values(row)}) "
            "compiles a new variant. Rewrite that line to keep the size a tensor dimension "
            "(slice a table built once for the longest length instead of caching one per "
            "length), or pad inputs to a few fixed sizes; marking the dim dynamic does not "
            "help there (maybe_mark_dynamic changes nothing, mark_dynamic raises "
            "ConstraintViolationError)." + _specializing_rewrite(site.code or "")
        )
    if installed is not None and installed.file and library_path(installed.file) is not None:
        return Fix(
            f"{row.source} stays static: each new size ({_values(row)}) compiles a new "
            f"variant. The guard was installed inside library code "
            f"({library_path(installed.file)}:{installed.line}), not a line to edit, and the "
            "log names no line of yours that needs the concrete size. Pad inputs to a few "
            "fixed sizes, or look in your code for the size used as a dict key, a Python int "
            "or in a shape-dependent branch.",
            _mark_trial(row),  # whether dynamic shapes were only off for it: a re-run tells
        )
    where = _at(installed)
    if not where:  # no user line: Python code, dynamic=False or a static mark, the log can't say
        return Fix(
            f"{row.source} stays static: each new size ({_values(row)}) compiles a new variant "
            "and it never became dynamic. Either Python code needs the concrete size (a dict "
            "key, a Python int, a shape-dependent branch: keep it a tensor dimension) or "
            "dynamic shapes are off for it (dynamic=False, mark_static, "
            "automatic_dynamic_shapes=False); or pad inputs to a few fixed sizes.",
            _mark_trial(row),
        )
    return Fix(
        f"{row.source} stays static, guarded by Python code{where}: each new size "
        f"({_values(row)}) compiles a new variant and it never became dynamic. If that line "
        "needs the concrete size (a dict key, a Python int, a shape-dependent branch), rewrite "
        "it to keep the size a tensor dimension, or pad inputs to a few fixed sizes; if it "
        "does not, marking the dim dynamic before each call serves every size (the log cannot "
        "tell: pt2doctor run --try-fixes tries the mark).",
        _mark_trial(row),
    )


PARTIAL_BATCH_CALLS = 3
"""Calls at the full batch size before the smaller one, for it to read as a last batch."""


def _set_on_first_call(explanation: FrameExplanation) -> list[str]:
    """An attribute that was None for the first call only and then kept one value: the first
    call set it (lazy initialization, as a Hugging Face model sets ``config.problem_type`` on
    its first forward with labels), so the first graph served one call. Set it before."""
    first = explanation.variants[0] if explanation.variants else None
    if first is None or first.calls != 1 or not explanation.recompiles:
        return []
    changed = {change.source for change in explanation.recompiles[0].changes}
    texts = []
    for row in explanation.outlook.varying:
        if (row.kind != "none" or row.changes != 1 or len(row.values) != 2
                or row.values[0] != "None" or row.source not in changed
                or not row.source.startswith("self.")):  # fmt: skip
            continue
        value = row.values[1]
        hf = (" (a Hugging Face model sets config.problem_type on its first forward with labels: "
              f"pass problem_type={value} to its config)" if row.source.endswith(
                  ".config.problem_type") else "")  # fmt: skip
        others = sorted(changed - {row.source})
        gain = (f": one compile fewer once {', '.join(others[:2])}"
                f"{' and the rest' if len(others) > 2 else ''}, which changed at the same "
                "call, stop changing too" if others else ": one compile fewer")  # fmt: skip
        texts.append(
            f"{row.source} was None for the first call only, then {value}: the first call sets "
            "it, so the graph compiled for None served that one call. Set "
            f"`{row.source.replace('self.', 'model.', 1)} = {value}` on the compiled module "
            f"before the first call{hf}{gain}."
        )
    return texts


def partial_batch_fix(explanation: FrameExplanation) -> str | None:
    """One change of a batch dim to a smaller size after many calls at the first: the
    pattern of a partial last batch (200 samples in batches of 16 end with one of 8). Every
    input's dim 0 that changed must have changed alike, once; other values may change too
    (a sequence length, a flag): this fix is for the batch dim alone."""
    rows = [
        row for row in explanation.outlook.varying
        if row.kind == "size" and row.source.endswith(".shape[0]")
    ]  # fmt: skip
    if (
        not rows
        or any(row.changes != 1 for row in rows)
        or len({tuple(r.values) for r in rows}) != 1
    ):
        return None
    sizes = [int(v) for v in rows[0].values if _INT.fullmatch(v)]
    if len(sizes) != 2 or sizes[1] >= sizes[0]:
        return None
    sources = [row.source for row in rows]
    changed = next((item for item in explanation.recompiles
                    if any(c.source in sources for c in item.changes)), None)  # fmt: skip
    before = next((v for v in explanation.variants
                   if changed is not None and v.compile_id == changed.compared_with), None)  # fmt: skip
    calls = before.calls if before is not None else None
    if calls is None or calls < PARTIAL_BATCH_CALLS:
        return None
    full, last = sizes
    then = (
        "it became dynamic and serves every size, at the cost of that recompile"
        if all(row.dynamic for row in rows)
        else f"it compiled a variant for {last}"
    )
    named = sources[0] if len(sources) == 1 else f"{', '.join(sources[:-1])} and {sources[-1]}"
    head = (
        f"{named} went from {full} to {last} once, after {calls} calls at {full}: the "
        "pattern of a partial last batch (a dataset whose size is not a multiple of the batch "
        f"size); {then}."
    )
    if before is not None and _evaluating(before):
        expr = rows[0].expr
        mark = (
            " (below)"  # the dynamic row's own fix names the mark
            if all(row.dynamic for row in rows)
            else f" (`torch._dynamo.maybe_mark_dynamic({expr.call_form.split('.shape')[0]}, 0)`)"
            if expr is not None and expr.direct and len(rows) == 1
            else ""
        )
        # drop_last there would leave the last samples out of the metric: a changed result.
        return (
            f"{head} It came in an evaluation or inference pass (grad mode off or training "
            "False): do not drop that batch (drop_last=True would leave its samples out of the "
            f"metric or the predictions); pad it to {full} and leave the padded rows out, or "
            f"mark the dim dynamic before the first call{mark}, which helps only where nothing "
            "in the model guards the batch size (a CPU convolution may): check that the "
            "recompile is gone."
        )
    return (
        f"{head} If the batches come from a DataLoader, pass drop_last=True (or pad the last "
        f"batch to {full}): one variant then serves every batch."
    )


def _evaluating(variant: VariantRow) -> bool:
    """A variant built for an evaluation or inference pass: grad mode off (its own guard's,
    whether or not another variant differs in it), or a module's training False."""
    return (
        variant.grad_mode == "False"
        or variant.serves.get("grad mode") == "False"
        or any(
            key.split(" (")[0].endswith(".training") and value == "False"
            for key, value in variant.serves.items()
        )
    )


def _limit_trial(limit: int) -> FixApplication:
    return FixApplication(
        f"{DYNAMO_CONFIG}.recompile_limit = {limit}",
        config=((f"{DYNAMO_CONFIG}.recompile_limit", limit),),
    )


def _per_instance_fixes(row: Varying, explanation: FrameExplanation) -> list[Fix]:
    """An int attribute that differs per instance (a layer index of layers compiled one by
    one): not a counter. Each variant serves its instance and is reused; only the recompile
    limit can matter. Past the limit the log cannot say how many states each instance serves
    (the variants stop at the limit): the limit for the states seen, then for twice as many
    (training and eval, grad on and off), each its own fix to try."""
    call = explanation.compile_call or {}
    where = f" ({call['file']}:{call['line']})" if call.get("file") else ""
    instances = row.instances or 0
    variants = len(explanation.variants)
    limit = explanation.outlook.recompile_limit
    head = (
        f"{row.source} is a per-instance constant, not a counter: {instances} "
        f"{call.get('name') or 'module'} instances are compiled one by one{where}, each with "
        f"its own value ({_values(row)}), and each variant is reused on every call of its "
        "instance. Nothing needs to become dynamic."
    )
    if variants < limit and instances < limit:
        return [
            Fix(
                head + f" {variants} variants stay below the recompile limit ({limit}); with more "
                "instances than that, raise torch._dynamo.config.recompile_limit to cover them."
            )
        ]
    states = max(1, round(variants / max(1, len(row.values))))
    enough = max(instances * states, limit + 1)
    more = max(instances * states * 2, enough + 1)
    return [
        Fix(
            f"{head} {variants} variants reach the recompile limit ({limit}): the instances "
            "past it run eagerly."
        ),
        Fix(
            "Raise torch._dynamo.config.recompile_limit to at least the number of instances "
            f"times the states each one serves ({instances} × {states} seen: "
            f"torch._dynamo.config.recompile_limit = {enough}).",
            _limit_trial(enough),
        ),
        Fix(
            f"If each instance serves more states than the log shows before the limit "
            f"(training and eval, grad on and off), raise it to {more} ({instances} × "
            f"{states * 2}).",
            _limit_trial(more),
        ),
    ]


_HOOK_DICTS = ("._forward_hooks", "._forward_pre_hooks", "._backward_hooks",
               "._backward_pre_hooks")  # fmt: skip
HOOKS_CHANGED = "The module hooks changed between calls"
HOOKS_FIX = (
    "Dynamo guards here on how many hooks a module has, not on which: each set of hooks "
    "compiles a variant, and a graph keeps running the hooks it traced. Register the hooks "
    "once, before the first compiled call, and switch what they do with a flag they read (see "
    "the hook_changed_after_compile finding)."
)


INFERENCE_TENSOR_FIX = (
    "{names} arrived as an inference tensor (made under `torch.inference_mode()`) and as a "
    "normal tensor (made outside it): Dynamo guards the difference, so each kind compiles its "
    "own variant, and a variant compiled for one never serves the other (a warmup input made "
    "under inference_mode does not warm up requests made outside it). Make the inputs alike: "
    "all inside `torch.inference_mode()` or all outside it (the warmup input made the way "
    "requests are)."
)


OPTIMIZER_STATE_FIX = (
    "Nothing to fix: the optimizer makes its per-parameter state (momentum buffers, Adam's "
    "moments) at its first step, so the compiled step compiles once more after it, and that "
    "variant serves every later step. Pre-warm with one step before timing or serving."
)


def _per_instance_flags_fix(pattern: str, rows: list[Varying],
                            explanation: FrameExplanation) -> Fix:  # fmt: skip
    """A flag of every instance of a module, set one instance at a time (LoRA adapters
    switched per layer): every combination is a graph. A tensor gate serves them all."""
    count = instances_of(rows)
    leaf = pattern.rpartition(".")[2]
    store = next((explanation.stores[row.source] for row in rows
                  if row.source in explanation.stores), None)  # fmt: skip
    read = next((change.installed_at for change in _changes(explanation)
                 if change.expr.pattern == pattern and change.installed_at is not None
                 and change.installed_at.statement), None)  # fmt: skip
    owner = f"{count} {store['module']} modules" if store and store.get("module") else (
        f"{count} modules")  # fmt: skip
    said = f" (`{read.statement}`, line {read.line})" if read is not None else ""
    where = (f", set per instance at line {store['line']} (`{store['code']}`)"
             if store and store.get("code") else "")  # fmt: skip
    return Fix(
        f"`{leaf}` of each of the {owner} ({pattern}) is a Python value the compiled code "
        f"reads{said}{where}: Dynamo guards every instance's value, so each combination is a "
        f"graph of its own, up to {2**count if count <= 16 else f'2^{count}'}, past the "
        "recompile limit "
        f"({explanation.outlook.recompile_limit}). Make the switch a tensor: a 0-d buffer "
        f"(`self.register_buffer('gate', torch.ones(()), persistent=False)`) multiplied into "
        f"what `{leaf}` turns on, instead of branching on it, set with "
        f"`.gate.fill_(1.0 if on else 0.0)`: one graph serves every combination (the branch's "
        "ops run, times zero, when it is off). A higher recompile limit only compiles more "
        "of the combinations."
    )


def _hooks_of(row: Varying) -> str | None:
    """The module whose hooks the row's length counts (``self.layer1``), else None."""
    of = row.expr.length_of if row.expr is not None else None
    if of is None:
        return None
    return next((of[: -len(name)] for name in _HOOK_DICTS if of.endswith(name)), None)


_LEARNING_RATE = lazy_compile(r"param_groups\[\d+\]\[['\"](?:lr|learning_rate)['\"]\]$")
LR_TENSOR_FIX = (
    "{source} is the learning rate as a Python float, which the LR scheduler (or the loop) "
    "writes anew at every step, and the compiled optimizer step guards on its value. Create "
    "the optimizer with a tensor learning rate, `lr=torch.tensor(LR)` where it is made "
    "(`lr=LR` now): the scheduler then updates it in place and the step compiles once, "
    "whatever the value "
    "(torch's recipe for a compiled optimizer with an LR scheduler)."
)


def learning_rate_sources(explanation: FrameExplanation) -> list[str]:
    """The varying sources that are an optimizer's float learning rate."""
    return [row.source for row in explanation.outlook.varying
            if _LEARNING_RATE.search(row.source)]  # fmt: skip


def list_arguments(explanation: FrameExplanation) -> list[Varying]:
    """The varying rows that are the length of a Python list the compiled frame takes as an
    argument (``len(crops)``): Dynamo guards a list's length, and a length never becomes
    dynamic, so each count is its own variant."""
    return [row for row in explanation.outlook.varying
            if row.expr is not None and row.expr.length_of is not None
            and row.expr.length_of.isidentifier() and not row.dynamic
            and row.expr.length_of not in ("self", "args", "kwargs")]  # fmt: skip


def _list_argument_fix(
    row: Varying, change: SourceChange | None, explanation: FrameExplanation
) -> Fix | None:
    """A list of tensors passed in, stacked or concatenated by the compiled code: stack it in
    the caller and pass one tensor, whose dim can be dynamic (tests/programs/real/blind/
    list_of_tensors.py: 6 graphs -> 2)."""
    if row.expr is None or row.expr.length_of is None or row not in list_arguments(explanation):
        return None
    name = row.expr.length_of
    line = change.installed_at if change else None
    code = (line.code or "") if line is not None else ""
    if any(other.kind == "value" and other.source.startswith(f"{name}[")
           for other in explanation.outlook.varying):  # fmt: skip
        return _number_list_fix(row, name, change)
    joined = re.search(rf"torch\.(stack|cat)\(\s*{re.escape(name)}\b", code)
    how = (
        f"{'stack' if joined[1] == 'stack' else 'concatenate'} it in the caller "
        f"(`x = torch.{joined[1]}({name}, ...)`), mark its count dim "
        "(`torch._dynamo.maybe_mark_dynamic(x, 0)`) and pass x"
        if joined
        else "pass one tensor instead (stacked or padded in the caller), with its count dim "
        "marked (`torch._dynamo.maybe_mark_dynamic(x, 0)`)"
    )
    return Fix(
        f"{name} is a Python list the compiled code takes{_read_at(change)}: Dynamo guards "
        f"its length ({_values(row)} so far) and never makes a length dynamic, so each count "
        f"compiles its own variant, until the recompile limit: {how}. One variant then serves "
        "every count (sizes 0 and 1 still get their own)."
    )


def _number_list_fix(row: Varying, name: str, change: SourceChange | None) -> Fix:
    """A list of numbers (segment lengths of a packed batch) that the compiled code loops
    over, each number a size: stacking it does not help while the loop stays; what the loop
    builds from it, made once in the caller, does (tests/programs/real/blind/packed_lm.py:
    7 graphs -> 1)."""
    line = change.installed_at if change else None
    attention = "attention" in (line.code if line is not None and line.code else "")
    return Fix(
        f"{name} is a Python list of numbers the compiled code takes and loops over"
        f"{_read_at(change)}: Dynamo unrolls the loop once per element, guards the list's "
        f"length ({_values(row)} so far; a length never becomes dynamic) and its elements "
        "where they are sizes, so each count compiles its own variant, until the recompile "
        "limit. Stacking it into a tensor does not help while the loop stays. Build, in the "
        f"caller, the tensors the loop makes from it (per-item ids and positions: "
        f"`torch.repeat_interleave(torch.arange(len({name})), torch.tensor({name}))`), pass "
        "those, and replace the per-item loop with one op over them"
        + (
            " (one attention with a block-diagonal mask, or flex_attention with a document mask)"
            if attention
            else " (a mask, an index, a segment reduction such as index_add_)"
        )
        + ": one variant then serves every list."
    )


def _learning_rate_fix(row: Varying) -> Fix | None:
    """A float learning rate guarded by a compiled optimizer step: the tensor lr fix."""
    if not _LEARNING_RATE.search(row.source):
        return None
    return Fix(LR_TENSOR_FIX.format(source=row.source))


def _beyond_limit_fix(
    rows: list[Varying], outlook: Outlook, change: SourceChange | None = None
) -> Fix:
    """Values that recur, more than the recompile limit holds variants: pad them to fewer (a
    size), keep the choice out of the compiled code (a string or a number that picks what
    runs), or raise the limit to cover them (tried at twice the limit)."""
    names = " and ".join(r.source for r in rows)
    limit = outlook.recompile_limit
    said = (f"{names} {'takes' if len(rows) == 1 else 'take'} more values than the recompile "
            f"limit ({limit}) holds variants ({_values(rows[0])} so far): the values past it "
            "run eagerly. ")  # fmt: skip
    raise_it = "raise torch._dynamo.config.recompile_limit above the number of values"
    if any(row.kind == "size" for row in rows):
        how = (f"Pad them to at most {limit} values (buckets), make the size dynamic "
               f"(torch._dynamo.mark_dynamic, or dynamic=None), or {raise_it}.")  # fmt: skip
    else:
        line = change.installed_at if change is not None else None
        picks = (f" (`{line.statement}`, line {line.line})" if line is not None
                 and line.statement and is_user_file(line.file or "") else "")  # fmt: skip
        how = (f"Each value picks what the compiled code runs{picks}: keep that choice out of "
               "it. Compile the part every value shares on its own (torch.compile on that "
               "submodule, not the whole model) and run the chosen part outside, or compile "
               f"each choice on its own; or {raise_it} (each then compiles once).")  # fmt: skip
    return Fix(said + how, _limit_trial(2 * limit))


def _loop_count_fix(row: Varying, change: SourceChange | None, outlook: Outlook) -> Fix | None:
    """An int that is the count of a Python loop (``for i in range(depth)``, an early exit):
    Dynamo unrolls the loop, so each count is its own graph, and no mark makes it dynamic.
    Compiling the loop's body (each block) runs the loop in Python over compiled code."""
    line = change.installed_at if change else None
    if (line is None or not line.code or line.line is None or not row.source.isidentifier()
            or (line.file and library_path(line.file) is not None)):  # fmt: skip
        return None
    count = rf"\s*for\s+\w+\s+in\s+range\((?:[^()]*,\s*)?{re.escape(row.source)}\s*\)"
    if re.match(count, line.code) is None:
        return None
    blocks = next((found.group(1) for text in following_code(line, limit=3)
                   if (found := re.search(r"\bself\.(\w+)\[\w+\]\(", text))), None)  # fmt: skip
    how = (f"`for block in model.{blocks}: block.compile()`" if blocks
           else "each block or function the loop calls, on its own")  # fmt: skip
    limit = outlook.recompile_limit
    return Fix(
        f"{row.source} is the count of the loop{_at(line)}: Dynamo "
        "unrolls a Python loop, "
        f"so each count is its own graph ({_values(row)} so far), and the values past the "
        f"recompile limit ({limit}) run eagerly; a mark does not make a loop count dynamic. "
        f"Leave the function around the loop uncompiled and compile what it runs instead, "
        f"{how}: the loop then runs in Python over compiled code that every count shares. "
        "Or raise torch._dynamo.config.recompile_limit above the number of counts.",
        _limit_trial(2 * limit),
    )


def _length_fix(row: Varying, change: SourceChange | None) -> Fix:
    """A Python list or dict whose length changes at every call: the code grows it (appends
    a logged value each step), and Dynamo guards its length."""
    assert row.expr is not None and row.expr.length_of is not None
    where = _read_at(change)
    return Fix(
        f"{row.expr.length_of} is a Python list or dict the compiled code reads{where} and "
        f"that grows at every call ({row.source} {_values(row)} so far): Dynamo guards its "
        "length, so each call compiles a new variant until the recompile limit, then runs "
        "eagerly. Keep that Python state out of the compiled function: return the values "
        "(detached tensors) and append them outside the compiled call."
    )


def _read_at(change: SourceChange | None) -> str:
    """`` at FILE:LINE (`code`)`` of the user's line that read the value (its guard's); ''
    when that line is a library's (a fix never sends the user into torch's source)."""
    line = change.installed_at if change else None
    if line is None or (line.file and library_path(line.file) is not None):
        return ""
    return _at(line)


def _stored_at(store: dict[str, Any] | None) -> str:
    """`` (set at FILE:LINE: `m.p = p`)``: the user's line that stores the value."""
    if not store:
        return ""
    code = f": `{store['code']}`" if store.get("code") else ""
    return f", set at {store['file']}:{store.get('line')}{code}"


def _counter_fix(
    row: Varying, change: SourceChange | None, store: dict[str, Any] | None = None
) -> Fix:
    where = _read_at(change) + _stored_at(store)
    line = change.installed_at if change is not None else None
    code = line.statement if line is not None else ""
    # As a size (a slice bound, range()), the int must stay a Python int: no tensor there.
    sized = re.search(rf"[\[:,]\s*-?\s*{re.escape(row.source)}\s*[\]:]|range\([^)]*"
                      rf"{re.escape(row.source)}", code)  # fmt: skip
    tensor = "" if sized else (", or keep it in a tensor (register_buffer) updated in place")
    return Fix(
        f"{row.source} is an int attribute of an nn.Module that takes a new value as the "
        f"program runs (read{where}). Set torch._dynamo.config.allow_unspec_int_on_nn_module "
        "= True so Dynamo treats it as a dynamic int (one more variant instead of one per "
        f"value){tensor}.",
        FixApplication(
            f"{DYNAMO_CONFIG}.allow_unspec_int_on_nn_module = True",
            config=((f"{DYNAMO_CONFIG}.allow_unspec_int_on_nn_module", True),),
        ),
    )


def _constant_fix(
    row: Varying, change: SourceChange | None, store: dict[str, Any] | None = None
) -> Fix:
    read = _read_at(change)
    if store:  # the user's own line changes it while the program runs
        return Fix(
            f"{row.source} is a Python value baked into each variant{_stored_at(store)} with "
            f"a new value each time ({_values(row)} so far): each value compiles a variant "
            "until the recompile limit, then the frame runs eagerly. Give it a few values "
            "only (round the schedule: the values then recur, and each is compiled once), or "
            "keep it in a tensor the compiled code reads (a buffer updated in place with "
            ".fill_()), so one variant serves every value; a torch function that takes a "
            "Python number (F.dropout's p) then needs your own tensor version of it."
        )
    line = change.installed_at if change is not None else None
    if (
        all(_INT.fullmatch(value) for value in row.values)
        and row.expr is not None
        and row.expr.root not in ("self", "kwargs")
        and line is not None
        and _used_as_size(row.source, line.statement)
    ):
        # Not an argument (an int argument goes dynamic after one recompile): a global, or
        # what the code reaches through one, baked in at every value.
        return Fix(
            f"{row.source} is an int the compiled code reads from a global"
            f"{f' (read{read})' if read else ''}, and Dynamo bakes such an int into each "
            f"variant at every value ({_values(row)} so far), where an int passed in as an "
            "argument becomes dynamic after one recompile. Pass it in as an argument of the "
            "compiled function: one more variant, then it serves every value. (A tensor "
            "does not serve where the int is a size: topk's k, arange's end, a view.)"
        )
    keyword = _number_keyword(row, change)
    number = (
        f" Where it feeds an argument that takes a Python number (`{keyword}=` here), compute "
        "that number outside the compiled function, as a float, and pass it in (or read the "
        "float instead): Dynamo makes a float dynamic after one recompile, where this int was "
        "guarded at every value."
        if keyword
        else ""
    )
    return Fix(
        f"{row.source} is a Python value baked into each variant"
        f"{f' (read{read})' if read else ''}: {_values(row)} so far. Pass it as a tensor, or "
        f"keep it out of the compiled function, so one variant serves every value.{number}"
    )


_SIZE_CALL = (
    r"\b(?:topk|kthvalue|arange|range|view|reshape|repeat|expand|zeros|ones|empty"
    r"|full|randn|rand|randint|narrow|split|chunk|unfold|tile)\("
)


def _used_as_size(source: str, code: str) -> bool:
    """The int is a size where it is read: an argument of a call that takes sizes (topk's k,
    arange's end, a view), or a slice bound. A tensor cannot stand there."""
    name = re.escape(source).replace("'", "['\"]")
    sized_call = re.search(rf"{_SIZE_CALL}[^()]*(?:\([^()]*\)[^()]*)*{name}", code)
    sliced = re.search(rf"\[[^\]]*(?::\s*{name}|{name}\s*:)[^\]]*\]", code)
    return sized_call is not None or sliced is not None


def _number_keyword(row: Varying, change: SourceChange | None) -> str | None:
    """``negative_slope`` for an int ``step`` read at ``F.leaky_relu(t, negative_slope=0.2 *
    (1 - step / STEPS))``: a keyword argument made of it, which may need a plain number."""
    line = change.installed_at if change else None
    if (line is None or not line.code or not row.source.isidentifier()
            or not all(_INT.fullmatch(value) for value in row.values)):  # fmt: skip
        return None
    _, paren, arguments = line.code.partition("(")
    found = re.search(rf"\b(\w+)\s*=(?!=)[^=]*?\b{re.escape(row.source)}\b", arguments)
    return found.group(1) if paren and found else None


def _unbounded_fix(
    row: Varying,
    change: SourceChange | None,
    call: dict[str, Any] | None = None,
    same: list[Varying] | None = None,
    store: dict[str, Any] | None = None,
) -> Fix | None:
    """``same``: the sizes that took the same values, which one dynamic=False fix names;
    ``store``: the user's line that sets the value (a run's probes saw it)."""
    is_int = all(_INT.fullmatch(value) for value in row.values)
    if row.kind == "size":
        return _static_by_setting(row, call, same) or _specialized_size_fix(row, change)
    if row.kind == "value" and row.expr is not None and row.expr.length_of is not None:
        return _length_fix(row, change)
    if row.kind == "value" and row.source.startswith("self.") and is_int:
        return _counter_fix(row, change, store)
    if row.kind == "value":
        return _constant_fix(row, change, store)
    if row.kind == "object_identity" and row.source.startswith(CARRIED):
        return Fix(
            f"{row.source} is what the graph break left on the stack (the call the break is "
            "inside, a bound method such as list.append, is a new object every call): the "
            "code after the break compiles again each time. Removing the break removes this "
            "too: see its finding."
        )
    if row.kind == "object_identity":
        return Fix(
            f"{row.source} is a new object at every call (an object built inside the loop): "
            "create it once, outside the loop, and reuse it."
        )
    return None


def _unfreezing_fix(rows: list[Varying], variants: int) -> str:
    owners = sorted({row.source.rpartition(".")[0] or row.source for row in rows})
    shown = ", ".join(owners[:3]) + (f" and {len(owners) - 3} more" if len(owners) > 3 else "")
    return (
        f"The parameters of {shown} went from requires_grad=False to True during the run (a "
        "gradual unfreezing): requires_grad is guarded, so each stage compiles its own forward "
        f"(and backward): {variants} variants, one per stage, each compiled once. To compile "
        "once, leave requires_grad=True on every parameter and freeze by dropping the frozen "
        "ones' gradients after backward (`p.grad = None` for each frozen p, in a set you shrink "
        "where you now set requires_grad to True): optimizers skip a parameter whose grad is "
        "None, as they skip a frozen one, so the updates are the same. The backward then also "
        "computes the frozen gradients; anything that reads every gradient before you drop "
        "them (clip_grad_norm_ over model.parameters(), gradient logging) must run after."
    )


def _flags_fix(flags: list[Varying], variants: int, dynamic: int) -> str:
    """Pre-warm each state. When values that became dynamic made more variants than the flags
    have states, say so: "6 variants, one per state" was wrong for 2 flags (4 states)."""
    names = ", ".join(f"{row.source} = {' / '.join(row.values)}" for row in flags)
    states = []
    if any(".training" in row.source for row in flags):
        states.append("model.train() / model.eval()")
    if any(row.kind == "grad_mode" for row in flags):
        states.append("grad on / torch.no_grad()")
    how = f" ({', '.join(states)})" if states else ""
    most = flag_states(flags)
    typed = [row for row in flags if row.kind == "type" and row.source.isidentifier()
             and "Tensor" in row.values]  # fmt: skip
    if typed and len(typed) == len(flags) and not dynamic:
        # An argument that arrives as a tensor and as a container (two loaders, two callers).
        row = typed[0]
        others = [value for value in row.values if value != "Tensor"]
        return (
            f"{row.source} arrives as a Tensor and as a {_and(others)}: Dynamo guards an "
            f"argument's type, so each compiles its own variant ({variants} here, each reused, "
            "cheap while the types stay few; a container's keys are guarded too, so each new "
            "layout adds one). To compile once, give the compiled call one type: unpack the "
            f"{others[0]} (or wrap the tensor in one) before the call, outside the compiled code."
        )
    if dynamic and variants > most:
        return (
            f"{names}: at most {most} states by design{how}; the other variants came from "
            f"{counted(dynamic, 'value')} that became dynamic after one static compile. Pre-warm them: "
            "call the compiled code once in each state, and twice with different values of "
            "what became dynamic, before timing or serving."
        )
    optional = [row.source for row in flags if row.kind == "none" and row.source.isidentifier()]
    one = (
        f" For one graph, pass {_and(optional)} as a tensor every time (a mask of all False "
        "where there is nothing to mask), if the code gives that the same meaning as None."
        if optional and len(optional) == len(flags)
        else ""
    )
    return (
        f"{names}: {variants} variants by design, one per state{how}. Pre-warm them: call the "
        f"compiled code once in each state before timing or serving.{one}"
    )


_DTYPE_NAMES = {"Float": "float32", "Half": "float16", "Double": "float64",
                "BFloat16": "bfloat16", "Long": "int64", "Int": "int32", "Bool": "bool"}  # fmt: skip


def _dtype_name(value: str) -> str:
    """``float32`` for ``Float`` or ``torch.float32``."""
    return _DTYPE_NAMES.get(value, value.removeprefix("torch."))


def _dtype_fix(rows: list[Varying]) -> str:
    """An input that arrives in several dtypes: one dtype where it is made, else pre-warm. A
    model whose own parameters changed dtype was converted (``model.to(torch.bfloat16)``):
    autocast instead, which keeps the weights."""
    names = ", ".join(
        f"{row.source} as {' / '.join(_dtype_name(v) for v in row.values)}" for row in rows
    )
    converted = [row for row in rows if row.source.startswith("self.")]
    if converted:
        dtypes = " / ".join(_dtype_name(v) for v in converted[0].values)
        return (
            f"{names}: the model itself was converted ({dtypes}: `model.to(dtype)` or "
            "`.half()`), so each dtype compiles its own variant (by design; pre-warm each). "
            "A model converted to a lower precision keeps its rounded weights when converted "
            "back (training then goes on from them): to evaluate in lower precision, leave the "
            "model in float32 "
            "and run the evaluation under `torch.autocast(device_type, dtype=...)` instead (the "
            "weights stay as they are; matmuls and convolutions run in the lower precision)."
        )
    first = rows[0]
    target = _dtype_name(first.values[0])
    return (
        f"{names}: each dtype compiles its own variant, and the compiled code computes in the "
        "dtype it is given. Give it one dtype where it is made or loaded (the data pipeline: "
        f"`{first.source}.to(torch.{target})` before the call, or a dtype the loader always "
        "returns): one variant serves every batch. Otherwise pre-warm each dtype before "
        "timing or serving."
    )


_PLAIN_NAME = lazy_compile(r"[A-Za-z_]\w*")
_FLOAT = lazy_compile(r"-?\d+\.\d*(?:e[-+]?\d+)?")
_CHANNEL_STRIDE = lazy_compile(r"^(?P<tensor>.+)\.stride\(\)\[1\]$")


def _layout_fix(rows: list[Varying], strides: list[Varying]) -> str:
    """``rows``: the strides that stayed static (named); ``strides``: every stride that changed,
    the channel dim's too (automatic dynamic makes it dynamic: 1 → 4096, while the others,
    multiples of it, stay static), which tells a channels_last layout."""
    names = ", ".join(f"{row.source}: {' → '.join(row.values)}" for row in rows)
    one = len({row.source.partition(".stride()")[0] for row in rows}) == 1
    channels_last = next(
        (match["tensor"] for row in strides
         if (match := _CHANNEL_STRIDE.match(row.source)) and "1" in row.values),
        None,
    )  # fmt: skip
    convert = (
        f"`{channels_last} = {channels_last}.contiguous(memory_format=torch.channels_last)` "
        "(one of them is channels_last: stride 1 on the channel dim) or `.contiguous()`, "
        "whichever the model wants"
        if channels_last
        else "`.contiguous()`"
    )
    return (
        f"{names} changed at the same sizes: the tensor{'' if one else 's'} came with another "
        "memory layout (a permuted, transposed or sliced view, or made by another compiled "
        "graph), and each layout compiles its own variant; marking the sizes dynamic does not "
        f"help. Give {'it' if one else 'them'} one layout where {'it is' if one else 'they are'} "
        f"made or stored (the data pipeline), {convert}; or pre-warm both layouts."
    )


def recompile_fixes(explanation: FrameExplanation) -> list[str]:
    """The fixes for one frame as text (:func:`recompile_candidates`)."""
    return [fix.text for fix in recompile_candidates(explanation)]


def recompile_candidates(explanation: FrameExplanation) -> list[Fix]:
    """The fixes for one frame, most specific first, each with its trial where pt2doctor can
    apply it; Dynamo's own hints last, verbatim."""
    generate = hf_generate_pattern(explanation)
    fixes = [Fix(_HF_FIXES[generate])] if generate else []
    static = explanation.hf_cache_class if explanation.hf_cache_class and "Static" in (
        explanation.hf_cache_class) else None  # fmt: skip
    if generate == "decoder" and static:
        fixes = [Fix(HF_STATIC_GENERATE.format(cache=static))]
    outlook = explanation.outlook
    branch = outlook.branch
    if branch is not None:
        fixes.append(Fix(
            f"{branch[0].upper()}{branch[1:]}: by design, one variant per side. For one graph, "
            "write the branch as `torch.cond(pred, true_fn, false_fn, (operands,))` (both "
            "sides must return the same shapes), with the size marked dynamic from the first "
            "call (`torch._dynamo.maybe_mark_dynamic`)."
        ))  # fmt: skip
    fix: Fix | None
    for row in outlook.varying:
        change = _first_change(explanation, row.source)
        if branch is not None and "<=" in row.source:
            continue  # the branch's fix above
        hooked = _hooks_of(row)
        if hooked is not None:
            if not any(fix.text.startswith(HOOKS_CHANGED) for fix in fixes):
                fixes.append(Fix(f"{HOOKS_CHANGED} ({hooked}). {HOOKS_FIX}"))
            continue
        if row.instances:
            fixes += _per_instance_fixes(row, explanation)
            continue
        learning_rate = _learning_rate_fix(row)
        if learning_rate is not None:
            fixes.append(learning_rate)
            continue
        again = _specialized_again(row, explanation)
        if again is not None:
            if again not in fixes:  # first: it is why new values keep compiling
                fixes.insert(0, again)
            continue
        if row.dynamic and row.kind == "size":
            # The inputs that took the same sizes share this one fix (and symbol).
            same = [r for r in outlook.varying if r.dynamic and r.kind == "size"
                    and r.values == row.values]  # fmt: skip
            fix = None
            if explanation.split_off and same[0] is row and not fixes:
                fix = Fix(_split_off_fix(same))
            elif not fixes and same[0] is row and _marks_save_a_recompile(explanation, same):
                fix = _dynamic_size_fix(same)
        elif row.kind in LAYOUT_KINDS and not row.dynamic and outlook.bounded is not False:
            fix = None  # the layout fix below names every stride that changed
        elif row.recurs and not row.dynamic and row.kind not in FLAG_KINDS:
            same = [r for r in outlook.varying if r.recurs and not r.dynamic
                    and r.kind == row.kind and r.values == row.values]  # fmt: skip
            # generate()'s prefill and decode recur by design: its own fix says so.
            fix = None
            if same[0] is row and not generate and outlook.bounded is False:
                # Values that recur, more of them than the recompile limit holds.
                call = explanation.compile_call
                fix = (
                    _static_by_setting(row, call, same)
                    or _list_argument_fix(row, change, explanation)
                    or _loop_count_fix(row, change, outlook)
                    or _beyond_limit_fix(same, outlook, change)
                )
            elif same[0] is row and not generate:
                fix = _list_argument_fix(row, change, explanation) or _recurring_fix(
                    same, explanation
                )
            if (same[0] is row and not generate and row.kind == "size" and change is not None
                    and change.specialized_at is not None):  # fmt: skip
                # They recur because the user's line keeps them static: that line, first.
                fix = _static_by_setting(row, explanation.compile_call, same) or (
                    _specialized_size_fix(row, change)
                )
        elif not row.dynamic and row.kind not in FLAG_KINDS and row.changes >= 2:
            user_static = _dynamic_false_at(explanation.compile_call) is not None
            same = [r for r in outlook.varying if user_static and r.kind == "size"
                    and r.values == row.values]  # fmt: skip
            if row in same and same[0] is not row:
                continue  # one fix names every size the user's dynamic=False keeps static
            fix = _unbounded_fix(row, change, explanation.compile_call, same,
                                 explanation.stores.get(row.source))  # fmt: skip
        else:
            fix = None
        if fix is not None:
            fixes.append(fix)
    layouts = [row for row in outlook.varying if row.kind in LAYOUT_KINDS and not row.dynamic]
    if layouts and outlook.bounded is not False:
        strides = [row for row in outlook.varying if row.kind in LAYOUT_KINDS]
        fixes.append(Fix(_layout_fix(layouts, strides)))
    dtypes = [row for row in outlook.varying if row.kind == "dtype" and not row.dynamic]
    if dtypes and outlook.bounded is not False and not fixes:
        fixes.append(Fix(_dtype_fix(dtypes)))
    flags = [row for row in outlook.varying if row.kind in FLAG_KINDS and not row.dynamic
             and row.kind != "dtype"]  # fmt: skip
    for pattern, rows in per_instance_flags(flags).items():
        if not fixes:
            fixes.append(_per_instance_flags_fix(pattern, rows, explanation))
    inference = [row for row in flags if row.kind == "inference"]
    if inference:
        fixes.insert(0, Fix(INFERENCE_TENSOR_FIX.format(names=_and([r.source for r in inference]))))
    if outlook.bounded and flags and not fixes:
        went_dynamic = sum(1 for row in outlook.varying if row.dynamic)
        if unfreezing_params(flags) and not went_dynamic:
            fixes.append(Fix(_unfreezing_fix(flags, len(explanation.variants))))
        else:
            fixes.append(Fix(_flags_fix(flags, len(explanation.variants), went_dynamic)))
    dynamic = [row.source for row in outlook.varying if row.dynamic]
    partial = partial_batch_fix(explanation)
    if partial:  # first: it removes the variant; the others keep or mark what changes
        fixes.insert(0, Fix(partial))
    fixes[:0] = [Fix(text) for text in _set_on_first_call(explanation)]
    if not fixes and any(state_created(row) for row in outlook.varying):
        fixes.append(Fix(OPTIMIZER_STATE_FIX))
    if outlook.bounded and not fixes and dynamic:
        floats = [row.source for row in outlook.varying if row.dynamic and row.kind == "value"
                  and _PLAIN_NAME.fullmatch(row.source) and all(_FLOAT.fullmatch(v)
                                                               for v in row.values)]  # fmt: skip
        tensor = (
            f" Or pass {' and '.join(f'`torch.tensor({name})`' for name in floats)} (a 0-d "
            "tensor is traced, not guarded): one compile from the first call."
            if floats
            else ""
        )
        fixes.append(
            Fix(
                f"Nothing to fix: {', '.join(dynamic)} became dynamic after one recompile "
                f"(automatic dynamic) and now {'serves' if len(dynamic) == 1 else 'serve'} every new "
                "value. Pre-warm with two different values to pay that recompile before serving."
                + tensor
            )
        )
    # Dynamo's hint for an int attribute says to make it dynamic: wrong for a per-instance
    # constant, whose own fix says why.
    constants = {row.source for row in outlook.varying if row.instances}
    hints = {c.hint for c in _changes(explanation) if c.hint and c.source not in constants}
    fixes += [Fix(f"Dynamo's hint: {hint}") for hint in sorted(hints)]
    return fixes
