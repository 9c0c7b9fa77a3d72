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
from typing import Any, NamedTuple

from pt2doctor.analysis.paths import library_path
from pt2doctor.analysis.recompiles.ledger import FrameEntry
from pt2doctor.analysis.source_lines import enclosing_class
from pt2doctor.trace.messages import is_user_file
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


class FrameName(NamedTuple):
    """How a user knows a frame: ``name`` (``Cls.method``; for a generic wrapper, the method
    it wraps) and, for a wrapper, ``through`` (``transformers' wrapper at
    utils/generic.py:1030``: the wrapper and where it is)."""

    name: str
    through: str | None = None

    @property
    def display(self) -> str:
        """``GPT2LMHeadModel.forward (through transformers' wrapper at utils/generic.py:1030)``."""
        return self.name if self.through is None else f"{self.name} (through {self.through})"


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


def frame_name(frame: FrameEntry) -> FrameName:
    """The name to show for a frame: ``Cls.method`` when ``self``'s class is known, the wrapped
    method with the wrapper it goes through for a generic wrapper, else the function name."""
    function = frame.function or "?"
    if frame.is_resume:
        return FrameName(function)
    cls = _class_name(frame, "self_type")
    if _GENERIC_WRAPPER.search(function):
        method = _wrapped_method(frame)
        # A wrapper(*args, **kwargs) called as a bound method has self in args[0]; a tensor
        # there is the input (torch's own compile wrapper of a module), never self.
        first = _class_name(frame, "first_arg_type")
        cls = cls or (first if first not in _TENSOR_TYPES else None)
        if cls and method:
            return FrameName(f"{cls}.{method}", _through(frame))
        if method:
            return FrameName(method, _through(frame))
        return FrameName(function)
    if cls is None and frame.file and is_user_file(frame.file):
        cls = enclosing_class(frame.file, frame.line, frame.function)  # a skipped frame's
    return FrameName(f"{cls}.{function}" if cls else function)


def display_name(frame: FrameEntry) -> str:
    """:func:`frame_name` in one string (``frames[].display_name``)."""
    return frame_name(frame).display


def compiled_at_label(name: str, file: str | None, call: Mapping[str, Any] | None) -> str | None:
    """``LlamaDecoderLayer.forward (compiled at train.py:21)``: a frame whose code is a
    library's (``name``: :class:`FrameName`'s, without the wrapper), named by the user's
    ``torch.compile`` call the run recorded; None for the user's own code or without a call
    (the frame's own place then names it)."""
    if not call or not call.get("file") or not file or library_path(file) is None:
        return None
    if "." not in name and str(call.get("target", "")).startswith("module") and call.get("name"):
        name = f"{call['name']}.{name}"  # torch's wrapper of a compiled module: its class
    return f"{name} (compiled at {call['file']}:{call.get('line')})"
