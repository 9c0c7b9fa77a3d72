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
from pathlib import PurePosixPath
from typing import Any

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.changes import (
    FLAG_KINDS,
    LAYOUT_KINDS,
    SourceChange,
    went_zero_one,
)
from pt2doctor.analysis.recompiles.fix_model import (
    CARRIED,
    INT,
    Fix,
    FixApplication,
    and_words,
    at_line,
    changes_of,
    first_change,
    limit_trial,
    values_text,
)
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    Outlook,
    VariantRow,
    Varying,
    per_instance_flags,
    state_created,
    unfreezing_params,
)
from pt2doctor.analysis.recompiles.passed import keyword_passed, passed_name
from pt2doctor.analysis.recompiles.state_fixes import (
    GRAD_MODE_TOO,
    HOOKS_CHANGED,
    HOOKS_FIX,
    INFERENCE_TENSOR_FIX,
    OPTIMIZER_STATE_FIX,
    device_fix,
    dtype_fix,
    dtype_name,
    flags_fix,
    hooks_of,
    inference_fix,
    inference_made,
    inference_mode_alone,
    layout_fix,
    made_note,
    per_instance_flags_fix,
    unfreezing_fix,
)
from pt2doctor.analysis.recompiles.value_fixes import (
    beyond_limit_fix,
    constant_fix,
    counter_fix,
    learning_rate_fix,
    length_fix,
    list_argument_fix,
    loop_count_fix,
    specialized_again,
    tensor_value_fix,
)
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import SourceLine

SHAPES_CONFIG = "torch.fx.experimental._config"


def _cache_filled(change: SourceChange) -> bool:
    """A KV cache going from None / uninitialized to initialized."""
    return "cache" in change.source and (
        (change.source.endswith("is_initialized") and (change.old, change.new) == ("False", "True"))
        or (change.kind in ("none", "type") and change.old in ("None", "NoneType"))
    )


def _encoder_decoder(explanation: FrameExplanation) -> bool:
    """An encoder-decoder cache or encoder output among what distinguishes the variants
    (``EncoderDecoderCache.is_updated``, its cross-attention cache, ``encoder_outputs``)."""
    sources = [c.source for c in changes_of(explanation)]
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


def _dynamic_size_fix(rows: list[Varying], call_site: SourceLine | None = None) -> Fix | None:
    """One mark fix for every input dim that took the same sizes (they share one symbol: marking
    one alone changes nothing while another pins it). Only inputs the user passes: a tensor
    made inside the model cannot be marked, and ``kwargs['x']`` is the tensor passed as x=.
    When the first call had size 0 or 1, the mark alone changes nothing (0/1 specialization):
    that is said first, and the fix adds ``backed_size_oblivious``."""
    found = [_input_dim(row, call_site) for row in rows]
    if None in found:
        return None
    marks = [mark for mark in found if mark is not None]
    sources = ", ".join(row.source for row in rows)
    # One call per tensor, with every dim of it (maybe_mark_dynamic takes a list).
    dims: dict[str, list[int]] = {}
    for tensor, dim, _, _ in marks:
        dims.setdefault(tensor, []).append(int(dim))
    calls = " and ".join(
        f"torch._dynamo.maybe_mark_dynamic({tensor}, "
        f"{found[0] if len(found) == 1 else sorted(found)})"
        for tensor, found in dims.items()
    )
    keywords = list(dict.fromkeys(name for _, _, keyword, name in marks if keyword))
    passed = " and ".join(f"{k}=" for k in keywords)
    at = _passed_at(call_site, keywords)
    if keywords and at:
        what = f"the tensor{'s' if len(keywords) > 1 else ''} you pass as {passed} at {at} before the first call: {calls}"
    elif keywords:
        what = (
            f"every tensor you pass as {passed} before the first call: {calls} (for model(**batch))"
        )
    else:
        what = f"the input before the first call: {calls}"
    one_size = len({tuple(row.values) for row in rows}) == 1
    shared = (
        " They took the same sizes and share one dynamic size: mark all of them (one left static "
        "pins it)."
        if len(marks) > 1 and one_size
        else " Each became dynamic at a recompile of its own: mark all of them (one left "
        "unmarked still recompiles when it changes)."
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


def _passed_at(call_site: SourceLine | None, keywords: list[str]) -> str | None:
    """``gpt2_serve.py:12`` when the calling line passes every keyword in ``keywords``."""
    if call_site is None or not keywords or call_site.line is None:
        return None
    if any(keyword_passed(call_site, name) is None for name in keywords):
        return None
    return f"{PurePosixPath(call_site.file or '?').name}:{call_site.line}"


def _input_dim(
    row: Varying, call_site: SourceLine | None = None
) -> tuple[str, int, bool, str] | None:
    """The input dim ``row`` is, as a mark names it: (what the user writes, dim, passed by
    keyword, argument name); ``kwargs['x']`` is what the user's calling line passes as x=
    (``ids``), or ``batch['x']`` when the line does not say. None when ``row`` is not a dim of
    a tensor the user passes."""
    expr = row.expr
    if expr is None or expr.dim is None or not expr.direct:
        return None
    name = expr.argument
    if not expr.keyword:
        return (name, expr.dim, False, name)
    return (keyword_passed(call_site, name) or f"batch['{name}']", expr.dim, True, name)


def _mark_trial(row: Varying) -> FixApplication | None:
    """``maybe_mark_dynamic`` on the input dim of ``row`` (None: not an input's dim)."""
    found = _input_dim(row)
    if found is None:
        return None
    shown, dim, _, name = found
    return FixApplication(f"torch._dynamo.maybe_mark_dynamic({shown}, {dim})", marks=((name, dim),))


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
        f"size ({values_text(row)}) compiles a new variant. Drop dynamic=False (the size becomes "
        "dynamic at its first change: 2 variants instead of one per size), or pad inputs to a "
        "few fixed sizes if you want static kernels for each.",
        FixApplication("torch.compile without dynamic=False", compile=(("dynamic", None),)),
    )


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
    seen = values_text(row)
    if len(calls) > 1:  # each value with its calls, in one order
        values, times = list(calls), [str(n) for n in calls.values()]
        seen = f"{and_words(values)}: {and_words(times)} calls"
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
        change = first_change(explanation, row.source)
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
            f"branch, a tensor made from Python ints), so each new size ({values_text(row)}) "
            "compiles a new variant. Rewrite that line to keep the size a tensor dimension "
            "(slice a table built once for the longest length instead of caching one per "
            "length), or pad inputs to a few fixed sizes; marking the dim dynamic does not "
            "help there (maybe_mark_dynamic changes nothing, mark_dynamic raises "
            "ConstraintViolationError)." + _specializing_rewrite(site.code or "")
        )
    if installed is not None and installed.file and library_path(installed.file) is not None:
        return Fix(
            f"{row.source} stays static: each new size ({values_text(row)}) compiles a new "
            f"variant. The guard was installed inside library code "
            f"({library_path(installed.file)}:{installed.line}), not a line to edit, and the "
            "log names no line of yours that needs the concrete size. Pad inputs to a few "
            "fixed sizes, or look in your code for the size used as a dict key, a Python int "
            "or in a shape-dependent branch.",
            _mark_trial(row),  # whether dynamic shapes were only off for it: a re-run tells
        )
    where = at_line(installed)
    if not where:  # no user line: Python code, dynamic=False or a static mark, the log can't say
        return Fix(
            f"{row.source} stays static: each new size ({values_text(row)}) compiles a new variant "
            "and it never became dynamic. Either Python code needs the concrete size (a dict "
            "key, a Python int, a shape-dependent branch: keep it a tensor dimension) or "
            "dynamic shapes are off for it (dynamic=False, mark_static, "
            "automatic_dynamic_shapes=False); or pad inputs to a few fixed sizes.",
            _mark_trial(row),
        )
    return Fix(
        f"{row.source} stays static, guarded by Python code{where}: each new size "
        f"({values_text(row)}) compiles a new variant and it never became dynamic. If that line "
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
    sizes = [int(v) for v in rows[0].values if INT.fullmatch(v)]
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
    # Not "pad it": in training, padded rows enter every batch statistic (a mean loss,
    # BatchNorm, a contrastive loss's negatives) unless each one masks them out.
    return (
        f"{head} If the batches come from a DataLoader, pass drop_last=True: one variant then "
        "serves every batch (the last samples of each epoch are left out, in another order "
        "each epoch when it shuffles). Padding the last batch instead changes the training "
        "unless the loss and every batch statistic leave the padded rows out."
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
        f"its own value ({values_text(row)}), and each variant is reused on every call of its "
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
            limit_trial(enough),
        ),
        Fix(
            f"If each instance serves more states than the log shows before the limit "
            f"(training and eval, grad on and off), raise it to {more} ({instances} × "
            f"{states * 2}).",
            limit_trial(more),
        ),
    ]


def _unbounded_fix(
    row: Varying,
    change: SourceChange | None,
    call: dict[str, Any] | None = None,
    same: list[Varying] | None = None,
    store: dict[str, Any] | None = None,
) -> Fix | None:
    """``same``: the sizes that took the same values, which one dynamic=False fix names;
    ``store``: the user's line that sets the value (a run's probes saw it)."""
    is_int = all(INT.fullmatch(value) for value in row.values)
    if row.kind == "size":
        return _static_by_setting(row, call, same) or _specialized_size_fix(row, change)
    if row.kind == "value" and row.expr is not None and row.expr.length_of is not None:
        return length_fix(row, change)
    if row.kind == "value" and row.source.startswith("self.") and is_int:
        return counter_fix(row, change, store)
    if row.kind == "value":
        return constant_fix(row, change, store)
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


_PLAIN_NAME = lazy_compile(r"[A-Za-z_]\w*")
_FLOAT = lazy_compile(r"-?\d+\.\d*(?:e[-+]?\d+)?")
_INT = lazy_compile(r"-?\d+")


def handed_over(explanation: FrameExplanation, row: Varying) -> bool:
    """``row`` is a value the code before a graph break hands to the code after it (what the
    break left on the stack, an argument of the resume function that is no parameter of the
    function it continues, or a dim of one): no line of the user's can mark or change it where it enters that frame. A
    parameter (``decay``) is the caller's value: it recompiles with the break removed too."""
    parameters = explanation.resumed_parameters
    if explanation.resume_line is None or row.kind == "object_identity":
        return False  # a bound method left on the stack has a fix of its own
    if CARRIED in row.source:
        return True
    return (
        parameters is not None
        and row.expr is not None
        and row.expr.direct
        and not row.expr.keyword
        and row.expr.argument not in parameters
    )


def _handed_over_fix(explanation: FrameExplanation, rows: list[Varying]) -> Fix:
    sources = ", ".join(row.source for row in rows[:3])
    if len(rows) > 3:
        sources += f" and {len(rows) - 3} more"
    are = "are values" if len(rows) > 1 else "is a value"
    them = "them" if len(rows) > 1 else "it"
    return Fix(
        f"{sources} {are} that the code before the graph break at line "
        f"{explanation.resume_line} hands to the code after it: Dynamo compiles that code as a "
        f"frame of its own, with {them} as its inputs, so no mark in your code reaches {them}, "
        "and each new value compiles it again. Removing the break removes this too: see its "
        "finding."
    )


def _zero_one_fix(row: Varying, explanation: FrameExplanation) -> Fix:
    """A dynamic size that got 0 or 1: its own variant by design (0/1 specialization)."""
    found = _input_dim(row, explanation.call_site)
    expr = row.expr
    if found is None and expr is not None and expr.dim is not None and expr.argument == "args":
        # a module called positionally (``compiled(x)``): args[i] is what the line passes
        passed = passed_name(explanation.call_site, expr)
        found = None if passed is None else (passed, expr.dim, False, passed)
    unbacked = (f"torch._dynamo.decorators.mark_unbacked({found[0]}, {found[1]})" if found
                else "torch._dynamo.decorators.mark_unbacked(tensor, dim)")  # fmt: skip
    return Fix(
        f"Nothing to fix: {row.source} was dynamic, then a call came with size 0 or 1, and "
        "Dynamo compiles sizes 0 and 1 on their own (0/1 specialization), so that call has a "
        "variant of its own: one more, bounded. Warm it up with one call of that size before "
        f"serving. `{unbacked}` before each call, on every tensor that shares the size, "
        "serves it with the dynamic variant instead, but only in code that never needs that "
        "size as a number: in a model that does (a Hugging Face encoder did) it compiles more "
        "variants, not fewer, so measure before keeping it."
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
    handed = [row for row in outlook.varying if handed_over(explanation, row)]
    if handed:
        fixes.append(_handed_over_fix(explanation, handed))
    for row in outlook.varying:
        change = first_change(explanation, row.source)
        if branch is not None and "<=" in row.source:
            continue  # the branch's fix above
        if row in handed:
            continue
        if went_zero_one(row.kind, row.values):
            fixes.append(_zero_one_fix(row, explanation))
            continue
        hooked = hooks_of(row)
        if hooked is not None:
            if not any(fix.text.startswith(HOOKS_CHANGED) for fix in fixes):
                fixes.append(Fix(f"{HOOKS_CHANGED} ({hooked}). {HOOKS_FIX}"))
            continue
        if row.instances:
            fixes += _per_instance_fixes(row, explanation)
            continue
        learning_rate = learning_rate_fix(row) or tensor_value_fix(row, change)
        if learning_rate is not None:
            fixes.append(learning_rate)
            continue
        again = specialized_again(row, explanation)
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
            elif not fixes and same[0] is row:
                # Every dim that became dynamic, at one recompile or at several: marking only
                # the first still recompiles for the next (a tagger's batch, then its length).
                every = [r for r in outlook.varying if r.dynamic and r.kind == "size"]
                for rows in (every, same):
                    if _marks_save_a_recompile(explanation, rows):
                        fix = _dynamic_size_fix(rows, explanation.call_site)
                        if fix is not None:
                            break
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
                    or list_argument_fix(row, change, explanation)
                    or loop_count_fix(row, change, outlook)
                    or beyond_limit_fix(same, outlook, change)
                )
            elif same[0] is row and not generate:
                fix = list_argument_fix(row, change, explanation) or _recurring_fix(
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
            fix = (
                (loop_count_fix(row, change, outlook) if row.kind == "value" else None)
                or _unbounded_fix(row, change, explanation.compile_call, same,
                                  explanation.stores.get(row.source))
            )  # fmt: skip
        else:
            fix = None
        if fix is not None:
            fixes.append(fix)
    layouts = [row for row in outlook.varying if row.kind in LAYOUT_KINDS and not row.dynamic]
    if layouts and outlook.bounded is not False:
        strides = [row for row in outlook.varying if row.kind in LAYOUT_KINDS]
        fixes.append(Fix(layout_fix(layouts, strides, made_note(explanation, layouts[:1]))))
    dtypes = [row for row in outlook.varying if row.kind == "dtype" and not row.dynamic]
    # An input's dtype needs its own fix beside the others (a layout, the inference mode):
    # following them alone still recompiles on it (third outside review, p1b).
    inputs = [row for row in dtypes if not row.source.startswith("self.")]
    if dtypes and outlook.bounded is not False and (not fixes or inputs == dtypes):
        fixes.append(Fix(dtype_fix(dtypes, made_note(explanation, dtypes, dtype_name))))
    devices = [row for row in outlook.varying if row.kind == "device" and not row.dynamic]
    if (
        devices
        and outlook.bounded is not False
        and (not fixes or not any(row.source.startswith("self.") for row in devices))
    ):
        fixes.append(Fix(device_fix(devices, made_note(explanation, devices, str))))
    flags = [row for row in outlook.varying if row.kind in FLAG_KINDS and not row.dynamic
             and row.kind not in ("dtype", "device")]  # fmt: skip
    for pattern, rows in per_instance_flags(flags).items():
        if not fixes:
            fixes.append(per_instance_flags_fix(pattern, rows, explanation))
    inference = [row for row in flags if row.kind == "inference"]
    alone = inference_mode_alone(explanation)
    if inference or alone:
        text = (
            inference_fix(explanation, inference)
            if alone
            else INFERENCE_TENSOR_FIX.format(
                names=and_words([r.source for r in inference]),
                made=inference_made(explanation, inference),
            )
        )
        if any(row.kind == "grad_mode" for row in flags):
            # Training and serving through one function: alike inputs still leave the grad mode.
            text += GRAD_MODE_TOO
        fixes.insert(0, Fix(text))
    if outlook.bounded and flags and not fixes:
        went_dynamic = sum(1 for row in outlook.varying if row.dynamic)
        if unfreezing_params(flags) and not went_dynamic:
            fixes.append(Fix(unfreezing_fix(flags, len(explanation.variants))))
        else:
            fixes.append(Fix(flags_fix(flags, len(explanation.variants), went_dynamic)))
    dynamic = [row.source for row in outlook.varying if row.dynamic]
    partial = partial_batch_fix(explanation)
    if partial:  # first: it removes the variant; the others keep or mark what changes
        fixes.insert(0, Fix(partial))
    fixes[:0] = [Fix(text) for text in _set_on_first_call(explanation)]
    if not fixes and any(state_created(row) for row in outlook.varying):
        fixes.append(Fix(OPTIMIZER_STATE_FIX))
    if outlook.bounded and not fixes and dynamic:
        floats = _dynamic_names(outlook, _FLOAT)
        tensor = (
            f" Or pass {' and '.join(f'`torch.tensor({name})`' for name in floats)} (a 0-d "
            "tensor is traced, not guarded): one compile from the first call."
            if floats
            else _int_as_tensor(explanation, outlook)
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
    hints = {c.hint for c in changes_of(explanation) if c.hint and c.source not in constants}
    # A hint whose setting a fix above already gives, with what it does here: the hint's
    # other offers are torch's generic ones (an int "converted into a tensor" that is a slice
    # bound or a size makes the frame read it back with .item()).
    said = " ".join(fix.text for fix in fixes)
    hints = {hint for hint in hints
             if not any(name in said for name in _CONFIG_NAME.findall(hint))}  # fmt: skip
    fixes += [Fix(f"Dynamo's hint: {hint}") for hint in sorted(hints)]
    return fixes


def _dynamic_names(outlook: Outlook, number: re.Pattern[str]) -> list[str]:
    """The plain names (a frame's own arguments, not attributes) of the values that became
    dynamic, every value of which ``number`` matches (a float, an int)."""
    return [row.source for row in outlook.varying if row.dynamic and row.kind == "value"
            and _PLAIN_NAME.fullmatch(row.source)
            and all(number.fullmatch(v) for v in row.values)]  # fmt: skip


def _int_as_tensor(explanation: FrameExplanation, outlook: Outlook) -> str:
    """The 0-d tensor offer for an int argument that became dynamic (a sampler's timestep),
    with what to verify first: an int that is a size, an index, a slice bound or a range
    cannot be a tensor (the frame would read it back with ``.item()``), and the trace does
    not say which it is, so the line that guarded it is quoted to check."""
    ints = _dynamic_names(outlook, _INT)
    if len(ints) != 1:
        return ""
    (name,) = ints
    used = next((c.installed_at for c in changes_of(explanation)
                 if c.source == name and c.installed_at is not None), None)  # fmt: skip
    at = (f" (as at line {used.line}: `{used.code.strip()}`)"
          if used is not None and used.code else "")  # fmt: skip
    return (
        f" To skip that one recompile: where `{name}` only enters tensor arithmetic{at}, not a "
        f"size, an index, a slice bound or a range (there a tensor is read back with .item() "
        f"and breaks the graph), pass `torch.tensor({name})`: a 0-d tensor is traced, not "
        "guarded, so one graph serves every value from the first call."
    )


_CONFIG_NAME = lazy_compile(r"\b(?:torch\._dynamo\.config\.)?([a-z_]{12,})\s*=\s*True")
"""A setting a hint offers (``allow_unspec_int_on_nn_module = True``)."""
