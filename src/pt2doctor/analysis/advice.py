"""The advice table: for each graph-break category and recompile cause, fixes and their trade-offs.

Written in pt2doctor's own words from the PyTorch compiler's troubleshooting practice. Each entry
names what to change and what it costs, so a user can decide rather than follow blindly.
"""

from __future__ import annotations

import re

from pt2doctor.trace.types import GraphBreakEvent

BREAK_ADVICE: dict[str, str] = {
    "data_dependent_scalar": (
        "A tensor value (.item(), .tolist()) drives Python control flow, so Dynamo must leave the "
        "graph to read it. Prefer torch.where(cond, a, b) (no break, but computes both branches), "
        "or torch.cond(pred, true_fn, false_fn) (one branch, both must return the same shapes); "
        "or set torch._dynamo.config.capture_scalar_outputs = True to keep .item() in the graph "
        "as an unbacked symbol (works when the value feeds tensor ops, not Python `if`)."
    ),
    "data_dependent_shape": (
        "An op whose output shape depends on tensor values (boolean mask, nonzero, unique). "
        "Keep the shape static: torch.where(mask, x, 0) or multiply by the mask instead of "
        "indexing; or set torch._dynamo.config.capture_dynamic_output_shape_ops = True to trace "
        "it with an unbacked size (later ops must tolerate an unknown size)."
    ),
    "print_or_logging": (
        "A print or logging call inside the compiled region. Move it out of the compiled "
        "function, or guard it with `if not torch.compiler.is_compiling():`."
    ),
    "python_side_effect": (
        "Python state is mutated in a way Dynamo cannot replay (globals, attributes of "
        "non-module objects, generators). Return the value instead of mutating state, or move "
        "the mutation outside the compiled region."
    ),
    "unsupported_builtin_or_c_extension": (
        "A call Dynamo cannot trace (a C extension, an unsupported builtin, a skipped library "
        "function). Wrap it as a custom op (torch.library.custom_op with a fake/meta kernel) so "
        "it stays in the graph, or move it out of the hot compiled region; "
        "torch.compiler.disable on it keeps the break but makes it explicit."
    ),
    "explicit_disable": (
        "The code asks for the break (torch._dynamo.graph_break(), torch.compiler.disable). "
        "Keep it only if it is deliberate and not on the hot path; otherwise remove it or move "
        "the disabled function out of the loop that calls it."
    ),
    "io": (
        "File or network I/O inside the compiled region. Do I/O before or after the compiled "
        "call and pass tensors in."
    ),
    "other": (
        "Read Dynamo's reason and hints below; the usual fixes are to move the unsupported code "
        "out of the compiled function or to compile a smaller region around the tensor code."
    ),
}

RECOMPILE_ADVICE: dict[str, str] = {
    "size": (
        "Input sizes changed. One static compile followed by one dynamic recompile is normal "
        "(automatic dynamic shapes). More than that: pad inputs to a few buckets, or call "
        "torch._dynamo.mark_dynamic(x, dim, min=..., max=...) before the first call so the "
        "first compile is already dynamic."
    ),
    "python_constant": (
        "A Python value (int, str, bool, enum) is baked into the graph. A few bounded variants "
        "(a flag with two values) are fine and can be pre-warmed. Unbounded ones (step "
        "counters, request ids, lengths) must not reach the compiled function: pass them as "
        "tensors or keep them outside."
    ),
    "dtype": (
        "The same frame sees several dtypes. Cast inputs to one dtype before the compiled call, "
        "or pre-warm every dtype you serve."
    ),
    "stride": (
        "Input memory layout changed (transposed, channels_last, sliced views). Make inputs "
        "contiguous (or consistently channels_last) before the compiled call."
    ),
    "requires_grad": (
        "Inputs alternate between requiring grad and not. Keep requires_grad consistent per "
        "call site, or compile training and inference as separate functions."
    ),
    "grad_mode": (
        "The function is called both under torch.no_grad()/inference_mode and with grad. "
        "That is two variants by design; compile separate functions if both are hot."
    ),
    "autocast": (
        "The autocast state differs between calls. Enter autocast consistently around the "
        "compiled call, or accept one variant per autocast state."
    ),
    "device": (
        "Inputs arrive on different devices. Move inputs to one device before the compiled call."
    ),
    "object_id": (
        "A guarded object was replaced by a new one (a module, a function, a tensor attribute "
        "re-created each call). Create it once and reuse it."
    ),
    "attribute_value": (
        "An attribute read by the compiled code changed (e.g. module.training, a config field). "
        "Bounded values are fine; if it changes every call, pass it as a tensor or keep it "
        "out of the compiled region."
    ),
    "other": "Read the failed guard text; it names the value that differed from the cached variant.",
}

LIMIT_HIT_ADVICE = (
    "This frame hit Dynamo's recompile limit (torch._dynamo.config.recompile_limit, default 8) "
    "and now runs eagerly for every new variant: fix the recompile cause below rather than "
    "raising the limit."
)
SKIPPED_FRAME_ADVICE = (
    "Dynamo gave up on this whole function and runs it eagerly (in torch 2.13 a graph break "
    "inside a Python loop does this). Remove the break inside the loop, or compile the loop "
    "body as its own function."
)
LARGE_GRAPH_ADVICE = (
    "A very large graph usually comes from a Python loop that Dynamo unrolled. Vectorize the "
    "loop (batch the work, torch.vmap) or compile the loop body instead of the loop."
)
COMPILE_ERROR_ADVICE = (
    "The compiler raised an error. Find the layer that fails by compiling with "
    "backend='eager', then 'aot_eager', then 'inductor' (the first that fails is the culprit); "
    "meanwhile torch.compiler.disable the failing function."
)

# Argument types Dynamo can reorder after the graph (torch/_dynamo/variables/misc.py,
# can_reorder_logs: tensors, constants and f-strings).
_REORDERABLE_ARG_TYPES = frozenset(
    {"str", "int", "float", "bool", "NoneType", "Tensor", "Parameter", "StringFormatVariable"}
)
_ARG_TYPES = re.compile(r"argument types \[([^\]]*)\]")


def _logging_advice(event: GraphBreakEvent) -> str:
    base = BREAK_ADVICE["print_or_logging"]
    match = _ARG_TYPES.search(f"{event.explanation}\n{event.reason}")
    function = (
        "print"
        if "`print`" in event.reason or "print(" in ((event.site and event.site.code) or "")
        else "the logging method"
    )
    if match is not None:
        types = {t.strip().strip("'\"") for t in match.group(1).split(",") if t.strip()}
        if types <= _REORDERABLE_ARG_TYPES:
            return (
                f"{base} Its arguments ({', '.join(sorted(types))}) are tensors/constants, so "
                f"adding {function} to torch._dynamo.config.reorderable_logging_functions keeps "
                "one graph and prints after it runs (values as of the end of the graph)."
            )
        return (
            f"{base} reorderable_logging_functions does not apply here: the arguments include "
            f"{', '.join(sorted(types - _REORDERABLE_ARG_TYPES))}, which Dynamo cannot defer. "
            f"Adding {function} to torch._dynamo.config.ignore_logging_functions drops the call "
            "from compiled code (the message is lost while compiled)."
        )
    return (
        f"{base} For logger methods, torch._dynamo.config.ignore_logging_functions drops the "
        "call from compiled code; reorderable_logging_functions defers it when its arguments "
        "are only tensors and constants."
    )


def break_advice(category: str, event: GraphBreakEvent) -> str:
    """The fix for one graph break, specialized to what its site shows where possible."""
    if category == "print_or_logging":
        return _logging_advice(event)
    return BREAK_ADVICE.get(category, BREAK_ADVICE["other"])
