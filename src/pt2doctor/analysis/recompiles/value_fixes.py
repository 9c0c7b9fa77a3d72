"""Fixes for Python values a frame's variants are built for: numbers baked in (counters,
constants, a number made a constant again where the code needs one), lists whose length is
guarded, a learning rate, values past the recompile limit, a loop count."""

from __future__ import annotations

import re
from typing import Any

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.changes import SourceChange
from pt2doctor.analysis.recompiles.fix_model import (
    DYNAMO_CONFIG,
    INT,
    Fix,
    FixApplication,
    at_line,
    first_change,
    limit_trial,
    read_at,
    stored_at,
    values_text,
)
from pt2doctor.analysis.recompiles.outlook import FrameExplanation, Outlook, Varying
from pt2doctor.analysis.source_lines import following_code, grown_in_function, parameters_at
from pt2doctor.trace.messages import is_user_file
from pt2doctor.trace.patterns import lazy_compile

_LEARNING_RATE = lazy_compile(r"param_groups\[\d+\]\[['\"](?:lr|learning_rate)['\"]\]$")


LR_TENSOR_FIX = (
    "{source} is the learning rate as a Python float, which the LR scheduler (or the loop) "
    "writes anew at every step, and the compiled optimizer step guards on its value. Create "
    "the optimizer with a tensor learning rate, `lr=torch.tensor(LR)` where it is made "
    "(`lr=LR` now): the scheduler then updates it in place and the step compiles once, "
    "whatever the value "
    "(torch's recipe for a compiled optimizer with an LR scheduler)."
)


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


def specialized_again(row: Varying, explanation: FrameExplanation) -> Fix | None:
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
        return _float_of_size(row, base, first_change(explanation, row.source))
    first = first_change(explanation, base.source)
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


def counter_fix(
    row: Varying, change: SourceChange | None, store: dict[str, Any] | None = None
) -> Fix:
    where = read_at(change) + stored_at(store)
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


def constant_fix(
    row: Varying, change: SourceChange | None, store: dict[str, Any] | None = None
) -> Fix:
    read = read_at(change)
    if store:  # the user's own line changes it while the program runs
        fewer = (
            # a schedule that already steps: each step is a variant, a few steps a few
            "Keep the schedule to a few steps (as now: one compile per step, each value held "
            "for several calls; more steps than the recompile limit run eagerly)"
            if row.held is not None
            else "Give it a few values only (round the schedule: the values then recur, and "
            "each is compiled once)"
        )
        return Fix(
            f"{row.source} is a Python value baked into each variant{stored_at(store)} with "
            f"a new value each time ({values_text(row)} so far): each value compiles a variant "
            f"until the recompile limit, then the frame runs eagerly. {fewer}, or "
            "keep it in a tensor the compiled code reads (a buffer updated in place with "
            ".fill_()), so one variant serves every value; a torch function that takes a "
            "Python number (F.dropout's p) then needs your own tensor version of it."
        )
    line = change.installed_at if change is not None else None
    if (
        all(INT.fullmatch(value) for value in row.values)
        and row.expr is not None
        and row.expr.root not in ("self", "kwargs")
        and line is not None
        and _used_as_size(row.source, line.statement)
        and row.expr.root not in (parameters_at(line.file, line.line) or ())
    ):
        # Not an argument (an int argument goes dynamic after one recompile): a global, or
        # what the code reaches through one, baked in at every value.
        return Fix(
            f"{row.source} is an int the compiled code reads from a global"
            f"{f' (read{read})' if read else ''}, and Dynamo bakes such an int into each "
            f"variant at every value ({values_text(row)} so far), where an int passed in as an "
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
        f"{f' (read{read})' if read else ''}: {values_text(row)} so far. Pass it as a tensor, or "
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
            or not all(INT.fullmatch(value) for value in row.values)):  # fmt: skip
        return None
    _, paren, arguments = line.code.partition("(")
    found = re.search(rf"\b(\w+)\s*=(?!=)[^=]*?\b{re.escape(row.source)}\b", arguments)
    return found.group(1) if paren and found else None


_MOMENTUM = lazy_compile(r"param_groups\[\d+\]\[['\"](?:betas['\"]\]\[0\]|momentum['\"]\])$")
MOMENTUM_FIX = (
    "{source} is the momentum, a Python float that a scheduler which cycles momentum "
    "(OneCycleLR and CyclicLR do by default, `cycle_momentum=True`) writes anew at every "
    "step, as a new tuple of floats (a tensor momentum would be replaced too), and the "
    "compiled optimizer step guards on its value. To keep the results as they are, run the "
    "optimizer step outside the compiled function (compile the forward and backward only). "
    "Creating the scheduler with `cycle_momentum=False` also removes the recompiles, but it "
    "changes the training: the momentum then stays at the optimizer's own value."
)


def learning_rate_fix(row: Varying) -> Fix | None:
    """A float learning rate guarded by a compiled optimizer step: the tensor lr fix; a
    momentum a scheduler cycles: ``cycle_momentum=False``."""
    if _MOMENTUM.search(row.source) and not row.dynamic:
        return Fix(MOMENTUM_FIX.format(source=row.source))
    if not _LEARNING_RATE.search(row.source):
        return None
    return Fix(LR_TENSOR_FIX.format(source=row.source))


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


def list_argument_fix(
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
        f"{name} is a Python list the compiled code takes{read_at(change)}: Dynamo guards "
        f"its length ({values_text(row)} so far) and never makes a length dynamic, so each count "
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
        f"{read_at(change)}: Dynamo unrolls the loop once per element, guards the list's "
        f"length ({values_text(row)} so far; a length never becomes dynamic) and its elements "
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


def beyond_limit_fix(
    rows: list[Varying], outlook: Outlook, change: SourceChange | None = None
) -> Fix:
    """Values that recur, more than the recompile limit holds variants: pad them to fewer (a
    size), keep the choice out of the compiled code (a string or a number that picks what
    runs), or raise the limit to cover them (tried at twice the limit)."""
    names = " and ".join(r.source for r in rows)
    limit = outlook.recompile_limit
    said = (f"{names} {'takes' if len(rows) == 1 else 'take'} more values than the recompile "
            f"limit ({limit}) holds variants ({values_text(rows[0])} so far): the values past it "
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
    return Fix(said + how, limit_trial(2 * limit))


def loop_count_fix(row: Varying, change: SourceChange | None, outlook: Outlook) -> Fix | None:
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
        f"{row.source} is the count of the loop{at_line(line)}: Dynamo "
        "unrolls a Python loop, "
        f"so each count is its own graph ({values_text(row)} so far), and the values past the "
        f"recompile limit ({limit}) run eagerly; a mark does not make a loop count dynamic. "
        f"Leave the function around the loop uncompiled and compile what it runs instead, "
        f"{how}: the loop then runs in Python over compiled code that every count shares. "
        "Or raise torch._dynamo.config.recompile_limit above the number of counts.",
        limit_trial(2 * limit),
    )


def length_fix(row: Varying, change: SourceChange | None) -> Fix:
    """A Python list or dict whose length changed while the program ran, and Dynamo guards its
    length. What to do depends on the code: the compiled code reads one item of it (pass the
    item), is handed it grown by the caller (pass what it needs from it), or grows it itself
    (appends a logged value each step: keep that state outside)."""
    assert row.expr is not None and row.expr.length_of is not None
    name = row.expr.length_of
    line = change.installed_at if change else None
    where = read_at(change)
    said = (
        f"{name} is a Python list or dict the compiled code reads{where}, and it grew while the "
        f"program ran ({row.source} {values_text(row)} so far): Dynamo guards its length, so "
        "each new length compiles a new variant until the recompile limit, then the calls run "
        "eagerly."
    )
    own = line is not None and not (line.file and library_path(line.file) is not None)
    item = (re.search(rf"(?<![\w.]){re.escape(name)}\[(-?\d+)\]", line.code or "")
            if own and line is not None else None)  # fmt: skip
    if item is not None:
        read = f"{name}[{item.group(1)}]"
        return Fix(
            f"{said} The compiled code reads one item of it, `{read}`: pass that item instead "
            f"of the list (`torch.tensor({read})`, a 0-d tensor, is traced and never "
            "recompiles; a float is made dynamic after one recompile)."
        )
    if own and grown_in_function(line, name) is False:
        return Fix(
            f"{said} Your code grows it outside the compiled function and passes it in whole: "
            "pass what the compiled code needs from it instead (a tensor made from it, or the "
            "items it reads), so that its length is not guarded."
        )
    return Fix(
        f"{said} Keep that Python state out of the compiled function: return the values "
        "(detached tensors) and append them outside the compiled call."
    )


TENSOR_VALUE_FIX = (
    "{source} is a 0-d tensor's value that Python code needs as a number{at}: an index "
    "(`cache[{name}] = k`), a slice bound or a Python branch. Dynamo guards on that number "
    "and compiles one variant per value, until the recompile limit. Keep it a tensor op: "
    "write with `cache.index_copy_(0, {name}.view(1), k.unsqueeze(0))` and read with "
    "`cache.index_select(0, {name}.view(1))` (a static cache's way: one graph for every "
    "position), or pass a Python int if each value is meant to specialize."
)


def tensor_value_fix(row: Varying, change: SourceChange | None) -> Fix | None:
    """``pos.item()`` guarded to a number (a tensor indexing a cache): index as a tensor op."""
    if not row.source.endswith(".item()") or row.kind != "value" or row.dynamic:
        return None
    name = row.source.removesuffix(".item()")
    return Fix(TENSOR_VALUE_FIX.format(source=f"`{row.source}`", at=read_at(change), name=name))
