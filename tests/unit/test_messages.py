"""Graph-break reasons as Dynamo logs them (``dynamo_graph_break_reason`` artifacts).

The three payloads below are copied verbatim from a real TORCH_TRACE log (torch 2.13.0+cpu,
Python 3.11; the tab that indents payload lines removed), produced by
``TORCH_TRACE=/tmp/gt4 python prog_breaks.py`` with this ``/tmp/gen/prog_breaks.py``::

     1  import torch
     2
     3
     4  def f(x):
     5      y = x * 2
     6      if y.sum().item() > 0:
     7          y = y + 1
     8      print("hello")
     9      return y - 1
    10
    11
    12  def g(x):
    13      for i in range(3):
    14          x = x + i
    15          torch._dynamo.graph_break()
    16      return x
    17
    18
    19  torch.compile(f, backend="eager")(torch.randn(4))
    20  torch.compile(g, backend="eager")(torch.randn(4))
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from pt2doctor.trace.messages import (
    error_summary,
    parse_graph_break,
    parse_user_stack,
    stopped_at,
)
from pt2doctor.trace.types import SourceLine

ITEM_BREAK = """\
Graph break in user code at /tmp/gen/prog_breaks.py:6
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html

User code traceback:
  File "/tmp/gen/prog_breaks.py", line 19, in <module>
    torch.compile(f, backend="eager")(torch.randn(4))
  File "/tmp/gen/prog_breaks.py", line 6, in f
    if y.sum().item() > 0:
       ^^^^^^^^^^^^^^^^^^^

Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
           ^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 4520, in CALL
    self._call(inst)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 4511, in _call
    self.call_function(fn, args, kwargs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1493, in call_function
    self.push(fn.call_function(self, args, kwargs))  # type: ignore[arg-type]
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/misc.py", line 1521, in call_function
    return self.obj.call_method(tx, self.name, args, kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/tensor.py", line 968, in call_method
    result = handler_method(tx, *args, **realized_kwargs)
             ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/tensor.py", line 1565, in method_item
    unimplemented(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/exc.py", line 727, in unimplemented
    raise Unsupported(msg, gb_type, skip_frame)
torch._dynamo.exc.Unsupported: Unsupported Tensor.item() call with capture_scalar_outputs=False
  Explanation: Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False.
  Hint: Set `torch._dynamo.config.capture_scalar_outputs = True` or `export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the captured graph.

  Developer debug context: call_method TensorVariable() item () {}

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0124.html

"""

PRINT_BREAK = """\
Graph break in user code at /tmp/gen/prog_breaks.py:8
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Failed to trace builtin operator
  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str'] (has_kwargs False)
  Hint: Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative function/method to `print`.
  Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it to `torch._dynamo.config.reorderable_logging_functions`.
  Hint: Please report an issue to PyTorch.

  Developer debug context: builtin print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] False

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html

User code traceback:
  File "/tmp/gen/prog_breaks.py", line 19, in <module>
    torch.compile(f, backend="eager")(torch.randn(4))
  File "/tmp/gen/prog_breaks.py", line 8, in f
    print("hello")

Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
           ^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 4520, in CALL
    self._call(inst)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 4511, in _call
    self.call_function(fn, args, kwargs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1493, in call_function
    self.push(fn.call_function(self, args, kwargs))  # type: ignore[arg-type]
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/lazy.py", line 514, in realize_and_forward
    return getattr(self.realize(), name)(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/builtin.py", line 1588, in call_function
    return handler(tx, args, kwargs)  # type: ignore[return-value]
           ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/builtin.py", line 1257, in <lambda>
    return lambda tx, args, kwargs: call_unimplemented(args)
                                    ^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/builtin.py", line 1242, in call_unimplemented
    unimplemented(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/exc.py", line 727, in unimplemented
    raise Unsupported(msg, gb_type, skip_frame)
torch._dynamo.exc.Unsupported: Failed to trace builtin operator
  Explanation: Dynamo does not know how to trace builtin operator `print` with argument types ['str'] (has_kwargs False)
  Hint: Avoid calling builtin `print` with argument types ['str']. Consider using an equivalent alternative function/method to `print`.
  Hint: If you are attempting to call a logging function (e.g. `print`), you can try adding it to `torch._dynamo.config.reorderable_logging_functions`.
  Hint: Please report an issue to PyTorch.

  Developer debug context: builtin print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] False

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html

"""

LOOP_BREAK = """\
Graph break in user code at /tmp/gen/prog_breaks.py:15
Graph Break Reason: Failed to handle graph break gracefully. Skipping the function and falling back to eager. Graph break encountered:

Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html

*** While handling this graph break, another graph break occurred: ***

graph break in loop
  Explanation: torch.compile detected a graph break in a for/while loop. Skipping the frame and falling back to eager, as graph breaks in loops are not supported.
  Hint: This graph break may have been caused by an earlier graph break. Resolving the earlier graph break may resolve this one.

  Developer debug context: frame skipped: g (/tmp/gen/prog_breaks.py line 12)

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb7000.html

Stack variable source attribution:
  RangeIteratorVariable() originated from:
  File "/tmp/gen/prog_breaks.py", line 13
        for i in range(3):
        ^^^^^^^^^^^^^^^^^^
            x = x + i
            ^^^^^^^^^
            torch._dynamo.graph_break()
            ^^^^^^^^^^^^^^^^^^^^^^^^^^^

User code traceback:
  File "/tmp/gen/prog_breaks.py", line 20, in <module>
    torch.compile(g, backend="eager")(torch.randn(4))
  File "/tmp/gen/prog_breaks.py", line 15, in g
    torch._dynamo.graph_break()

Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1076, in wrapper
    return inner_fn(self, inst)
           ^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 4520, in CALL
    self._call(inst)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 4511, in _call
    self.call_function(fn, args, kwargs)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1493, in call_function
    self.push(fn.call_function(self, args, kwargs))  # type: ignore[arg-type]
              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/lazy.py", line 514, in realize_and_forward
    return getattr(self.realize(), name)(*args, **kwargs)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/variables/functions.py", line 2305, in call_function
    unimplemented(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/exc.py", line 727, in unimplemented
    raise Unsupported(msg, gb_type, skip_frame)
torch._dynamo.exc.Unsupported: Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1950, in run
    while self.step():
          ^^^^^^^^^^^
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1603, in step
    self.dispatch_table[inst.opcode](self, inst)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 1105, in wrapper
    self.raise_loop_graph_break(self.f_code, excp)
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/symbolic_convert.py", line 5144, in raise_loop_graph_break
    unimplemented(
  File "/work/main/.venv/lib/python3.11/site-packages/torch/_dynamo/exc.py", line 721, in unimplemented
    raise Unsupported(msg, gb_type, skip_frame, real_stack=past_real_stack)
torch._dynamo.exc.Unsupported: Call to `torch._dynamo.graph_break()`
  Explanation: User-inserted graph break. Message: None
  Hint: Remove the `torch._dynamo.graph_break()` call.

  Developer debug context: Called `torch._dynamo.graph_break()` with args `[]`, kwargs `{}`

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0025.html

*** While handling this graph break, another graph break occurred: ***

graph break in loop
  Explanation: torch.compile detected a graph break in a for/while loop. Skipping the frame and falling back to eager, as graph breaks in loops are not supported.
  Hint: This graph break may have been caused by an earlier graph break. Resolving the earlier graph break may resolve this one.

  Developer debug context: frame skipped: g (/tmp/gen/prog_breaks.py line 12)

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb7000.html

"""

# From ``prog_io.py`` (same torch), ``os.path.exists("/tmp")`` at line 8 of ``f_exists``: the break
# is inside the standard library. Payload cut after its first internal-traceback line.
STDLIB_BREAK = """\
Graph break in user code at <frozen genericpath>:19
Graph Break Reason: Encountered graph break when attempting to trace CALL: a function call, e.g. f(x, y):

Attempted to call function marked as skipped
  Explanation: Dynamo does not know how to trace the builtin `posix.stat.` This function is either a Python builtin (e.g. _warnings.warn) or a third-party C/C++ Python extension (perhaps created with pybind).
  Hint: If it is a Python builtin, please file an issue on GitHub so the PyTorch team can add support for it and see the next case for a workaround.
  Hint: If it is a third-party C/C++ Python extension, please either wrap it into a PyTorch-understood custom operator (see https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html for more details) or, if it is traceable, use `torch.compiler.allow_in_graph`.

  Developer debug context: module: posix, qualname: stat, skip reason: cannot determine source file for posix (likely a C extension or builtin)

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0007.html

User code traceback:
  File "/tmp/gen/prog_io.py", line 29, in <module>
    torch.compile(fn, backend="eager")(torch.ones(4))
  File "/tmp/gen/prog_io.py", line 8, in f_exists
    if os.path.exists("/tmp"):
       ^^^^^^^^^^^^^^^^^^^^^^^
  File "<frozen genericpath>", line 19, in exists

Traceback (most recent call last):
"""

# torch <= 2.6 spelling: one "Reason:" line, no explanation or hints, no graph-break id.
OLD_STYLE_BREAK = """\
Graph break in user code at /tmp/gen/f.py:3
Reason: Unsupported: builtin: print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] False
User code traceback:
  File "/tmp/gen/f.py", line 3, in f
    print("hello")

Traceback (most recent call last):
  File "/site-packages/torch/_dynamo/symbolic_convert.py", line 640, in wrapper
    return inner_fn(self, inst)
torch._dynamo.exc.Unsupported: builtin: print [<class 'torch._dynamo.variables.constant.ConstantVariable'>] False
"""


def test_item_break() -> None:
    event = parse_graph_break(ITEM_BREAK, "0/0")

    assert event.compile_id == "0/0"
    assert event.gb_type == "Unsupported Tensor.item() call with capture_scalar_outputs=False"
    assert event.site == SourceLine("/tmp/gen/prog_breaks.py", 6, "f", "if y.sum().item() > 0:")
    assert event.gb_id == "gb0124"
    assert event.explanation == (
        "Dynamo does not support tracing `Tensor.item()` with config.capture_scalar_outputs=False."
    )
    assert event.hints == [
        "Set `torch._dynamo.config.capture_scalar_outputs = True` or "
        "`export TORCHDYNAMO_CAPTURE_SCALAR_OUTPUTS=1` to include these operations in the "
        "captured graph."
    ]


def test_item_break_user_stack_stops_before_dynamos_own_traceback() -> None:
    event = parse_graph_break(ITEM_BREAK, "0/0")

    assert event.user_stack == [
        SourceLine(
            "/tmp/gen/prog_breaks.py",
            19,
            "<module>",
            'torch.compile(f, backend="eager")(torch.randn(4))',
        ),
        SourceLine("/tmp/gen/prog_breaks.py", 6, "f", "if y.sum().item() > 0:"),
    ]


def test_item_break_reason_keeps_the_message_not_the_link() -> None:
    reason = parse_graph_break(ITEM_BREAK, "0/0").reason

    assert reason.startswith("Graph Break Reason: Encountered graph break when attempting")
    assert "Unsupported Tensor.item() call" in reason
    assert "Developer debug context: call_method TensorVariable() item () {}" in reason
    assert "For more details" not in reason
    assert "User code traceback" not in reason
    assert "symbolic_convert.py" not in reason


def test_print_break_has_every_hint() -> None:
    event = parse_graph_break(PRINT_BREAK, "1/0")

    assert event.gb_type == "Failed to trace builtin operator"
    assert event.site == SourceLine("/tmp/gen/prog_breaks.py", 8, "f", 'print("hello")')
    assert event.gb_id == "gb0059"
    assert event.explanation.startswith(
        "Dynamo does not know how to trace builtin operator `print`"
    )
    assert event.hints == [
        "Avoid calling builtin `print` with argument types ['str']. Consider using an "
        "equivalent alternative function/method to `print`.",
        "If you are attempting to call a logging function (e.g. `print`), you can try adding "
        "it to `torch._dynamo.config.reorderable_logging_functions`.",
        "Please report an issue to PyTorch.",
    ]


def test_break_in_a_loop_names_the_first_break_and_its_site() -> None:
    event = parse_graph_break(LOOP_BREAK, "3/0")

    assert event.gb_type == "Call to `torch._dynamo.graph_break()`"
    assert event.site == SourceLine(
        "/tmp/gen/prog_breaks.py", 15, "g", "torch._dynamo.graph_break()"
    )
    assert event.gb_id == "gb0025"
    assert event.hints[0] == "Remove the `torch._dynamo.graph_break()` call."
    assert "graph break in loop" in event.reason
    assert "Stack variable source attribution" not in event.reason
    assert [frame.line for frame in event.user_stack] == [20, 15]


def test_break_inside_the_standard_library() -> None:
    # Dynamo names the innermost traced frame, here in the standard library; the user's line
    # is the frame before it.
    event = parse_graph_break(STDLIB_BREAK, "0/0")

    assert event.gb_type == "Attempted to call function marked as skipped"
    assert event.gb_id == "gb0007"
    assert event.site == SourceLine("<frozen genericpath>", 19, "exists", None)
    assert event.user_stack[-2] == SourceLine(
        "/tmp/gen/prog_io.py", 8, "f_exists", 'if os.path.exists("/tmp"):'
    )
    assert len(event.hints) == 2


def test_old_style_break() -> None:
    event = parse_graph_break(OLD_STYLE_BREAK, "2/0")

    assert event.gb_type == (
        "Unsupported: builtin: print "
        "[<class 'torch._dynamo.variables.constant.ConstantVariable'>] False"
    )
    assert event.site == SourceLine("/tmp/gen/f.py", 3, "f", 'print("hello")')
    assert event.hints == []
    assert event.explanation == ""
    assert event.gb_id is None
    assert event.reason.startswith("Reason: Unsupported: builtin: print")


def test_site_falls_back_to_the_user_code_line() -> None:
    text = "Graph break in user code at /tmp/gen/f.py:3\nReason: Unsupported: foo\n"

    event = parse_graph_break(text, "0/0")

    assert event.site == SourceLine("/tmp/gen/f.py", 3, None)
    assert event.user_stack == []
    assert event.gb_type == "Unsupported: foo"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "garbage",
        "Reason:",
        "Graph Break Reason:",
        "Graph Break Reason: x:\n",
        "User code traceback:",
        'User code traceback:\n  File "", line 1, in \n',
        "Graph break in user code at :\nReason: \x00\ufffd",
        '  File "a.py", line 99999999999999999999, in f',
        "Traceback (most recent call last)\nUser code traceback:\n",
        ITEM_BREAK[: len(ITEM_BREAK) // 3],
    ],
)
def test_garbage_does_not_raise(text: str) -> None:
    event = parse_graph_break(text, "0/0")

    assert event.compile_id == "0/0"
    assert isinstance(event.gb_type, str)
    assert isinstance(event.reason, str)


def test_garbage_first_line_becomes_the_type() -> None:
    event = parse_graph_break("something Dynamo never wrote\nmore", "0/0")

    assert event.gb_type == "something Dynamo never wrote"
    assert event.site is None


_fragments = st.sampled_from(
    [
        "Graph break in user code at f.py:3",
        "Graph Break Reason: x:",
        "Reason: Unsupported: y",
        "  Explanation: z",
        "  Hint: h",
        "User code traceback:",
        '  File "f.py", line 3, in f',
        "    code()",
        "    ^^^^",
        "Traceback (most recent call last):",
        "Stack variable source attribution:",
        " For more details, please visit: https://x/gb/gb0001.html",
        "",
    ]
)


@given(st.lists(_fragments | st.text(max_size=30), max_size=12))
def test_parse_graph_break_never_raises(lines: list[str]) -> None:
    event = parse_graph_break("\n".join(lines), "0/0")

    assert event.site is None or event.site.line is None or event.site.line >= 0


def test_parse_user_stack_skips_caret_lines_and_internal_lines() -> None:
    lines = [
        '  File "/tmp/gen/prog_breaks.py", line 6, in f',
        "    if y.sum().item() > 0:",
        "       ^^^^^^^^^^^^^^^^^^^",
        '  File "/tmp/gen/prog_breaks.py", line 7, in g',
        '  File "/tmp/gen/prog_breaks.py", line 8, in h',
        "       ~~~^^^",
    ]

    assert parse_user_stack(lines) == [
        SourceLine("/tmp/gen/prog_breaks.py", 6, "f", "if y.sum().item() > 0:"),
        SourceLine("/tmp/gen/prog_breaks.py", 7, "g", None),
        SourceLine("/tmp/gen/prog_breaks.py", 8, "h", None),
    ]


# --- one-line error summaries (check cells, ablate rungs) -------------------------------------


def _reshape(x: torch.Tensor) -> torch.Tensor:
    return x.view(-1, 3)


def test_error_summary_keeps_the_message_and_the_line_that_raised() -> None:
    """A real Dynamo error (a view that fails on fake tensors, in an inlined helper): its
    message as torch 2.13 writes it, then on one line without the boilerplate."""
    compiled = torch.compile(lambda x: _reshape(x) + 1, backend="eager")
    with pytest.raises(Exception) as caught:
        compiled(torch.randn(4))
    text = str(caught.value)
    assert "Hint:" in text and "from user code:" in text and "TORCHDYNAMO_VERBOSE" in text
    summary = error_summary(text)
    assert "\n" not in summary and "invalid for input of size 4" in summary
    for boilerplate in ("Hint:", "Developer debug context", "TORCHDYNAMO_VERBOSE", "gb/gb"):
        assert boilerplate not in summary
    line = _reshape.__code__.co_firstlineno + 1
    assert summary.endswith(f"(at {__file__}:{line} in _reshape: return x.view(-1, 3))")
    # The same frame, as data: ablate's known-site fix reads it, never the summary's text.
    stopped = stopped_at(text)
    assert stopped is not None
    assert (stopped.file, stopped.line, stopped.function) == (__file__, line, "_reshape")
    assert stopped_at("boom: no traceback") is None


def test_error_summary_of_a_plain_message_is_that_message() -> None:
    assert error_summary("boom:\n  a second line") == "boom: a second line"
