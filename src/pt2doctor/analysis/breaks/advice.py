"""The advice table: for each graph-break category and recompile cause, fixes and their trade-offs.

Written in pt2doctor's own words from the PyTorch compiler's troubleshooting practice. Each entry
names what to change and what it costs, so a user can decide rather than follow blindly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from pt2doctor.analysis.source_lines import whole_statement
from pt2doctor.trace.patterns import lazy_compile
from pt2doctor.trace.types import GraphBreakEvent


class OwnFix(str):
    """Advice under which torch's own hints for the break do not apply (they would send the
    user the wrong way: a branchless rewrite for a branch that only decides a return value,
    tracing into a packing function whose RNN breaks anyway): the site's advice leaves them
    out (analysis/breaks/sites.py)."""


MARK_DYNAMIC_ADVICE = (
    "torch._dynamo.maybe_mark_dynamic(x, dim) is the safe form: "
    "torch._dynamo.mark_dynamic(x, dim) raises ConstraintViolationError when the code "
    "specializes that dim. Sizes 0 and 1, and sizes outside mark_dynamic's min/max, still "
    "recompile."
)

# One paragraph per category, in pt2doctor's words. Each API or config named as a fix is applied
# to a small program in tests/integration/test_advice.py, on the installed torch; what cannot be
# shown there is worded as a suggestion ("consider").
BREAK_ADVICE: dict[str, str] = {
    "data_dependent_scalar": (
        "A tensor's value (.item(), .tolist()) is read in Python. If it only feeds tensor ops, "
        "torch._dynamo.config.capture_scalar_outputs = True keeps it in the graph as an unbacked "
        "symbol. If it drives Python control flow (if/while), that config does not help: "
        "replace the branch with torch.where(cond, a, b) (no break, computes both sides) or "
        "torch.cond(pred, true_fn, false_fn) (one side; both must return the same shapes)."
    ),
    "data_dependent_shape": (
        "An op whose output shape depends on tensor values (boolean mask, nonzero, unique). "
        "Keep the shape static: torch.where(mask, x, 0) or multiply by the mask instead of "
        "indexing; or set torch._dynamo.config.capture_dynamic_output_shape_ops = True to trace "
        "it with an unbacked size (later ops must tolerate an unknown size)."
    ),
    "print_or_logging": (
        "A print, warning or logging call inside the compiled region. Consider moving it out of "
        "the compiled function; `if not torch.compiler.is_compiling():` around it removes the "
        "break but skips the call while compiled."
    ),
    "python_side_effect": (
        "torch 2.13 replays most Python side effects after the graph without a break (globals, "
        "attributes of plain objects, list appends, loops over generators). What breaks is a "
        "side effect inside a higher-order op (a torch.cond branch, a checkpointed function: "
        "it would be replayed, or not, on recompute) and a generator Dynamo would have to "
        "rebuild after mutating it. Consider returning the value instead of mutating outer "
        "state inside the op, or doing the mutation outside the compiled region."
    ),
    "unsupported_builtin_or_c_extension": (
        "A call Dynamo cannot trace (a C extension, an unsupported builtin, a skipped library "
        "function). If it takes and returns tensors, wrapping it as a custom op "
        "(torch.library.custom_op, with register_fake for its output shape) keeps one graph; "
        "otherwise consider moving it out of the hot compiled region. torch.compiler.disable "
        "on it keeps the break but makes it explicit."
    ),
    "explicit_disable": (
        "The code asks for the break (torch._dynamo.graph_break(), torch.compiler.disable). "
        "Keep it only if it is deliberate and not on the hot path; otherwise remove it or move "
        "the disabled function out of the loop that calls it."
    ),
    "io": (
        "File or network I/O inside the compiled region. Consider doing the I/O before or "
        "after the compiled call and passing tensors in."
    ),
    "other": (
        "Read Dynamo's reason and hints; the usual way out is to move the unsupported code "
        "out of the compiled function or to compile a smaller region around the tensor code."
    ),
}

RECOMPILE_ADVICE: dict[str, str] = {
    "size": (
        "Input sizes changed. One static compile followed by one dynamic recompile is normal "
        "(automatic dynamic shapes). More than that: pad inputs to a few buckets, or mark the "
        "dim dynamic before the first call. " + MARK_DYNAMIC_ADVICE
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
SKIPPED_LOOP_FIX = (
    "Remove the break inside the loop, or compile the loop body as its own function (the "
    "break then splits the body's graph, and the rest of the function is compiled)."
)
SKIPPED_FRAME_ADVICE = (
    "Dynamo gave up on this whole function and runs it eagerly (in torch 2.13 a graph break "
    "inside a Python loop does this). " + SKIPPED_LOOP_FIX
)
LARGE_GRAPH_ADVICE = (
    "A very large graph usually comes from a Python loop that Dynamo unrolled. Vectorize the "
    "loop (batch the work, torch.vmap) or compile the loop body instead of the loop."
)
COMPILE_ERROR_ADVICE = (
    "The compiler raised an error. Find the layer that fails by compiling with "
    "backend='eager', then 'aot_eager', then 'inductor' (the first that fails is the culprit; "
    "`pt2doctor ablate -- python PROGRAM` does it); meanwhile torch.compiler.disable the "
    "failing function (without fullgraph=True: under it, compile the parts around it)."
)

LOGGING_MODULE_ADVICE = (
    "A module-level logging call (logging.info, logging.warning, ...) inside the compiled "
    "region: it checks the root logger's handlers on every call, in the logging module, which "
    "Dynamo cannot trace. Guard the line with `if not torch.compiler.is_compiling():` (it still "
    "logs in eager runs; compiled, it is left out: one graph, no break), or log outside the "
    "compiled function. Adding the function to torch._dynamo.config.ignore_logging_functions "
    "(e.g. {logging.info}) also keeps one graph, and drops the message while compiled."
)
TORCH_GENERATOR_ADVICE = (
    "A torch.Generator passed to a random op (`generator=`) cannot be traced by Dynamo in "
    "torch 2.13: the call runs eagerly and splits the graph at every call. Draw the random "
    "tensor with the generator outside the compiled function and pass it in (the same numbers, "
    "one graph), or use the global RNG (torch.manual_seed) inside, which is traced but draws "
    "another stream."
)
_GENERATOR_ARG = lazy_compile(r"\bgenerator\s*=")


# Argument types Dynamo can reorder after the graph (torch/_dynamo/variables/misc.py,
# can_reorder_logs: tensors, constants and f-strings).
_REORDERABLE_ARG_TYPES = frozenset(
    {"str", "int", "float", "bool", "NoneType", "Tensor", "Parameter", "StringFormatVariable"}
)
_ARG_TYPES = lazy_compile(r"argument types \[([^\]]*)\]")
_CONTROL_FLOW = lazy_compile(r"^\s*(?:if|elif|while)\b|\bif\b.+\belse\b")
_HOP_SIDE_EFFECT = lazy_compile(r"HOP: (?:Unsafe|Non-nullified) side effect|higher.order", re.I)

LOGGER_ADVICE = (
    "A logging.Logger method inside the compiled region. In torch 2.13 "
    "reorderable_logging_functions has no effect on Logger methods; adding the method to "
    "torch._dynamo.config.ignore_logging_functions (e.g. {logger.warning}) keeps one graph but "
    "drops the message while compiled. To keep the message, log outside the compiled function."
)
WARNINGS_ADVICE = (
    "warnings.warn inside the compiled region (torch 2.13 sees its C implementation, "
    "`_warnings.warn`). Adding warnings.warn to "
    "torch._dynamo.config.reorderable_logging_functions keeps one graph and still issues the "
    "warning, after the graph runs; ignore_logging_functions would drop it."
)
SYMINT_CAVEAT = (
    " If an int argument is a size under dynamic shapes (a SymInt: after a size recompile, or "
    "with dynamic=True), Dynamo refuses to reorder the call (gb0296): print that size outside "
    "the compiled region."
)


def _logging_function(event: GraphBreakEvent) -> str:
    """``logger``, ``warnings``, ``print`` or ``other``: which call broke, from Dynamo's text."""
    text = f"{event.gb_type}\n{event.explanation}\n{event.reason}"
    code = (event.site and event.site.code) or ""
    if "logging.Logger" in text or event.gb_id == "gb0291":
        return "logger"
    if "_warnings.warn`" in text or "warnings.warn(" in code:
        return "warnings"
    if "`print`" in text or "print(" in code:
        return "print"
    return "other"


PRINT_INLINED_ADVICE = (
    "A print in a function the compiled code calls, not in the compiled function itself. "
    "Guard it: `if not torch.compiler.is_compiling():` around it keeps it in eager runs and "
    "out of the trace (one graph, no break), or move it out of the compiled code. Do not add "
    "print to torch._dynamo.config.reorderable_logging_functions here: torch 2.13 replays "
    "only the compiled function's own deferred prints, and this one would silently never "
    "print (torch/_dynamo/variables/misc.py DebuggingVariable keeps it on the inlined "
    "frame's tracer)."
)


PRINT_REORDER_FIX = (
    "Adding print to torch._dynamo.config.reorderable_logging_functions keeps one graph and "
    "prints after it runs"
)
PRINT_REORDER_ADVICE = (
    "A print call inside the compiled region. " + PRINT_REORDER_FIX + ", when its arguments "
    "are tensors and constants."
)
PRINT_FORMAT_ADVICE = (
    "The break is in building the printed string from a tensor (`%` or .format() of a "
    "tensor's value), before print is called, so reorderable_logging_functions cannot defer "
    'it. Pass the tensor to print as an argument of its own (`print("loss", loss)`, no '
    "formatting) and add print to torch._dynamo.config.reorderable_logging_functions, or "
    "move the print out of the compiled function."
)
# warnings.warn with a category (a class: not a tensor or constant) cannot be deferred (gb0296).
_WARN_CATEGORY = lazy_compile(
    r"warnings\.warn\((?:[^()]|\([^()]*\))*?,\s*(?!stacklevel)\w|category="
)
WARNINGS_CATEGORY_ADVICE = (
    "warnings.warn with a warning category inside the compiled region: Dynamo cannot defer a "
    "call that passes a class (reorderable_logging_functions refuses it, gb0296). Issue the "
    "warning outside the compiled function (where the condition is known: before the call), "
    "or guard it with `if not torch.compiler.is_compiling():` (issued in eager runs only); "
    "ignore_logging_functions={warnings.warn} drops it while compiled."
)
WARNINGS_INLINED_ADVICE = (
    "warnings.warn in a function the compiled code calls (a submodule's forward, a helper), "
    "not in the compiled function itself. Guard it: `if not torch.compiler.is_compiling():` "
    "around it keeps it in eager runs and out of the trace (one graph, no break), or issue "
    "it outside the compiled call. Do not add warnings.warn to "
    "reorderable_logging_functions here: torch 2.13 replays only the compiled function's own "
    "deferred calls, and this warning would silently never be issued."
)
PRINT_NOT_DEFERRED_ADVICE = (
    "A print call inside the compiled region, with arguments of types {types} that Dynamo "
    "cannot defer, so reorderable_logging_functions does not apply. Consider printing outside "
    "the compiled function."
)


# A string built with % or .format() in the printed arguments.
_FORMATTED = lazy_compile(r"""["'][^"']*["']\s*%|["']\.format\(""")


def _print_advice(event: GraphBreakEvent, inlined: bool = False) -> str:
    if inlined:
        return PRINT_INLINED_ADVICE
    match = _ARG_TYPES.search(f"{event.explanation}\n{event.reason}")
    if match is None:
        code = whole_statement(event.site)
        if _FORMATTED.search(code):
            return PRINT_FORMAT_ADVICE
        return PRINT_REORDER_ADVICE + SYMINT_CAVEAT
    types = {t.strip().strip("'\"") for t in match.group(1).split(",") if t.strip()}
    if not types <= _REORDERABLE_ARG_TYPES:
        return PRINT_NOT_DEFERRED_ADVICE.format(
            types=", ".join(sorted(types - _REORDERABLE_ARG_TYPES))
        )
    advice = (
        f"A print call inside the compiled region. Its arguments ({', '.join(sorted(types))}) are "
        f"tensors and constants. {PRINT_REORDER_FIX} (values as of the end of the graph)."
    )
    return advice + (SYMINT_CAVEAT if "int" in types else "")


REORDER_REFUSED_ADVICE = (
    "A function in torch._dynamo.config.reorderable_logging_functions was called with an "
    "argument Dynamo cannot defer (not a tensor, constant or f-string: typically a size that "
    "is a SymInt under dynamic shapes). Print that value outside the compiled region, or "
    "take the function out of reorderable_logging_functions."
)


def _logging_advice(event: GraphBreakEvent, inlined: bool = False) -> str:
    if event.gb_id == "gb0296" or "can't actually be reordered" in event.gb_type:
        return REORDER_REFUSED_ADVICE
    function = _logging_function(event)
    if function == "logger":
        return LOGGER_ADVICE
    if function == "warnings":
        # The whole statement: a wrapped call has its category on a later line.
        code = whole_statement(event.site)
        if inlined:
            return WARNINGS_INLINED_ADVICE
        if _WARN_CATEGORY.search(code):
            return WARNINGS_CATEGORY_ADVICE
        return WARNINGS_ADVICE
    if function == "print":
        return _print_advice(event, inlined)
    return BREAK_ADVICE["print_or_logging"]


# What the user's line does with the value it reads (their code, as the trace quotes it).
_STORED = lazy_compile(
    r"\.(?:append|extend|add)\(|\bprint\(|\blog(?:ger|ging)?\.|\bwandb\.|\bwriter\."
    r"|^\s*self\.[\w.]+\s*(?:\[[^]]*\])?\s*[-+]?=(?!=)"
)
_SIZE_NAME = lazy_compile(
    r"^\s*(?P<name>(?:num|n|max|min|total)_\w+|\w*(?:size|len|length|count|nodes)\w*)\s*=(?!=)"
    r"|^\s*(?P<int>\w+)\s*=\s*int\("
)
SCALAR_STORED_ADVICE = (
    "The value read here is kept in Python (appended to a list, stored on self) or logged: "
    "return the tensor from the compiled function (.detach()) and call .item() where you "
    "keep or log it, outside the compiled call. {capture}"
)
SCALAR_KEPT_CAPTURE = (
    "Inside, the Python state changes at every call, which compiled code must guard (a "
    "growing list's length recompiles each step); torch._dynamo.config.capture_scalar_outputs "
    "does not remove that."
)
SCALAR_ATTR_CAPTURE = (
    "Or torch._dynamo.config.capture_scalar_outputs = True keeps the read in the graph and "
    "sets the attribute as the call returns (one graph, no break); where compiled code reads "
    "the attribute back, it is guarded and recompiles: `run --try-fixes` shows which."
)
_ATTRIBUTE_SET = lazy_compile(r"^\s*self\.[\w.]+\s*=(?!=)")
"""A plain store on self (not ``+=``, not an item of a container): captured, the value is set
when the compiled call returns, and nothing guards it unless compiled code reads it."""
_LOGGED = lazy_compile(
    r"^\s*(?:print|(?:self\.)?(?:log|logger|_log|_logger|logging)\.(?:debug|info|warning|warn"
    r"|error|critical|exception|log))\("
)
SCALAR_LOGGED_ADVICE = (
    "This line logs the value: the .item() in its arguments runs on every call, even when the "
    "log level drops the message, and ends the graph; the {call} call itself is a break too. "
    "Guard the line with `if not torch.compiler.is_compiling():` (it still logs in eager "
    "runs; compiled, it is left out of the graph: one graph, no break), or return the tensor "
    "from the compiled function (.detach()) and log it outside the compiled call. "
    "torch._dynamo.config.capture_scalar_outputs does not remove the logging call's break."
)
SCALAR_SIZE_ADVICE = (
    "The value read here is a count or a size (`{name}`): take it from a shape the code "
    "already has (for example `x.size(0)`), or pass it in as an argument; a shape stays in the "
    "graph as a symbolic size and needs no .item(), so there is no break. Where it cuts a "
    "tensor (a slice `[:{name}]`), keep the shape and mask the part past it instead "
    "(masked_fill or torch.where on the positions), which needs no count at all. "
    "torch._dynamo.config.capture_scalar_outputs = True also keeps the read in the graph, as "
    "an unbacked size the code after it must tolerate."
)


_FLOAT_CAST = lazy_compile(r"\bfloat\(")
SCALAR_CAST_ADVICE = (
    "Keep the value a tensor: `{inner}` without float() works in the arithmetic that "
    "follows, traced, with no break. `float({inner})` makes a Python number of a tensor's "
    "value (a NumPy call on a tensor is traced as one): the graph ends here, and the code "
    "after it is compiled with that number baked in, so every new value compiles it again, "
    "until the recompile limit. torch._dynamo.config.capture_scalar_outputs = True keeps the "
    "float in the graph too."
)


def _cast_inner(code: str) -> str | None:
    """``h_np.std()`` for a line with ``float(h_np.std())``: what float() is given."""
    match = _FLOAT_CAST.search(code)
    if match is None:
        return None
    depth, start = 1, match.end()
    for index in range(start, len(code)):
        depth += {"(": 1, ")": -1}.get(code[index], 0)
        if depth == 0:
            inner = code[start:index].strip()
            return inner if inner and ".item()" not in inner else None
    return None


_ITEM_ASSIGN = lazy_compile(
    r"^\s*(?P<name>[A-Za-z_]\w*)\s*=\s*(?P<rhs>[^=].*\.item\(\).*?)\s*(?:#.*)?$"
)
_BUILTIN_ON = (
    (r"\bmax\(\s*{n}\s*,\s*(?P<arg>[^()]+?)\s*\)", "{n}.clamp(min={arg})"),
    (r"\bmax\(\s*(?P<arg>[^(),]+?)\s*,\s*{n}\s*\)", "{n}.clamp(min={arg})"),
    (r"\bmin\(\s*{n}\s*,\s*(?P<arg>[^()]+?)\s*\)", "{n}.clamp(max={arg})"),
    (r"\bmin\(\s*(?P<arg>[^(),]+?)\s*,\s*{n}\s*\)", "{n}.clamp(max={arg})"),
    (r"\babs\(\s*{n}\s*\)", "{n}.abs()"),
    (r"\bmath\.sqrt\(\s*{n}\s*\)", "{n}.sqrt()"),
    (r"\bmath\.log\(\s*{n}\s*\)", "{n}.log()"),
    (r"\bmath\.exp\(\s*{n}\s*\)", "{n}.exp()"),
)
SCALAR_ITEM_ADVICE = (
    "Keep the value a tensor: `{rewritten}` (no .item()) is a tensor that the arithmetic "
    "after it uses traced, with no break and nothing recompiled per value.{builtins} "
    "torch._dynamo.config.capture_scalar_outputs = True also keeps the read in the graph, as "
    "an unbacked number."
)


def _item_advice(code: str, following: list[str]) -> str | None:
    """For ``scale = x.abs().max().item() / qmax``: the same line without .item(), and the
    Python builtins the lines after it call on ``scale`` as tensor methods (None when a line
    after it branches on the value: that is the branch advice's case)."""
    match = _ITEM_ASSIGN.match(code)
    if match is None:
        return None
    name = match["name"]
    uses = [line for line in following if re.search(rf"\b{re.escape(name)}\b", line)]
    if any(re.match(r"\s*(?:if|elif|while|assert)\b", line) for line in uses):
        return None
    rewrites = []
    for line in uses:
        for pattern, replacement in _BUILTIN_ON:
            found = re.search(pattern.format(n=re.escape(name)), line)
            if found is not None:
                arg = found.groupdict().get("arg") or ""
                rewrites.append(f"`{found.group(0)}` becomes "
                                f"`{replacement.format(n=name, arg=arg.strip())}`")  # fmt: skip
    builtins = (
        f" Then {', '.join(dict.fromkeys(rewrites))}: a Python builtin given a tensor reads "
        "its value again."
        if rewrites
        else ""
    )
    rewritten = f"{name} = {match['rhs'].replace('.item()', '')}"
    return SCALAR_ITEM_ADVICE.format(rewritten=rewritten, builtins=builtins)


_ANY_BRANCH = lazy_compile(
    r"^\s*if\s+(?:torch\.any\((?P<a>.+)\)|(?P<b>.+?)\.any\(\))\s*:\s*(?:#.*)?$"
)
MASK_BRANCH_ADVICE = (
    "Here the branch only decides whether to build `{name} = {mask}`, and a mask with no "
    "True element masks nothing (masked_fill, torch.where leave every value as it is): build "
    "it always, `{name} = {mask}` with no if, and the graph has no break and gives the same "
    "result."
)


def _unwrapped(text: str) -> str:
    """``text`` without parentheses around all of it: ``(tokens == PAD)`` -> ``tokens == PAD``,
    and ``torch.isnan(x)`` kept whole (its closing parenthesis is the call's)."""
    text = text.strip()
    while text.startswith("(") and text.endswith(")"):
        depth = 0
        for index, char in enumerate(text):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0 and index < len(text) - 1:
                return text  # the first "(" closes before the end: not one pair around it all
        text = text[1:-1].strip()
    return text


def _mask_branch(code: str, following: list[str]) -> str | None:
    """``if (tokens == PAD).any(): mask = tokens == PAD else: mask = None``: the branch
    builds the very mask it tests (an all-False mask is a no-op)."""
    match = _ANY_BRANCH.match(code)
    if match is None:
        return None
    mask = _unwrapped(" ".join((match["a"] or match["b"] or "").split()))
    body = [" ".join(line.split()) for line in following[:4]]
    assigned = next((re.match(rf"^(\w+) = \(?{re.escape(mask)}\)?$", line) for line in body[:1]),
                    None)  # fmt: skip
    if assigned is None:
        return None
    name = assigned.group(1)
    if len(body) >= 3 and body[1] == "else:" and body[2] != f"{name} = None":
        return None
    return MASK_BRANCH_ADVICE.format(name=name, mask=mask)


_FOR_OVER_VALUES = lazy_compile(
    r"^\s*for\s+(?P<names>[\w\s,()]+?)\s+in\s+.*?(?P<tensor>[\w.]+)\.tolist\(\)"
)
_NAMES = lazy_compile(r"[A-Za-z_]\w*")
MODULE_BY_VALUE_ADVICE = (
    "The values read here pick a module: `{pick}` indexes by a tensor's value, and compiled "
    "code cannot choose a module by a value it does not know. The code after the break is "
    "compiled for the values it saw, so every new routing compiles again, until the "
    "recompile limit, and then runs eagerly; torch._dynamo.config.capture_scalar_outputs "
    "does not remove that (the break moves to the index). Keep the routing loop out of the "
    "compiled code: move it into a method decorated with `@torch.compiler.disable` (one "
    "break, nothing recompiled per routing, the same results; not under fullgraph=True), or "
    "loop over the modules instead and give each the rows routed to it by a mask "
    "(for each j, `out = out + ({tensor} == j).view(-1, *[1] * (x.dim() - 1)) * "
    "{module}[j](x)`, x being the rows the module is given: the mask broadcasts over each "
    "row, whatever its rank): one graph, each module then runs on every row, and a module that gets no rows receives a zero gradient "
    "instead of none, which a stateful optimizer (Adam) still applies, so the results "
    "drift from the eager run's."
)


def _module_by_value(code: str, following: list[str]) -> str | None:
    """``for i, e in enumerate(expert_ids.tolist()): ... self.experts[e](tok)``: a tensor's
    values read in Python, each then picking a module of a ModuleList (MoE routing). The
    values become guards of the code after the break (one variant per routing pattern)."""
    loop = _FOR_OVER_VALUES.match(code)
    if loop is None:
        return None
    names = set(_NAMES.findall(loop["names"])) - {"in"}
    for line in following[:10]:
        for pick in re.finditer(r"(?P<module>self(?:\.\w+)+)\[(?P<index>\w+)\]\s*\(", line):
            if pick["index"] in names:
                return MODULE_BY_VALUE_ADVICE.format(
                    pick=f"{pick['module']}[{pick['index']}]",
                    module=pick["module"],
                    tensor=loop["tensor"],
                )
    return None


_FOR_OVER_READ = lazy_compile(
    r"^\s*for\s+(?P<names>[\w\s,()]+?)\s+in\s+(?P<values>.*\.(?:tolist|item)\(\).*?)\s*:"
)
BOOKKEEPING_ADVICE = (
    "The values read here are kept in Python (`{store}`): bookkeeping, not tensor code. The "
    "code after the break is compiled with the values it saw and the Python state they "
    "update baked in, so nearly every call compiles it again, until the recompile limit, and "
    "then it runs eagerly. Keep it out of the compiled function: return the tensors and do "
    "the bookkeeping after the call (or compile only the model), or keep it in tensors "
    "(a count per pair with `index_add_` on a flat index, a running sum) and read them once "
    "at the end with .tolist(). torch._dynamo.config.capture_scalar_outputs does not help "
    "here: the values index and update Python objects."
)
SCALAR_RETURNED_ADVICE = (
    "The function returns a tensor's value as a Python number (`{code}`): the graph ends at "
    "the .item() on every call. Return the tensor itself (`.detach()`) and call .item() on "
    "it after the compiled call, where the number is used: no break, the same value."
)
_RETURN = lazy_compile(r"^\s*return\s+(?P<values>.+?)\s*$")


def _top_level(text: str) -> Iterator[tuple[int, str]]:
    """Each character of ``text`` outside parentheses and brackets, with its index."""
    depth = 0
    for index, char in enumerate(text):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(char, 0)
        if depth == 0:
            yield index, char


def _returns_item(code: str) -> bool:
    """``return loss.item(), correct``: one of the returned values is a tensor's value as a
    Python number itself (not ``x * x.sum().item()``, where it feeds tensor ops)."""
    found = _RETURN.match(code)
    if found is None:
        return False
    values = found["values"]
    commas = [index for index, char in _top_level(values) if char == ","]
    parts = [values[a + 1 : b] for a, b in zip([-1, *commas], [*commas, len(values)], strict=True)]
    return any(_whole_item(part.strip()) for part in parts)


def _whole_item(value: str) -> bool:
    """``(preds == y).sum().item()``: one value read by .item(), no operator around it."""
    return value.endswith(".item()") and not any(
        char in "+-*/%<>=&|^ " for _, char in _top_level(value)
    )


LENGTHS_LOOP_ADVICE = (
    "The values read here are lengths that cut a tensor, one row at a time (`{store}`): "
    "the loop runs in Python with one step per row, so the code after the break is compiled "
    "again for each new count of rows, until the recompile limit, and then it runs eagerly. "
    "Keep the whole tensor and mask the positions past each length instead: "
    "`keep = torch.arange({tensor}.shape[1], device={tensor}.device)[None, :] < "
    "{lengths}[:, None]`, then reduce with the mask (a mean over each row's first n "
    "positions is `({tensor} * keep[..., None]).sum(1) / {lengths}[:, None]`; a sum drops "
    "the division, a max uses `{tensor}.masked_fill(~keep[..., None], float('-inf'))`): no "
    ".tolist(), no break, one graph for every batch."
)
_TOLIST = lazy_compile(r"^\s*(?P<tensor>[\w.]+)\.tolist\(\)\s*$")


def _read_from(loop: re.Match[str], name: str) -> str | None:
    """The tensor whose ``.tolist()`` gives the loop's ``name``: ``lengths`` for ``n`` in
    ``for i, n in enumerate(lengths.tolist())`` or ``for ids, n in zip(a.tolist(),
    lengths.tolist())``; None when the loop does not say."""
    names = [part.strip(" ()") for part in loop["names"].split(",")]
    values = loop["values"].strip()
    if values.startswith("enumerate(") and values.endswith(")") and names[-1:] == [name]:
        read = _TOLIST.match(values[len("enumerate(") : -1])
        return read["tensor"] if read else None
    if values.startswith("zip(") and values.endswith(")") and name in names:
        parts = [values[len("zip(") : -1][a:b] for a, b in _top_level_parts(values[4:-1])]
        if len(parts) == len(names):
            read = _TOLIST.match(parts[names.index(name)])
            return read["tensor"] if read else None
        return None
    read = _TOLIST.match(values)
    return read["tensor"] if read and names == [name] else None


def _top_level_parts(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each comma-separated part of ``text`` at its top level."""
    commas = [index for index, char in _top_level(text) if char == ","]
    bounds = [-1, *commas, len(text)]
    return [(bounds[k] + 1, bounds[k + 1]) for k in range(len(bounds) - 1)]


def _lengths_loop(loop: re.Match[str], line: str, used: set[str]) -> str | None:
    """The loop's body cuts each row of a tensor by a value it read (``x[i, :n]``, ``i`` the
    loop's row index): lengths that cut rows, whose fix is a mask over dim 1
    (LENGTHS_LOOP_ADVICE), not bookkeeping."""
    names = {part.strip(" ()") for part in loop["names"].split(",")}
    for name in used:
        # x[i, :n], and x[i, :n - 1] (a language model's shifted targets: n - 1 per row).
        cut = re.search(rf"(?P<tensor>[A-Za-z_]\w*)\[\s*(?P<row>\w+)\s*,\s*:\s*{name}"
                        r"\s*(?P<offset>[-+]\s*\d+)?\s*\]", line)  # fmt: skip
        lengths = _read_from(loop, name)
        if cut is not None and cut["row"] in names - {name} and lengths is not None:
            if cut["offset"]:
                sign, amount = cut["offset"][0], cut["offset"][1:].strip()
                lengths = f"({lengths} {sign} {amount})"
            return LENGTHS_LOOP_ADVICE.format(store=line.strip(), tensor=cut["tensor"],
                                              lengths=lengths)  # fmt: skip
    return None


def _bookkeeping(code: str, following: list[str]) -> str | None:
    """``for t, p in zip(y.tolist(), preds.tolist()): confusion[t][p] += 1``: a tensor's
    values read in Python and stored, by the loop's body, in a Python object (a list's
    element, a dict's, an append)."""
    loop = _FOR_OVER_READ.match(code)
    if loop is None:
        return None
    names = set(_NAMES.findall(loop["names"])) - {"in"}
    for line in following[:10]:
        used = set(_NAMES.findall(line)) & names
        stored = re.search(r"\w+(?:\[[^\]]+\])+\s*[-+*/]?=(?!=)|\.append\(|\.add\(", line)
        if used and stored is not None:
            return _lengths_loop(loop, line, used) or BOOKKEEPING_ADVICE.format(store=line.strip())
    return None


_IF = lazy_compile(r"^\s*if\s+(?P<cond>.+?)\s*:\s*(?:#.*)?$")
RETURNED_BRANCH_ADVICE = (
    "The branch on a tensor's value only decides what the function returns (`{first}` or "
    "`{other}`): return the condition itself, as a tensor (`{returned}`), and branch where "
    "the result is used, in the caller, after the compiled call (an `if` there reads the "
    "tensor): one graph, no break, the same decisions. torch.cond does not apply (it cannot "
    "return a Python value), nor does capture_scalar_outputs (the value decides a branch)."
)


def _returned_branch(code: str, following: list[str]) -> str | None:
    """``if finished.all(): return ids, True`` then ``return ids, False``: a branch whose two
    sides return the same values but a Python bool, the condition's."""
    branch = _IF.match(code)
    if branch is None or not following or not following[0].strip().startswith("return "):
        return None
    first = following[0].strip()
    other = next((line.strip() for line in following[1:4]
                  if line.strip().startswith("return ")), None)  # fmt: skip
    if other is None:
        return None
    ours = [part.strip() for part in first[len("return ") :].split(",")]
    theirs = [part.strip() for part in other[len("return ") :].split(",")]
    differ = [(a, b) for a, b in zip(ours, theirs, strict=False) if a != b]
    if (len(ours) != len(theirs) or len(differ) != 1
            or set(differ[0]) != {"True", "False"}):  # fmt: skip
        return None
    cond = branch["cond"]
    said = cond if differ[0][0] == "True" else f"~({cond})"
    returned = ", ".join(said if a != b else a for a, b in zip(ours, theirs, strict=True))
    return OwnFix(
        RETURNED_BRANCH_ADVICE.format(first=first, other=other, returned=f"return {returned}")
    )


_EMPTY_CHECK = lazy_compile(
    r"^\s*if\s+(?:(?P<of>[\w.\[\]]+)\.numel\(\)\s*==\s*0|len\((?P<len>[\w.\[\]]+)\)\s*==\s*0"
    r"|not\s+(?P<not>[\w.\[\]]+)\.numel\(\))\s*:"
)
EMPTY_CHECK_ADVICE = (
    "`{code}` asks whether a selection made from tensor values (a mask, nonzero, where) is "
    "empty: its size is unknown until run time, so the check is a data-dependent branch. The "
    "code after it usually works on zero rows as well (a matmul of 0 rows gives 0 rows, "
    "index_add_ of nothing adds nothing): drop the check, and the break with it, after "
    "confirming that path on an empty selection. Where the code needs the size to be "
    "non-zero, state it with torch._check({of}.numel() > 0) instead of branching."
)


VALUE_BRANCH_ADVICE = (
    "The tensor value read here decides a Python branch, so "
    "torch._dynamo.config.capture_scalar_outputs does not help. Replace the branch with "
    "torch.where(cond, a, b) (no break, computes both sides) or torch.cond(pred, true_fn, "
    "false_fn) (one side; both must return the same shapes)."
)
HOP_SIDE_EFFECT_ADVICE = (
    "A side effect inside a higher-order op (a torch.cond branch, a checkpointed "
    "function) that Dynamo cannot replay safely. Consider returning the value from the "
    "function instead of mutating state outside it."
)


def _scalar_advice(event: GraphBreakEvent, following: list[str] | None = None) -> str:
    code = (event.site and event.site.code) or ""
    masked = _mask_branch(code, following or [])
    if masked is not None:
        return masked
    routed = _module_by_value(code, following or [])
    if routed is not None:
        return routed
    kept = _bookkeeping(code, following or [])
    if kept is not None:
        return kept
    statement = event.site.statement if event.site else ""
    if _returns_item(statement):
        return SCALAR_RETURNED_ADVICE.format(code=statement)
    if not _CONTROL_FLOW.search(code):
        logged = _LOGGED.match(code)
        if logged is not None:
            call = logged.group(0).strip().rstrip("(")
            return SCALAR_LOGGED_ADVICE.format(call=f"`{call}`")
        if _STORED.search(code):
            attribute = _ATTRIBUTE_SET.match(code) and not _LOGGED.search(code)
            return SCALAR_STORED_ADVICE.format(
                capture=SCALAR_ATTR_CAPTURE if attribute else SCALAR_KEPT_CAPTURE
            )
        size = _SIZE_NAME.match(code)
        if size is not None:
            return SCALAR_SIZE_ADVICE.format(name=size["name"] or size["int"])
        inner = _cast_inner(code)
        if inner is not None:
            return SCALAR_CAST_ADVICE.format(inner=inner)
        item = _item_advice(code, following or [])
        if item is not None:
            return item
        return BREAK_ADVICE["data_dependent_scalar"]
    returned = _returned_branch(code, following or [])
    if returned is not None:
        return returned
    empty = _EMPTY_CHECK.match(code)
    if empty is not None:
        of = empty["of"] or empty["len"] or empty["not"]
        return OwnFix(EMPTY_CHECK_ADVICE.format(code=code.strip(), of=of))
    return VALUE_BRANCH_ADVICE


def _side_effect_advice(event: GraphBreakEvent) -> str:
    if _HOP_SIDE_EFFECT.search(f"{event.gb_type}\n{event.explanation}"):
        return HOP_SIDE_EFFECT_ADVICE
    return BREAK_ADVICE["python_side_effect"]


def break_advice(
    category: str,
    event: GraphBreakEvent,
    inlined: bool = False,
    following: list[str] | None = None,
) -> str:
    """pt2doctor's paragraph for one graph break: its category's, specialized to what the
    break's text and code line show (which logging call, a branch on a value, a side effect
    inside a higher-order op; ``inlined``: it is in a function the compiled frame calls;
    ``following``: the lines of the user's function after the break's, where its value goes).
    Never several categories' paragraphs together."""
    if category == "print_or_logging":
        return _logging_advice(event, inlined)
    if category == "data_dependent_scalar":
        if RANDOM_DRAW.search((event.site and event.site.code) or ""):
            return HOST_RANDOM_ADVICE  # a branch on a NumPy or Random draw: not a tensor's value
        return _scalar_advice(event, following)
    if category == "python_side_effect":
        return _side_effect_advice(event)
    code = (event.site and event.site.code) or ""
    text = f"{event.gb_type}\n{event.explanation}\n{event.reason}"
    if "Tensor.requires_grad_()" in event.gb_type:
        return OwnFix(REQUIRES_GRAD_ADVICE)
    if "Tensor.backward()" in event.gb_type:
        return OwnFix(BACKWARD_ADVICE)
    where = f"{event.site.function if event.site else ''}\n{text}"
    setup = next((call for pattern, call in _SETUP_CALLS if pattern in where), None)
    if setup is not None:
        return OwnFix(SETUP_ADVICE.format(call=setup))
    if _RNN.search(text):
        return OwnFix(RNN_ADVICE)
    if _PACKING.search(text):
        return OwnFix(PACKING_ADVICE)
    if category == "unsupported_builtin_or_c_extension" and HOST_RANDOM.search(code):
        return HOST_RANDOM_ADVICE
    if _GENERATOR_ARG.search(code) and "proxy" in text:
        return OwnFix(TORCH_GENERATOR_ADVICE)
    return BREAK_ADVICE.get(category, BREAK_ADVICE["other"])


# One-time setup that Dynamo cannot trace, found inside a compiled function: what torch's text
# says, and the call the user wrote.
_SETUP_CALLS = (
    ("copy.deepcopy", "copy.deepcopy"),
    ("construct_stacked_leaf", "torch.func.stack_module_state"),
    ("`torch.nn.Parameter()` constructor", "nn.Parameter (a module's .to() makes new ones)"),
)
SETUP_ADVICE = (
    "`{call}` inside the compiled function is one-time setup (copying a module, stacking an "
    "ensemble's weights) that Dynamo cannot trace, and it runs, and splits the graph, on "
    "every call. Do it once, outside, and pass the result in (the stacked parameters, the "
    "copied template): the compiled function then holds only the per-call tensor work. Redo "
    "the setup where its inputs change (an ensemble that keeps training restacks)."
)
BACKWARD_ADVICE = (
    "Dynamo does not trace `.backward()` inside a compiled function: the graph ends there and "
    "the backward runs eagerly, on every call. Return the loss from the compiled function "
    "and call `.backward()` on it after the call: AOTAutograd compiles the backward of what "
    "the compiled function computed, so forward and backward are both compiled, and the "
    "gradients are the same. torch._dynamo.config.trace_autograd_ops = True traces the call "
    "instead; it is experimental, and the returned loss then has to be detached."
)
REQUIRES_GRAD_ADVICE = (
    "Dynamo does not trace changing a tensor's requires_grad (`requires_grad_`, a module's "
    "`requires_grad_(False)` to freeze it): the compiled function splits at each call. Change "
    "it outside the compiled function, around the call (freeze before the compiled step, "
    "unfreeze after its backward): the same gradients, one graph. A tensor made inside that "
    "must not require grad is better made with `.detach()` or under `torch.no_grad()`."
)
_RNN = lazy_compile(r"wrap RNN, GRU, or LSTM|gb0014\b")
RNN_ADVICE = (
    "nn.LSTM, nn.GRU and nn.RNN are not traced by Dynamo: the graph ends at the call and the "
    "RNN runs eagerly, on its own library kernel. torch's allow_rnn=True is experimental: it "
    "unrolls the recurrence into the graph one time step at a time, so compile time grows "
    "with the sequence length and each new length compiles again; it rarely pays off. Keep "
    "the RNN out of the compiled region: compile the parts before and after it (or leave "
    "this model uncompiled), and make what feeds it cheap (no packing: see a packing break "
    "before it, if any)."
)
_PACKING = lazy_compile(r"\b(?:pack_padded_sequence|pack_sequence|pad_packed_sequence)\b")
PACKING_ADVICE = (
    "torch.nn.utils.rnn's packing functions are skipped by Dynamo, and a PackedSequence "
    "exists to feed nn.LSTM/GRU/RNN, which Dynamo does not trace either: tracing into the "
    "packing (torch's hint) only moves the break to the RNN call. Keep the packing and the RNN "
    "out of the compiled region together, or drop the packing: run the RNN on the padded "
    "batch and take each sequence's output at its last real step (`out.gather(1, (lengths - "
    "1).view(-1, 1, 1).expand(-1, 1, out.size(2)))` for batch_first; the same result for a "
    "one-directional RNN), which is also often faster than packing."
)


HOST_RANDOM = lazy_compile(r"\b(?:random|np\.random|numpy\.random|time)\.\w+\(")
# A host draw in a branch: NumPy's global RNG (traced as a tensor op, so the branch reads a
# tensor), or a random.Random / NumPy Generator object's draw.
RANDOM_DRAW = lazy_compile(
    r"\b(?:np|numpy)\.random\.\w+\(|\b\w*(?:rng|random|gen)\w*\."
    r"(?:random|rand|uniform|randint|integers|choice|normal|standard_normal)\("
)
HOST_RANDOM_ADVICE = (
    "Python's own random numbers (or the clock) are read on the host at every call, and "
    "Dynamo does not trace them: draw them outside the compiled call and pass them in as a "
    "tensor (a keep mask: `x = x + keep[i] * blk(x)` instead of skipping a layer in an if), "
    "or use torch's RNG (`torch.rand`), which is traced, with the decision as a mask rather "
    "than a Python branch."
)
