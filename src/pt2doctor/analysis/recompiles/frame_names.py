"""A frame name a user recognizes: ``GPT2LMHeadModel.forward``, not ``wrapper``.

Dynamo names a frame after its code object. When that code is a generic decorator's wrapper
(``functools.wraps`` copies the name onto the function object, not onto the code), the trace
says ``wrapper`` (transformers' ``can_return_tuple`` at ``utils/generic.py:1030``). Two facts in
the trace name what it wraps: the class of ``self`` (the guard tree types every local) and the
caller (``dynamo_start``'s stack): called from ``nn.Module.__call__``, the method is ``forward``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.ledger import FrameEntry
from pt2doctor.trace.patterns import lazy_compile

# Code names generic decorators give their inner function (wrapper, wrapped_func, _inner,
# decorate_context, ...): a name that says nothing about the user's code.
_GENERIC_WRAPPER = lazy_compile(r"wrap|^_*inner$|decorat", re.I)
# nn.Module.__call__ (``_wrapped_call_impl`` -> ``_call_impl``) calls ``self.forward``.
_MODULE_CALL = lazy_compile(r"/torch/nn/modules/module\.py$")
_MODULE_CALLERS = frozenset({"_call_impl", "_wrapped_call_impl", "__call__"})


def _wrapped_method(frame: FrameEntry) -> str | None:
    """``forward`` when the frame was called by nn.Module.__call__; None when unknown."""
    callers = [entry.record.caller for entry in frame.compiles if entry.record.caller]
    for caller in callers:
        if caller.function in _MODULE_CALLERS and _MODULE_CALL.search(caller.file or ""):
            return "forward"
    return None


_TENSOR_TYPES = frozenset({"Tensor", "Parameter", "FakeTensor", "FunctionalTensor"})
# What joins the wrapped method to the wrapper in a display name; renderers split on it.
THROUGH = " (through "


def wrapped_name(display: str) -> str:
    """The wrapped method alone (``GPT2LMHeadModel.forward``) of a display name."""
    return display.split(THROUGH)[0]


def names_its_wrapper(display: str) -> bool:
    """Whether a display name already says which wrapper (and where) the frame goes through."""
    return THROUGH in display


def _through(frame: FrameEntry) -> str:
    """``transformers' wrapper at utils/generic.py:1030``, or ``wrapper at models.py:12`` for a
    file outside site-packages (its name only: the frame's ``file`` holds the full path)."""
    where = library_path(frame.file or "")
    if where is None:
        return f"{frame.function} at {PurePosixPath(frame.file or '?').name}:{frame.line}"
    package, _, rest = where.partition("/")
    owner = f"{package}'" if package.endswith("s") else f"{package}'s"
    return f"{owner} {frame.function} at {rest or where}:{frame.line}"


def _class_name(frame: FrameEntry, field: str) -> str | None:
    """``Cls`` of the first compile whose record has the type ``field`` names."""
    found = next(
        (getattr(e.record, field) for e in frame.compiles if getattr(e.record, field)), None
    )
    return str(found).rsplit(".", 1)[-1] if found else None


def display_name(frame: FrameEntry) -> str:
    """The name to show for a frame: ``Cls.method`` when ``self``'s class is known, the wrapped
    method with the wrapper it goes through for a generic wrapper, else the function name."""
    function = frame.function or "?"
    if frame.is_resume:
        return function
    cls = _class_name(frame, "self_type")
    if _GENERIC_WRAPPER.search(function):
        method = _wrapped_method(frame)
        # A wrapper(*args, **kwargs) called as a bound method has self in args[0]; a tensor
        # there is the input (torch's own compile wrapper of a module), never self.
        first = _class_name(frame, "first_arg_type")
        cls = cls or (first if first not in _TENSOR_TYPES else None)
        if cls and method:
            return f"{cls}.{method}{THROUGH}{_through(frame)})"
        if method:
            return f"{method}{THROUGH}{_through(frame)})"
        return function
    return f"{cls}.{function}" if cls else function


def compiled_at_label(name: str, file: str | None, call: Mapping[str, Any] | None) -> str | None:
    """``LlamaDecoderLayer.forward (compiled at train.py:21)``: a frame whose code is a
    library's, named by the user's ``torch.compile`` call the run recorded; None for the
    user's own code or without a call (the frame's own place then names it)."""
    if not call or not call.get("file") or not file or library_path(file) is None:
        return None
    return f"{name.split(' (through ')[0]} (compiled at {call['file']}:{call.get('line')})"
