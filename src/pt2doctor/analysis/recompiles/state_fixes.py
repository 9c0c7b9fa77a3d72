"""Fixes for what a frame's variants are made of besides values and sizes: flags and states
(train/eval, grad mode, per-instance switches, inference tensors), dtypes, memory layouts,
module hooks, an optimizer's state made at its first step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath

from pt2doctor.analysis.breaks.advice import RECOMPILE_ADVICE
from pt2doctor.analysis.recompiles.changes import INFERENCE
from pt2doctor.analysis.recompiles.fix_model import Fix, and_words, changes_of
from pt2doctor.analysis.recompiles.outlook import (
    FrameExplanation,
    VariantRow,
    Varying,
    flag_states,
    instances_of,
)
from pt2doctor.analysis.recompiles.passed import passed_name
from pt2doctor.analysis.source_lines import assigned_before, modes_around
from pt2doctor.analysis.text import counted
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import SourceLine

_HOOK_DICTS = ("._forward_hooks", "._forward_pre_hooks", "._backward_hooks",
               "._backward_pre_hooks")  # fmt: skip


HOOKS_CHANGED = "The module hooks changed between calls"


HOOKS_FIX = (
    "Dynamo guards here on how many hooks a module has, not on which: each set of hooks "
    "compiles a variant, and a graph keeps running the hooks it traced. Register the hooks "
    "once, before the first compiled call, and switch what they do with a flag they read (see "
    "the hook_changed_after_compile finding): the flag is guarded too, so each of its values "
    "compiles a variant once, and each variant runs the hooks as they are."
)


INFERENCE_TENSOR_FIX = (
    "{names} arrived as an inference tensor (made under `torch.inference_mode()`) and as a "
    "normal tensor (made outside it): Dynamo guards the difference, so each kind compiles its "
    "own variant, and a variant compiled for one never serves the other (a warmup input made "
    "under inference_mode does not warm up requests made outside it). Make the inputs alike: "
    "all inside `torch.inference_mode()` or all outside it (the warmup input made the way "
    "requests are).{made}"
)

INFERENCE_MODE_FIX = (
    "{calls}: Dynamo guards whether a call runs under `torch.inference_mode()`{tensors} "
    "(every tensor's dispatch keys change with it; `torch.no_grad()` alone leaves them as they "
    "are), so each compiles its own variant, and the variant one compiled never serves the "
    "other: a warmup under inference_mode does not warm up calls served outside it. Make the "
    "calls alike: {alike}."
)


def _where(site: SourceLine) -> str:
    return f"{PurePosixPath(site.file or '?').name}:{site.line}"


def _call_words(site: SourceLine | None, mode: str | None) -> str:
    """``the call at serve.py:11 (`compiled(sample)`, in warmup) ran under
    `torch.inference_mode()` (line 9)``: a variant's calling line and the mode it ran in, with
    the ``with`` (or decorator) that set it where the calling function shows one."""
    if site is None:
        return f"a call ran {'under' if mode == 'on' else 'outside'} `torch.inference_mode()`"
    said = f"`{site.statement}`, " if site.statement else ""
    words = f"the call at {_where(site)} ({said}in {site.function or '?'})"
    around = modes_around(site)
    inference = [item for item in around if "inference_mode" in (item.code or "")]
    if mode == "on":
        at = (f"`{inference[-1].code}` (line {inference[-1].line})" if inference
              else "`torch.inference_mode()`, set by a caller")  # fmt: skip
        return f"{words} ran under {at}"
    other = [item for item in around if item not in inference]
    inside = f" (under `{other[-1].code}`, line {other[-1].line})" if other else ""
    return f"{words} ran outside `torch.inference_mode()`{inside}"


def passed_and_made(
    site: SourceLine | None, row: Varying, parameters: tuple[str, ...] | None = None
) -> tuple[str, SourceLine] | None:
    """The name the calling line ``site`` passes as ``row``'s tensor (``sample`` in
    ``compiled(sample)``) and the user's line above it that made it (``sample =
    torch.randn(8, 16)``), where the line names it and the calling function assigns it."""
    if site is None or row.expr is None:
        return None
    name = passed_name(site, row.expr, parameters)
    made = assigned_before(site, name) if name else None
    return (name, made) if name and made is not None else None


def _passing_words(site: SourceLine | None, rows: list[Varying], variant: VariantRow,
                   explanation: FrameExplanation) -> str:  # fmt: skip
    """``, passing `users` (from line 622: `users, items = ...`): a normal tensor``: each
    tensor a call passed, with the user's line above it that made it where the calling line
    names it (else its parameter's name), and what it was."""
    said: list[str] = []
    for row in rows:
        kind = variant.serves.get(row.source)
        if kind is None:
            continue
        found = passed_and_made(site, row, explanation.parameters)
        if found is not None:
            text = f"`{found[0]}` (from line {found[1].line}: `{found[1].statement}`): {kind}"
        elif row.expr is not None and row.expr.argument != "args":
            text = f"{row.source}: {kind}"
        else:
            text = kind
        if text not in said:
            said.append(text)
    return f", passing {and_words(said)}" if said else ""


def made_note(
    explanation: FrameExplanation, rows: list[Varying], shown: Callable[[str], str] | None = None
) -> str:
    """`` Here `x` (float32 and float64) comes from train.py:12 (`x = ...`).``: the user's line
    that made each tensor ``rows`` guard, from each variant's calling line (``shown`` gives a
    variant's value in words; None leaves values out). '' where no calling line names the
    tensor or no assignment above it makes it."""
    made_by: dict[tuple[str, str], list[str]] = {}
    for variant in explanation.variants:
        site = explanation.call_sites.get(variant.compile_id)
        for row in rows:
            found = passed_and_made(site, row, explanation.parameters)
            if found is None:
                continue
            name, made = found
            values = made_by.setdefault((name, f"{_where(made)} (`{made.statement}`)"), [])
            value = variant.serves.get(row.source)
            if shown is not None and value and shown(value) not in values:
                values.append(shown(value))
    said = [
        f"`{name}`{f' ({and_words(values)})' if values else ''} comes from {where}"
        for (name, where), values in made_by.items()
    ]
    return f" Here {and_words(said)}." if said else ""


def inference_made(explanation: FrameExplanation, rows: list[Varying]) -> str:
    """`` Here `cached` (from eval.py:12: `cached = ...`, under `torch.inference_mode()`
    at line 11) is the inference tensor, passed at eval.py:15.``: the user's line that made
    each inference tensor a variant was called with, as its calling line shows it."""
    said: list[str] = []
    for variant in explanation.variants:
        site = explanation.call_sites.get(variant.compile_id)
        for row in rows:
            found = (
                passed_and_made(site, row, explanation.parameters)
                if variant.serves.get(row.source) == INFERENCE
                else None
            )
            if found is None or site is None:
                continue
            name, made = found
            modes = [m for m in modes_around(made) if "inference_mode" in (m.code or "")]
            under = f", under `{modes[-1].code}` at line {modes[-1].line}" if modes else ""
            text = (f"`{name}` (from {_where(made)}: `{made.statement}`{under}), passed at "
                    f"{_where(site)}")  # fmt: skip
            if text not in said:
                said.append(text)
    if not said:
        return ""
    return f" Here the inference tensor is {and_words(said)}."


def inference_mode_alone(explanation: FrameExplanation) -> bool:
    """A recompile whose inference mode changed and whose grad mode did not: a call under
    ``torch.inference_mode()`` against one under ``torch.no_grad()`` (a warmup and the
    requests), which can be made alike. With the grad mode it is training against serving,
    two modes by design."""
    return any(
        "inference_mode" in kinds and "grad_mode" not in kinds
        for kinds in ({change.kind for change in item.changes} for item in explanation.recompiles)
    )


def inference_fix(explanation: FrameExplanation, tensors: list[Varying]) -> str:
    """A frame called under ``torch.inference_mode()`` and outside it (a warmup and the
    serving loop): each variant's calling line, the mode around it, and the line that made an
    inference tensor it passed, as the run's stacks and the user's file show them."""
    seen: set[tuple[str | None, int | None]] = set()
    calls = []
    for variant in explanation.variants:
        site = explanation.call_sites.get(variant.compile_id)
        key = (site.file, site.line) if site is not None else (None, None)
        if key in seen:
            continue
        seen.add(key)
        mode = variant.serves.get("inference mode")
        calls.append(_call_words(site, mode) + _passing_words(site, tensors, variant, explanation))
    served = [v.serves.get("inference mode") for v in explanation.variants]
    outside = next((explanation.call_sites.get(v.compile_id) for v in explanation.variants
                    if v.serves.get("inference mode") == "off"), None)  # fmt: skip
    inside = next((explanation.call_sites.get(v.compile_id) for v in explanation.variants
                   if v.serves.get("inference mode") == "on"), None)  # fmt: skip
    if inside is not None and outside is not None and served[:1] == ["on"]:
        alike = (f"make the call at {_where(inside)} the way the call at {_where(outside)} "
                 f"runs (outside inference_mode, its inputs made outside it too), or run "
                 f"{_where(outside)} under `torch.inference_mode()` as well")  # fmt: skip
    elif inside is not None and outside is not None:
        alike = (f"run the call at {_where(inside)} outside inference_mode as "
                 f"{_where(outside)} is, or both under `torch.inference_mode()`, with "
                 "their inputs made the same way")  # fmt: skip
    else:
        alike = ("every call under `torch.inference_mode()` or every call outside it, with "
                 "the inputs made the same way")  # fmt: skip
    return INFERENCE_MODE_FIX.format(
        calls="; ".join(calls)[:1].upper() + "; ".join(calls)[1:],
        tensors=", and whether its inputs are inference tensors" if tensors else "",
        alike=alike,
    )


GRAD_MODE_TOO = (
    " The grad mode changed in the same recompile (a training call and a no_grad / "
    "inference_mode call): with the inputs made alike that is still a variant of its own. "
    "Compile a separate function for each mode (the training step, and the serving or "
    "evaluation call): each then compiles once and never recompiles."
)


OPTIMIZER_STATE_FIX = (
    "Nothing to fix: the optimizer makes its per-parameter state (momentum buffers, Adam's "
    "moments) at its first step, so the compiled step compiles once more after it, and that "
    "variant serves every later step. Pre-warm with one step before timing or serving."
)


def per_instance_flags_fix(pattern: str, rows: list[Varying],
                            explanation: FrameExplanation) -> Fix:  # fmt: skip
    """A flag of every instance of a module, set one instance at a time (LoRA adapters
    switched per layer): every combination is a graph. A tensor gate serves them all."""
    count = instances_of(rows)
    leaf = pattern.rpartition(".")[2]
    store = next((explanation.stores[row.source] for row in rows
                  if row.source in explanation.stores), None)  # fmt: skip
    read = next((change.installed_at for change in changes_of(explanation)
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


def hooks_of(row: Varying) -> str | None:
    """The module whose hooks the row's length counts (``self.layer1``), else None."""
    of = row.expr.length_of if row.expr is not None else None
    if of is None:
        return None
    return next((of[: -len(name)] for name in _HOOK_DICTS if of.endswith(name)), None)


def unfreezing_fix(rows: list[Varying], variants: int) -> str:
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


def flags_fix(flags: list[Varying], variants: int, dynamic: int) -> str:
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
            f"{row.source} arrives as a Tensor and as a {and_words(others)}: Dynamo guards an "
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
        f" For one graph, pass {and_words(optional)} as a tensor every time (a mask of all False "
        "where there is nothing to mask), if the code gives that the same meaning as None."
        if optional and len(optional) == len(flags)
        else ""
    )
    return (
        f"{names}: {variants} variants by design, one per state{how}. Pre-warm them: call the "
        f"compiled code once in each state before timing or serving.{one}"
    )


_DTYPE_NAMES = {"Float": "float32", "Half": "float16", "Double": "float64",
                "BFloat16": "bfloat16", "Long": "int64", "Int": "int32", "Short": "int16",
                "Char": "int8", "Byte": "uint8", "Bool": "bool", "ComplexFloat": "complex64",
                "ComplexDouble": "complex128"}  # fmt: skip


def dtype_name(value: str) -> str:
    """``float32`` for ``Float`` or ``torch.float32``."""
    return _DTYPE_NAMES.get(value, value.removeprefix("torch."))


def device_fix(rows: list[Varying], made: str = "") -> str:
    """An input that arrives on several devices: each device compiles its own variant (the
    guard is on the tensor's dispatch keys). One device where it is made, else pre-warm."""
    names = " and ".join(f"{row.source} on {' / '.join(row.values)}" for row in rows)
    return (
        f"{names}: each device compiles its own variant of the graph. "
        f"{RECOMPILE_ADVICE['device']} If one of them is not meant (a tensor made on the default "
        "device, or left on the host), move it where it is made "
        "(`torch.tensor(..., device=device)`, or `.to(device)` once before the loop); if both "
        "are meant (one model served on two devices), the variants are bounded: pre-warm each."
        + made
    )


def dtype_fix(rows: list[Varying], made: str = "") -> str:
    """An input that arrives in several dtypes: one dtype where it is made, else pre-warm. A
    model whose own parameters changed dtype was converted (``model.to(torch.bfloat16)``):
    autocast instead, which keeps the weights."""
    names = ", ".join(
        f"{row.source} as {' / '.join(dtype_name(v) for v in row.values)}" for row in rows
    )
    converted = [row for row in rows if row.source.startswith("self.")]
    if converted:
        dtypes = " / ".join(dtype_name(v) for v in converted[0].values)
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
    # One dtype for every batch: a floating one where one arrived (casting float images to
    # uint8 would truncate them), else the first seen.
    seen = [dtype_name(value) for value in first.values]
    target = next((d for d in seen if d.startswith(("float", "bfloat"))), seen[0])
    return (
        f"{names}: each dtype compiles its own variant, and the compiled code computes in the "
        "dtype it is given. Give it one dtype where it is made or loaded (the data pipeline: "
        f"`{first.source}.to(torch.{target})` before the call, or a dtype the loader always "
        "returns): one variant serves every batch. Otherwise pre-warm each dtype before "
        "timing or serving." + made
    )


_CHANNEL_STRIDE = lazy_compile(r"^(?P<tensor>.+)\.stride\(\)\[1\]$")
_STRIDE_DIM = lazy_compile(r"^(?P<tensor>.+)\.stride\(\)\[(?P<dim>\d+)\]$")


def layout_fix(rows: list[Varying], strides: list[Varying], made: str = "") -> str:
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
    # channels_last is a 4-D layout (channels_last_3d a 5-D one): the rank shows in the
    # strides that changed (NCHW <-> NHWC changes stride 3); a transposed 3-D tensor also has
    # stride 1 on dim 1, and .contiguous(memory_format=torch.channels_last) raises on it.
    rank = 1 + max((int(m["dim"]) for row in strides
                    if (m := _STRIDE_DIM.match(row.source)) and m["tensor"] == channels_last),
                   default=0)  # fmt: skip
    memory_format = {4: "channels_last", 5: "channels_last_3d"}.get(rank)
    convert = (
        f"`{channels_last} = {channels_last}.contiguous(memory_format=torch.{memory_format})` "
        "(one of them is channels_last: stride 1 on the channel dim) or `.contiguous()`, "
        "whichever the model wants"
        if channels_last and memory_format
        else "`.contiguous()`"
    )
    return (
        f"{names} changed at the same sizes: the tensor{'' if one else 's'} came with another "
        "memory layout (a permuted, transposed or sliced view, or made by another compiled "
        "graph), and each layout compiles its own variant; marking the sizes dynamic does not "
        f"help. Give {'it' if one else 'them'} one layout where {'it is' if one else 'they are'} "
        f"made or stored (the data pipeline), {convert}; or pre-warm both layouts.{made}"
    )
