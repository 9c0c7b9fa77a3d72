"""The compile ledger, graph-break sites and findings, on Runs built by hand.

Texts (fail reasons, restart reasons, graph-break types and explanations) are copied from real
torch 2.13.0+cpu TORCH_TRACE logs of small ``backend="eager"`` programs; compile ids, functions
and lines follow what those logs showed (e.g. ``torch_dynamo_resume_in_f_at_6`` after a break
at line 6 of ``f``).
"""

from __future__ import annotations

from typing import Any

import pytest

from pt2doctor.analysis import (
    categorize_break,
    compile_ledger,
    find_findings,
    graph_break_sites,
)
from pt2doctor.analysis.breaks.sites import BREAK_CATEGORIES
from pt2doctor.analysis.findings.codes import SEVERITIES
from pt2doctor.trace.records import CompileId, ParseStats
from pt2doctor.trace.types import CompileRecord, GraphBreakEvent, Guard, Run, SourceLine

PROG = "/tmp/gen/prog.py"
STREAM = "dedicated_log_torch_trace_abc.log"

ITEM_RESTART = (
    "Unsupported Tensor.item() call with capture_scalar_outputs=False\n"
    "  Explanation: Dynamo does not support tracing `Tensor.item()` with "
    "config.capture_scalar_outputs=False.\n"
    "  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or "
    "`export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured "
    "graph.\n\n"
    "  Developer debug context: call_method TensorVariable() item () {}\n\n"
    " For more details about this graph break, please visit: "
    "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html"
)
PRINT_RESTART = (
    "Failed to trace builtin operator\n"
    "  Explanation: Dynamo does not know how to trace builtin operator `print` with argument "
    "types ['str'] (has_kwargs False)\n"
    "  Hint: Avoid calling builtin `print` with argument types ['str']. Consider using an "
    "equivalent alternative function/method to `print`."
)
LIMIT_REASON = (
    "Dynamo recompile limit exceeded\n"
    "  Explanation: Dynamo attempted to recompile the code object too many times, exceeding the "
    "recompile_limit cache size limit (currently set to 2). Excessive recompilations can "
    "degrade performance due to the compilation overhead of each recompilation.\n"
    "  Hint: To monitor recompilations, enable TORCH_LOGS=recompiles. If recompilations are "
    "expected, consider increasing torch._dynamo.config.recompile_limit to an appropriate value."
    "\n\n  Developer debug context: Limit type: recompile_limit"
)
LOOP_SKIP_REASON = (
    "Call to `torch._dynamo.graph_break()`\n"
    "  Explanation: User-inserted graph break. Message: None\n"
    "  Hint: Remove the `torch._dynamo.graph_break()` call.\n\n"
    "*** While handling this graph break, another graph break occurred: ***\n\n"
    "graph break in loop\n"
    "  Explanation: torch.compile detected a graph break in a for/while loop. Skipping the "
    "frame and falling back to eager, as graph breaks in loops are not supported."
)


def record(
    compile_id: str,
    function: str | None = "f",
    line: int = 4,
    *,
    file: str = PROG,
    stream: str = STREAM,
    **fields: Any,
) -> CompileRecord:
    """A compile that produced one graph, unless ``fields`` say otherwise."""
    cid = CompileId.parse(compile_id)
    assert cid is not None
    values: dict[str, Any] = {"graph_count": 1, "has_guarded_code": True, **fields}
    return CompileRecord(cid, stream, function=function, file=file, line=line, **values)


def failed(
    compile_id: str, function: str | None, fail_type: str, reason: str, **fields: Any
) -> CompileRecord:
    return record(
        compile_id,
        function,
        graph_count=0,
        has_guarded_code=False,
        fail_type=fail_type,
        fail_reason=reason,
        **fields,
    )


def make_run(*records: CompileRecord, stats: ParseStats | None = None) -> Run:
    streams = sorted({r.stream for r in records})
    return Run(list(records), stats or ParseStats(), sources=streams, streams=streams)


def item_break(compile_id: str, line: int = 6, function: str = "f") -> GraphBreakEvent:
    site = SourceLine(PROG, line, function, "if y.sum().item() > 0:")
    return GraphBreakEvent(
        compile_id=compile_id,
        site=site,
        gb_type="Unsupported Tensor.item() call with capture_scalar_outputs=False",
        reason="Graph Break Reason: ...",
        explanation="Dynamo does not support tracing `Tensor.item()` with "
        "config.capture_scalar_outputs=False.",
        hints=["Set `torch._dynamo.config.capture_scalar_outputs = True`"],
        user_stack=[SourceLine(PROG, 19, "<module>", "torch.compile(f)(x)"), site],
        gb_id="gb0124",
    )


def tensor_guard(size: str, stride: str = "1", dtype: str = "float32") -> Guard:
    code = (
        "check_tensor(L['x'], Tensor, DispatchKeySet(CPU, BackendSelect, ADInplaceOrView, "
        f"AutogradCPU), torch.{dtype}, device=None, requires_grad=False, size=[{size}], "
        f"stride=[{stride}])"
    )
    return Guard("L['x']", "TENSOR_MATCH", code, "return x + 1  # mp/gen/prog.py:5 in f")


# --- compile_ledger ---------------------------------------------------------------------------


def test_causes_first_compile_recompile_and_resume() -> None:
    run = make_run(
        record("0/0", "f", 4, start_time=1.0),
        record("1/0", "torch_dynamo_resume_in_f_at_12", 12, start_time=2.0),
        record("0/1", "f", 4, start_time=3.0, recompile_reasons=["0/0: n == 2"]),
        record("1/1", "torch_dynamo_resume_in_f_at_12", 12, start_time=4.0),
    )

    ledger = compile_ledger(run)

    assert [(e.compile_id, e.cause, e.resumes_after) for e in ledger.compiles] == [
        ("0/0", "first_compile", None),
        ("1/0", "resume_after_graph_break", ("f", 12)),
        ("0/1", "recompile", None),
        ("1/1", "recompile", ("f", 12)),
    ]
    assert [(f.frame_id, f.function, f.is_resume) for f in ledger.frames] == [
        (0, "f", False),
        (1, "torch_dynamo_resume_in_f_at_12", True),
    ]
    assert [e.compile_id for e in ledger.frames[0].recompiles] == ["0/1"]
    assert ledger.failures == []


def test_resume_name_of_a_function_with_underscores_and_at() -> None:
    run = make_run(record("2/0", "torch_dynamo_resume_in_forward_at_step_at_104", 104))

    (entry,) = compile_ledger(run).compiles

    assert entry.resumes_after == ("forward_at_step", 104)


def test_frames_group_by_stream_and_compiled_autograd_id() -> None:
    run = make_run(
        record("0/0", start_time=1.0),
        record("!0/0/0", "compiled_autograd", start_time=2.0),
        record("0/0", stream="rank_1.log", start_time=1.0),
        record("0/1", stream="rank_1.log", start_time=3.0),
    )

    ledger = compile_ledger(run)

    assert [(f.stream, len(f.compiles)) for f in ledger.frames] == [
        (STREAM, 1),
        (STREAM, 1),
        ("rank_1.log", 2),
    ]
    assert [(e.record.stream, e.compile_id) for e in ledger.compiles] == [
        (STREAM, "0/0"),
        ("rank_1.log", "0/0"),
        (STREAM, "!0/0/0"),
        ("rank_1.log", "0/1"),
    ]


def test_ledger_without_start_times_mixes_compiled_autograd_ids() -> None:
    run = make_run(record("0/0"), record("!0/0/0", "compiled_autograd"))

    ledger = compile_ledger(run)

    assert len(ledger.frames) == 2


def test_compiles_within_a_frame_are_in_compile_order() -> None:
    run = make_run(record("0/2"), record("0/0"), record("0/1"))

    (frame,) = compile_ledger(run).frames

    assert [e.compile_id for e in frame.compiles] == ["0/0", "0/1", "0/2"]


def test_variants_count_compiles_that_produced_code() -> None:
    run = make_run(
        record("0/0"),
        record("0/1"),
        failed("0/2", "f", "BackendCompilerFailed", "boom"),
        record("0/3", has_guarded_code=None, graph_count=0),
        record("0/4", has_guarded_code=None, graph_count=2),
    )

    (frame,) = compile_ledger(run).frames

    assert frame.variants == 3


def test_recompile_limit_hit() -> None:
    run = make_run(
        record("0/0"),
        record("0/1", recompile_reasons=["0/0: n == 0"]),
        failed("0/2", None, "Unsupported", LIMIT_REASON, recompile_reasons=["0/1: n == 1"]),
    )

    ledger = compile_ledger(run)
    (frame,) = ledger.frames

    assert frame.limit_hit
    assert not frame.skipped
    assert frame.function == "f"
    assert frame.variants == 2
    # The refused attempt is its own field, not a recompile and not a failure.
    assert frame.refused is not None and frame.refused.compile_id == "0/2"
    assert [entry.compile_id for entry in frame.recompiles] == ["0/1"]
    assert ledger.failures == []


@pytest.mark.parametrize(
    "reason",
    [
        "cache_size_limit reached",
        "torch._dynamo hit config.recompile_limit (8)",
        "Dynamo recompile limit exceeded",
    ],
)
def test_recompile_limit_spellings(reason: str) -> None:
    run = make_run(record("0/0"), failed("0/1", "f", "Unsupported", reason))

    ledger = compile_ledger(run)

    assert ledger.frames[0].limit_hit
    assert ledger.frames[0].refused is not None
    assert ledger.failures == []


def test_skipped_frame() -> None:
    user_frame = SourceLine(PROG, 15, None)
    run = make_run(failed("3/0", "g", "Unsupported", LOOP_SKIP_REASON, fail_user_frame=user_frame))

    ledger = compile_ledger(run)
    (frame,) = ledger.frames

    assert frame.skipped
    assert frame.skip_reason == LOOP_SKIP_REASON
    assert not frame.limit_hit
    (failure,) = ledger.failures
    assert failure.kind == "skipped_frame"
    assert failure.function == "g"
    assert failure.user_frame == user_frame
    assert failure.fail_reason == LOOP_SKIP_REASON


def test_compile_error_and_dynamo_error_fallback() -> None:
    run = make_run(
        record("0/0"),
        record(
            "0/1",
            graph_count=1,
            has_guarded_code=False,
            fail_type="BackendCompilerFailed",
            fail_reason=None,
            dynamo_error="backend='inductor' raised:\nRuntimeError: boom",
        ),
    )

    ledger = compile_ledger(run)

    (failure,) = ledger.failures
    assert failure.kind == "compile_error"
    assert failure.fail_reason == "backend='inductor' raised:\nRuntimeError: boom"
    assert not ledger.frames[0].skipped


def test_skip_in_the_fail_reason_of_a_frame_without_code() -> None:
    reason = "torch._dynamo.exc.SkipFrame: Skipping frame because there is no content"
    run = make_run(failed("0/0", "f", "SkipFrame", reason))

    ledger = compile_ledger(run)

    assert ledger.failures[0].kind == "skipped_frame"
    assert ledger.frames[0].skipped


def test_recompile_failed_guards_merge_dynamo_text_and_guard_diff() -> None:
    run = make_run(
        record("0/0", guards=[tensor_guard("4", dtype="float32")]),
        record(
            "0/1",
            guards=[tensor_guard("None", dtype="float64")],
            symbols={"s77": ("L['x'].size()[0]", "5")},
            recompile_reasons=["0/0: tensor 'x' dtype mismatch. expected Float, actual Double"],
        ),
    )

    entry = compile_ledger(run).compiles[1]

    assert [(g.category, g.origin, g.against) for g in entry.failed_guards] == [
        ("dtype", "dynamo", ["0/0"]),
        ("size", "guard_diff", ["0/0"]),
    ]
    dtype, size = entry.failed_guards
    assert dtype.text == "tensor 'x' dtype mismatch. expected Float, actual Double"
    assert not dtype.now_dynamic
    assert size.now_dynamic
    # Dynamo shortened the path in the guard comment; the ledger restores the frame's path.
    assert size.source == SourceLine(PROG, 5, "f", "return x + 1")


def test_recompile_without_reasons_diffs_against_every_earlier_variant() -> None:
    run = make_run(
        record("0/0", guards=[tensor_guard("4")]),
        record("0/1", guards=[tensor_guard("8")]),
        record("0/2", guards=[tensor_guard("16")]),
    )

    entry = compile_ledger(run).compiles[2]

    # One failure (x's dim 0), failing against both earlier variants; the text is the first's.
    (failure,) = entry.failed_guards
    assert failure.text == "tensor 'x' size mismatch at index 0. expected 4, actual 16"
    assert failure.against == ["0/0", "0/1"]
    assert failure.origin == "guard_diff"
    assert not failure.now_dynamic


# --- graph_break_sites ------------------------------------------------------------------------


def test_sites_dedupe_across_compiles_and_recompiles() -> None:
    run = make_run(
        record("0/0", graph_breaks=[item_break("0/0")]),
        record("0/1", graph_breaks=[item_break("0/1")], recompile_reasons=["0/0: n == 2"]),
        record("1/0", "torch_dynamo_resume_in_f_at_6", 6),
    )

    (site,) = graph_break_sites(compile_ledger(run))

    assert site.site == SourceLine(PROG, 6, "f", "if y.sum().item() > 0:")
    assert site.compile_ids == ["0/0", "0/1"]
    assert site.streams == [STREAM]
    assert site.category == "data_dependent_scalar"
    assert site.gb_id == "gb0124"
    assert site.hits is None
    assert not site.frame_skipped
    assert site.advice


def test_sites_in_order_of_first_occurrence_and_streams_collected() -> None:
    print_site = SourceLine(PROG, 8, "f", 'print("hello")')
    print_break = GraphBreakEvent(
        "1/0", print_site, "Failed to trace builtin operator", "r", "builtin operator `print`"
    )
    run = make_run(
        record("0/0", graph_breaks=[item_break("0/0")], start_time=1.0),
        record(
            "1/0", "torch_dynamo_resume_in_f_at_6", 6, graph_breaks=[print_break], start_time=2.0
        ),
        record("0/0", graph_breaks=[item_break("0/0")], stream="rank_1.log", start_time=3.0),
    )

    sites = graph_break_sites(compile_ledger(run))

    assert [(s.site.line, s.category, s.compile_ids, s.streams) for s in sites] == [
        (6, "data_dependent_scalar", ["0/0"], [STREAM, "rank_1.log"]),
        (8, "print_or_logging", ["1/0"], [STREAM]),
    ]


def test_site_from_a_resume_function_when_the_log_has_no_break_record() -> None:
    run = make_run(
        record("0/0", "f", 4, restart_reasons=[ITEM_RESTART]),
        record("1/0", "torch_dynamo_resume_in_f_at_6", 6),
    )

    (site,) = graph_break_sites(compile_ledger(run))

    assert site.site == SourceLine(PROG, 6, "f")
    assert site.gb_type == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert site.reason == ITEM_RESTART
    assert site.category == "data_dependent_scalar"
    assert site.compile_ids == ["0/0"]
    assert site.streams == []


def test_site_from_a_resume_function_without_restart_reasons() -> None:
    run = make_run(record("0/0"), record("1/0", "torch_dynamo_resume_in_f_at_6", 6))

    (site,) = graph_break_sites(compile_ledger(run))

    assert site.gb_type == "graph break (the log has no break record)"
    assert site.category == "other"
    assert site.compile_ids == ["0/0"]


def test_resume_function_does_not_duplicate_a_logged_break() -> None:
    run = make_run(
        record("0/0", graph_breaks=[item_break("0/0")], restart_reasons=[ITEM_RESTART]),
        record("1/0", "torch_dynamo_resume_in_f_at_6", 6),
        record("1/1", "torch_dynamo_resume_in_f_at_6", 6),
    )

    (site,) = graph_break_sites(compile_ledger(run))

    assert site.compile_ids == ["0/0"]


def test_break_deeper_in_the_stack_is_not_duplicated_by_the_callers_resume_function() -> None:
    # f calls helper at line 10; helper breaks at line 3; Dynamo resumes f after line 10.
    event = item_break("0/0", line=3, function="helper")
    assert event.site is not None
    event.user_stack = [SourceLine(PROG, 10, "f", "y = helper(x)"), event.site]
    run = make_run(
        record("0/0", graph_breaks=[event]),
        record("1/0", "torch_dynamo_resume_in_f_at_10", 10),
    )

    (site,) = graph_break_sites(compile_ledger(run))

    assert (site.site.function, site.site.line) == ("helper", 3)


def test_chained_resume_functions_take_the_restart_reason_of_the_frame_that_broke() -> None:
    run = make_run(
        record("0/0", "f", 4, restart_reasons=[ITEM_RESTART]),
        record("1/0", "torch_dynamo_resume_in_f_at_6", 6, restart_reasons=[PRINT_RESTART]),
        record("2/0", "torch_dynamo_resume_in_f_at_8", 8),
    )

    sites = graph_break_sites(compile_ledger(run))

    assert [(s.site.line, s.category, s.compile_ids) for s in sites] == [
        (6, "data_dependent_scalar", ["0/0"]),
        (8, "print_or_logging", ["1/0"]),
    ]


def test_break_in_a_skipped_frame_is_marked() -> None:
    site = SourceLine(PROG, 15, "g", "torch._dynamo.graph_break()")
    event = GraphBreakEvent(
        "3/0",
        site,
        "Call to `torch._dynamo.graph_break()`",
        LOOP_SKIP_REASON,
        "User-inserted graph break. Message: None",
    )
    run = make_run(failed("3/0", "g", "Unsupported", LOOP_SKIP_REASON, graph_breaks=[event]))

    (row,) = graph_break_sites(compile_ledger(run))

    assert row.frame_skipped
    assert row.category == "explicit_disable"


def test_break_without_a_site_gets_one_row() -> None:
    event = GraphBreakEvent("0/0", None, "garbage", "garbage")
    run = make_run(record("0/0", graph_breaks=[event, GraphBreakEvent("0/0", None, "x", "x")]))

    (row,) = graph_break_sites(compile_ledger(run))

    assert row.site == SourceLine(None, None, None)
    assert row.compile_ids == ["0/0"]


# --- categorize_break -------------------------------------------------------------------------


def _event(gb_type: str, explanation: str = "", code: str | None = None) -> GraphBreakEvent:
    return GraphBreakEvent("0/0", SourceLine(PROG, 3, "f", code), gb_type, gb_type, explanation)


@pytest.mark.parametrize(
    ("gb_type", "explanation", "category"),
    [
        (
            "Unsupported Tensor.item() call with capture_scalar_outputs=False",
            "Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.",
            "data_dependent_scalar",
        ),
        (
            "Tensor.tolist() with non-integer tensor",
            "Dynamo currently does not support tracing `tolist()` on non-integer tensors.",
            "data_dependent_scalar",
        ),
        (
            "Data-dependent branching",
            "Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`).",
            "data_dependent_scalar",
        ),
        (
            "Dynamic shape operator",
            "Operator `aten.nonzero.default`'s output shape depends on input Tensor data.",
            "data_dependent_shape",
        ),
        (
            "Failed to trace builtin operator",
            "Dynamo does not know how to trace builtin operator `print` with argument types "
            "['str'] (has_kwargs False)",
            "print_or_logging",
        ),
        (
            "logging.Logger method not supported for non-export cases",
            "logging.Logger methods are not supported for non-export cases.",
            "print_or_logging",
        ),
        (
            "HOP: Unsafe side effect",
            "Mutating a variable from outside the scope of this HOP is not supported.",
            "python_side_effect",
        ),
        (
            "Reconstruction failure",
            "Dynamo has no bytecode reconstruction implemented for sourceless variable "
            "UserMethodVariable(<function Path.write_text at 0x7f5681a158a0>).",
            "python_side_effect",
        ),
        (
            "Attempted to call function marked as skipped",
            "Dynamo developers have intentionally marked that the function `getpid` in file "
            "`os.py` should not be traced.",
            "unsupported_builtin_or_c_extension",
        ),
        (
            "Unsupported context manager",
            "Dynamo does not know how to enter a `TextIOWrapper` context manager.",
            "unsupported_builtin_or_c_extension",
        ),
        (
            "Call to `torch._dynamo.graph_break()`",
            "User-inserted graph break. Message: None",
            "explicit_disable",
        ),
        (
            "Skip calling `torch.compiler.disable()`d function",
            "Skip calling function `<function helper at 0x7f5ddecf5580>` since it was wrapped "
            "with `torch.compiler.disable` (reason: None)",
            "explicit_disable",
        ),
        (
            "Unsupported Tensor.backward() call",
            "Dynamo currently does not support tracing `Tensor.backward()`.",
            "other",
        ),
    ],
)
def test_categorize_break(gb_type: str, explanation: str, category: str) -> None:
    assert categorize_break(_event(gb_type, explanation)) == category


def test_categorize_break_falls_back_to_the_code_line() -> None:
    # torch <= 2.5 spelling: the type names only Dynamo's variable, the code shows the call.
    event = _event(
        "Unsupported: call_method UserDefinedObjectVariable(TextIOWrapper) __enter__",
        code='with open("data.txt", "w") as fh:',
    )

    assert categorize_break(event) == "io"


def test_categorize_break_text_wins_over_the_code_line() -> None:
    event = _event("Dynamic shape operator", code="print(torch.nonzero(x))")

    assert categorize_break(event) == "data_dependent_shape"


def test_categorize_break_without_site_or_text() -> None:
    assert categorize_break(GraphBreakEvent("0/0", None, "", "")) == "other"


def test_categorize_break_open_is_io() -> None:
    event = _event(
        "Failed to trace builtin operator",
        "Dynamo does not know how to trace builtin operator `open` with argument types "
        "['str', 'str'] (has_kwargs False)",
        code='with open("/tmp/gen/data.txt", "w") as fh:',
    )

    assert categorize_break(event) == "io"


def test_categorize_break_skipped_c_builtin_is_not_logging() -> None:
    event = _event(
        "Attempted to call function marked as skipped",
        "Dynamo does not know how to trace the builtin `posix.stat.` This function is either a "
        "Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension (perhaps "
        "created with pybind).",
        code=None,
    )

    assert categorize_break(event) == "unsupported_builtin_or_c_extension"


def test_categorize_break_answers_from_the_vocabulary() -> None:
    for gb_type in ("", "x", "Unsupported", "\n"):
        assert categorize_break(_event(gb_type)) in BREAK_CATEGORIES


# --- find_findings ----------------------------------------------------------------------------


def _findings(run: Run) -> list[tuple[str, str]]:
    ledger = compile_ledger(run)
    found = find_findings(ledger, graph_break_sites(ledger), run.parse_stats)
    return [(f.severity, f.code) for f in found]


def test_findings_are_ordered_error_warning_info() -> None:
    run = make_run(
        # frame 0: one benign recompile (size became dynamic) -> info
        record("0/0", guards=[tensor_guard("4")]),
        record(
            "0/1",
            guards=[tensor_guard("None")],
            symbols={"s77": ("L['x'].size()[0]", "5")},
            recompile_reasons=["0/0: tensor 'x' size mismatch at index 0. expected 4, actual 5"],
        ),
        # frame 1: a graph break -> warning
        record("1/0", "h", 30, graph_breaks=[item_break("1/0", line=31, function="h")]),
        # frame 2: recompile limit -> error
        record("2/0", "k", 40),
        failed("2/1", "k", "Unsupported", LIMIT_REASON),
    )

    found = _findings(run)

    assert ("info", "recompiles") in found
    assert ("warning", "graph_break") in found
    assert ("error", "recompile_limit_hit") in found
    ranks = [SEVERITIES.index(severity) for severity, _ in found]
    assert ranks == sorted(ranks)


def test_value_recompile_is_a_warning() -> None:
    run = make_run(record("0/0"), record("0/1", recompile_reasons=["0/0: n == 2"]))

    assert _findings(run) == [("warning", "recompiles")]


def test_skipped_frame_and_compile_error_findings() -> None:
    run = make_run(
        failed("3/0", "g", "Unsupported", LOOP_SKIP_REASON),
        record("4/0", "k"),
        record(
            "4/1",
            "k",
            has_guarded_code=False,
            fail_type="BackendCompilerFailed",
            fail_reason="backend='inductor' raised:\nRuntimeError: boom",
        ),
    )

    found = _findings(run)

    assert ("error", "frame_skipped") in found
    assert ("error", "compile_failure") in found
    assert all(severity == "error" for severity, code in found if code != "recompiles")


def test_parse_problems_finding() -> None:
    stats = ParseStats(non_trace_lines=2, md5_mismatches=1)
    ledger = compile_ledger(make_run(record("0/0"), stats=stats))

    (finding,) = find_findings(ledger, [], stats)

    assert (finding.severity, finding.code) == ("warning", "parse_problems")
    assert "3" in finding.title
    assert finding.evidence == ["non_trace_lines: 2", "md5_mismatches: 1"]


def test_no_parse_problems_finding_for_unknown_kinds() -> None:
    stats = ParseStats()
    stats.unknown_kinds["brand_new_record"] += 4

    ledger = compile_ledger(make_run(record("0/0"), stats=stats))

    assert find_findings(ledger, [], stats) == []


def test_large_graph_finding() -> None:
    run = make_run(record("0/0", graph_op_count=2500), record("1/0", "h", graph_op_count=2000))

    assert _findings(run) == [("info", "large_graph")]


def test_categorize_break_warnings_warn_is_logging() -> None:
    """torch 2.13's text for ``warnings.warn`` (names the C function ``_warnings.warn``)."""
    event = _event(
        "Attempted to call function marked as skipped",
        "Dynamo does not know how to trace the Python builtin `_warnings.warn`.",
        code=None,
    )

    assert categorize_break(event) == "print_or_logging"
