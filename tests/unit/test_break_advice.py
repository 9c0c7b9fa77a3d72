"""A graph break's advice: torch's own hints and link first, then the site's facts (its code,
its heat, a loop that makes a frame eager), then ONE paragraph for its category, specialized.

Inputs are GraphBreakEvents carrying torch 2.13's own texts for these breaks (copied from
real ``backend="eager"`` runs; tests/integration/test_advice.py checks the fixes on torch).
"""

from __future__ import annotations

from pt2doctor.analysis.breaks.advice import (
    BREAK_ADVICE,
    LOGGER_ADVICE,
    REORDER_REFUSED_ADVICE,
    WARNINGS_ADVICE,
    break_advice,
)
from pt2doctor.analysis.breaks.heat import break_heat
from pt2doctor.analysis.breaks.library_breaks import known_break
from pt2doctor.analysis.breaks.sites import GraphBreakSite, categorize_break, site_advice
from pt2doctor.trace.messages import explanation_and_hints
from pt2doctor.trace.types import GraphBreakEvent, ProbeData, SourceLine

LINK = "https://meta-pytorch.github.io/compile-graph-break-site/gb/{}.html"
LOGGER_BREAK = f"""logging.Logger method not supported for non-export cases
  Explanation: logging.Logger methods are not supported for non-export cases.
  Hint: Add the logging method to `torch._dynamo.config.ignore_logging_functions`.

  Developer debug context: method: <Logger demo (WARNING)>.warning, args: [], kwargs: {{}}

 For more details about this graph break, please visit: {LINK.format("gb0291")}"""
PRINT_INT_BREAK = f"""Failed to trace builtin operator
  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str', 'int'] (has_kwargs False)
  Hint: Avoid calling builtin `print` with argument types ['str', 'int']. Consider using an equivalent alternative function/method to `print`.
  Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it to `torch._dynamo.config.reorderable_logging_functions`.
  Hint: Please report an issue to PyTorch.

 For more details about this graph break, please visit: {LINK.format("gb0059")}"""
WARN_BREAK = f"""Attempted to call function marked as skipped
  Explanation: Dynamo does not know how to trace the Python builtin `_warnings.warn`.
  Hint: If you are attempting to call a logging function (e.g. `_warnings.warn`), you can try adding it to `torch._dynamo.config.reorderable_logging_functions`.
  Hint: Please file an issue on GitHub so the PyTorch team can add support for it.

 For more details about this graph break, please visit: {LINK.format("gb0007")}"""
REORDER_REFUSED = f"""attempted to reorder a debugging function that can't actually be reordered
  Explanation: `torch.compile` can only reorder functions where the arguments are Tensors, constants, or string formatters.
  Hint: Avoid calling the logging function <built-in function print> with args that are not supported.

  Developer debug context: fn: <built-in function print>, args: [ConstantVariable(str: 'n'), SymNodeVariable()], kwargs: {{}}

 For more details about this graph break, please visit: {LINK.format("gb0296")}"""
ITEM_IN_LOOP = f"""Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.

*** While handling this graph break, another graph break occurred: ***

graph break in loop
  Explanation: torch.compile detected a graph break in a for/while loop. Skipping the frame and falling back to eager, as graph breaks in loops are not supported.
  Hint: This graph break may have been caused by an earlier graph break. Resolving the earlier graph break may resolve this one.

  Developer debug context: frame skipped: forward (/app/model.py line 34)

 For more details about this graph break, please visit: {LINK.format("gb7000")}"""


def site_of(reason: str, code: str, gb_id: str, hits: int | None = None) -> GraphBreakSite:
    explanation, hints = explanation_and_hints(reason.splitlines())
    event = GraphBreakEvent(
        "0/0",
        SourceLine("/app/model.py", 7, "step", code),
        reason.splitlines()[0],
        reason,
        explanation,
        hints,
        gb_id=gb_id,
    )
    category = categorize_break(event)
    site = GraphBreakSite(
        site=event.site or SourceLine(None, None, None),
        category=category,
        reason=reason,
        gb_type=event.gb_type,
        hints=hints,
        user_stack=[],
        gb_id=gb_id,
        fix=break_advice(category, event),
    )
    site.hits, site.hot = hits, None if hits is None else hits > 1
    site.advice = site_advice(site)
    return site


def test_torchs_hint_and_link_come_first_then_the_facts_then_one_paragraph() -> None:
    site = site_of(LOGGER_BREAK, 'log.warning("step done")', "gb0291", hits=40)
    assert site.category == "print_or_logging"
    torch_part = (
        "torch (gb0291): Add the logging method to "
        "`torch._dynamo.config.ignore_logging_functions`. " + LINK.format("gb0291")
    )
    facts = 'Here `log.warning("step done")` ran 40 times (hot).'
    assert site.advice == f"{torch_part} {facts} {LOGGER_ADVICE}"
    assert "reorderable_logging_functions has no effect on Logger methods" in LOGGER_ADVICE


def test_no_category_paragraph_is_glued_to_another() -> None:
    for reason, code, gb_id in (
        (LOGGER_BREAK, "log.warning('x')", "gb0291"),
        (PRINT_INT_BREAK, "print('n', n)", "gb0059"),
        (WARN_BREAK, "warnings.warn('x')", "gb0007"),
        (ITEM_IN_LOOP, "if x.sum().item() > 0:", "gb0124"),
    ):
        advice = site_of(reason, code, gb_id).advice
        glued = [name for name, text in BREAK_ADVICE.items() if text in advice]
        assert len(glued) <= 1, (gb_id, glued)


def test_a_request_for_a_bug_report_is_not_advice() -> None:
    advice = site_of(PRINT_INT_BREAK, "print('n', n)", "gb0059").advice
    assert "report an issue" not in advice
    assert advice.startswith("torch (gb0059): Avoid calling builtin `print`")


def test_print_of_an_int_carries_the_symint_caveat() -> None:
    advice = site_of(PRINT_INT_BREAK, "print('n', n)", "gb0059").advice
    assert "Its arguments (int, str) are tensors and constants" in advice
    assert "SymInt" in advice and "gb0296" in advice


def test_warnings_warn_is_logging_with_the_reorderable_fix() -> None:
    site = site_of(WARN_BREAK, 'warnings.warn("deprecated")', "gb0007", hits=1)
    assert site.category == "print_or_logging"
    assert site.advice.endswith(WARNINGS_ADVICE)
    assert (
        "ran 1 time here (cold: where the real workload also runs it only at startup" in site.advice
    )


def test_a_value_driving_a_branch_inside_a_loop() -> None:
    site = site_of(ITEM_IN_LOOP, "if x.abs().max().item() > 100.0:", "gb0124", hits=12)
    assert site.category == "data_dependent_scalar"
    assert "earlier graph break" not in site.advice  # the loop fact says it instead
    assert (
        "it is reached inside a for/while loop of forward (defined at line 34), so Dynamo runs "
        "that whole function eagerly" in site.advice
    )
    assert "capture_scalar_outputs does not help" in site.advice
    assert site.advice.index("torch (gb0124)") < site.advice.index("Here `if")
    # The text links only the loop's page here: that link is still torch's, kept.
    assert LINK.format("gb7000") in site.advice


def test_the_breaks_own_page_is_linked_when_several_are() -> None:
    two_links = ITEM_IN_LOOP.replace(
        "*** While handling", f"For more details: {LINK.format('gb0124')}\n\n*** While handling"
    )
    advice = site_of(two_links, "if x.sum().item() > 0:", "gb0124").advice
    assert LINK.format("gb0124") in advice and LINK.format("gb7000") not in advice


def test_unmeasured_heat_says_so() -> None:
    advice = site_of(LOGGER_BREAK, "log.warning('x')", "gb0291").advice
    assert "heat not measured (`pt2doctor run` counts it)" in advice


def test_a_refused_reorder_is_logging_and_says_why() -> None:
    """print in reorderable_logging_functions, called with a SymInt under dynamic shapes."""
    site = site_of(REORDER_REFUSED, "print('n', x.shape[0])", "gb0296")
    assert site.category == "print_or_logging"
    assert site.advice.endswith(REORDER_REFUSED_ADVICE)


def test_a_helper_counts_its_own_resume_not_its_callers() -> None:
    """Measured resume points (as the probes key them): the helper's own, and its caller's after
    each of three call sites. Only the helper's own count its executions."""
    prog = "/app/model.py"
    helper = site_of(PRINT_INT_BREAK, "print('n', n)", "gb0059")
    helper.site = SourceLine(prog, 7, "helper", "print('n', n)")
    helper.user_stack = [SourceLine(prog, 20, "forward"), helper.site]
    own_only = ProbeData(snapshot_t=1.0, complete=True)
    own_only.break_hits = {
        (prog, "helper", 7): 15,
        (prog, "forward", 20): 5,
        (prog, "forward", 21): 5,
    }
    break_heat([helper], own_only)
    assert helper.hits == 15 and helper.hot is True
    assert "ran 15 times (hot)" in helper.advice  # the advice is rewritten with the heat

    helper.hits = helper.hot = None
    callers_only = ProbeData(snapshot_t=1.0, complete=True)
    callers_only.break_hits = {(prog, "forward", 20): 5}  # the helper has no resume of its own
    break_heat([helper], callers_only)
    assert helper.hits == 5


EXPLICIT_BREAK = """Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`"""


def _explicit_break(path: str, function: str) -> GraphBreakEvent:
    explanation, hints = explanation_and_hints(EXPLICIT_BREAK.splitlines())
    return GraphBreakEvent(
        compile_id="0/0",
        site=SourceLine(path, 82, function, "torch._dynamo.graph_break()"),
        gb_type=EXPLICIT_BREAK.splitlines()[0],
        reason=EXPLICIT_BREAK,
        explanation=explanation,
        hints=hints,
        gb_id="gb0025",
    )


def test_an_explicit_break_in_torchs_own_code_is_not_the_users_to_remove() -> None:
    """The optimizer's break is by design; another explicit break in torch's own files is
    torch's, not "remove the call"; the same break in the user's file keeps that advice."""
    site_packages = "/venv/lib/python3.11/site-packages/"
    optimizer = known_break(
        site_packages + "torch/optim/optimizer.py",
        "_use_grad",
        _explicit_break(site_packages + "torch/optim/optimizer.py", "_use_grad"),
    )
    assert optimizer is not None and optimizer.by_design
    assert "pytorch/pytorch#104053" in optimizer.fix
    other = known_break(
        site_packages + "torch/utils/checkpoint.py",
        "forward",
        _explicit_break(site_packages + "torch/utils/checkpoint.py", "forward"),
    )
    assert other is not None and not other.by_design
    assert "(torch._dynamo.graph_break() in torch/utils/checkpoint.py)" in other.fix
    assert (
        known_break("/home/me/train.py", "step", _explicit_break("/home/me/train.py", "step"))
        is None
    )


def test_a_by_design_site_drops_torchs_hints() -> None:
    event = _explicit_break("/venv/site-packages/torch/optim/optimizer.py", "_use_grad")
    known = known_break(event.site.file if event.site else None, "_use_grad", event)
    assert known is not None
    site = GraphBreakSite(
        site=event.site or SourceLine(None, None, None),
        category=categorize_break(event),
        reason=event.reason,
        gb_type=event.gb_type,
        hints=event.hints,
        user_stack=[],
        gb_id=event.gb_id,
        fix=known.fix,
        by_design=known.by_design,
    )
    advice = site_advice(site)
    assert "Remove the" not in advice and "gb0025" not in advice
    assert advice.endswith(known.fix)


def _scalar_fix(code: str, following: list[str]) -> str:
    """The advice for a data-dependent-scalar break at ``code``, the user's next lines
    ``following``."""
    event = GraphBreakEvent("0/0", SourceLine("/app/model.py", 7, "forward", code),
                            "Data-dependent branching", "Data-dependent branching")  # fmt: skip
    return break_advice("data_dependent_scalar", event, False, following)


def test_the_lengths_loop_mask_names_the_tensor_that_gives_the_lengths_and_needs_a_row() -> None:
    """The mask fix only for rows cut by a length (``x[i, :n]``), with the lengths taken from
    the ``.tolist()`` at the name's place in a ``zip``; a cut of dim 0 (``x[:n]``) is not it."""
    zipped = _scalar_fix("for ids, n in zip(a.tolist(), lengths.tolist()):",
                         ["    out.append(x[ids, :n])"])  # fmt: skip
    assert "lengths[:, None]" in zipped and "a[:, None]" not in zipped
    assert "lengths that cut" not in _scalar_fix("for n in counts.tolist():",
                                                 ["    out.append(x[:n])"])  # fmt: skip


def test_an_empty_check_with_more_to_it_is_not_told_to_go() -> None:
    """``if idx.numel() == 0 or idx.max() >= n:`` guards more than emptiness."""
    plain = _scalar_fix("if token_idx.numel() == 0:", ["    continue"])
    assert "drop the check" in plain
    compound = _scalar_fix("if idx.numel() == 0 or idx.max() >= n:", ["    raise IndexError"])
    assert "drop the check" not in compound
