"""Dispatch: the aten ops a function runs (``should_compile``), the custom ops a case calls
with their real inputs (opcheck), and where a callable is defined."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

# Operator namespaces that belong to torch itself; any other namespace is a custom op.
TORCH_NAMESPACES = frozenset(
    {
        "aten", "prims", "prim", "rngprims", "higher_order", "inductor", "c10d",
        "_c10d_functional", "c10d_functional", "_c10d_functional_autograd", "_dtensor",
        "debugprims", "profiler", "mkldnn", "onednn", "quantized", "_quantized",
        "quantized_decomposed", "_inductor_test", "autograd", "_test", "streams",
    }
)  # fmt: skip


def record_aten_ops(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> list[tuple[str, str | None]]:
    """Run ``fn`` eagerly and return the aten ops it dispatched, in order, each with the user
    source line (``file:line``) that issued it. Uses a TorchDispatchMode (private module)."""
    import os
    import traceback

    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    torch_dir = os.path.dirname(torch.__file__)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pt2doctor itself
    ops: list[tuple[str, str | None]] = []

    def user_site() -> str | None:
        for frame in reversed(traceback.extract_stack()):
            filename = os.path.abspath(frame.filename)
            if not filename.startswith((torch_dir, here)):
                return f"{frame.filename}:{frame.lineno}"
        return None

    class Recorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            ops.append((str(func), user_site()))
            return func(*args, **(kwargs or {}))

    with Recorder():  # type: ignore[no-untyped-call]
        fn(*args, **kwargs)
    return ops


def op_argument_names(op: Any) -> list[str] | None:
    """The argument names of an operator overload's schema (``op._schema``, a private
    attribute), or None when ``op`` has none."""
    schema = getattr(op, "_schema", None)
    arguments = getattr(schema, "arguments", None)
    if not isinstance(arguments, (list, tuple)):
        return None
    return [str(getattr(argument, "name", "")) for argument in arguments]


def _clone_inputs(value: Any, grad: bool = True) -> Any:
    """Detached copies of the tensors in ``value``; a floating-point copy requires grad where
    the original did, unless ``grad`` is False."""
    import torch

    if isinstance(value, torch.Tensor):
        copy = value.detach().clone()
        wanted = grad and value.requires_grad
        return copy.requires_grad_(wanted) if copy.is_floating_point() else copy
    if isinstance(value, (list, tuple)):
        return type(value)(_clone_inputs(item, grad) for item in value)
    if isinstance(value, dict):
        return {key: _clone_inputs(item, grad) for key, item in value.items()}
    return value


def record_custom_op_calls(
    fn: Callable[[], Any], grad: bool = True
) -> dict[str, tuple[Any, Any, Any]]:
    """Run ``fn`` eagerly under a TorchDispatchMode (private module) and return, for each op
    outside torch's own namespaces, ``{qualname: (op overload, args, kwargs)}`` with the inputs
    of its first call, cloned before the call (an op may mutate them). ``grad``: whether ``fn``
    runs with grad on (a cell's grad mode); off, no copy requires grad (a parameter passed into
    an op under no_grad needs no backward; grad mode cannot be read inside the mode). {} where
    unavailable."""
    with recording_custom_op_calls(grad) as seen:
        fn()
    return seen


@contextlib.contextmanager
def recording_custom_op_calls(grad: bool = True) -> Iterator[dict[str, tuple[Any, Any, Any]]]:
    """:func:`record_custom_op_calls` as a context: the dict it yields fills while the block
    (a whole program, in script mode's eager opcheck run) calls ops; it stays empty where the
    dispatch mode is unavailable."""
    seen: dict[str, tuple[Any, Any, Any]] = {}
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        yield seen
        return

    class CustomOpRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            namespace = getattr(func, "namespace", "aten")
            if namespace not in TORCH_NAMESPACES and str(func) not in seen:
                seen[str(func)] = (
                    func,
                    _clone_inputs(args, grad),
                    _clone_inputs(kwargs or {}, grad),
                )
            return func(*args, **(kwargs or {}))

    with CustomOpRecorder():  # type: ignore[no-untyped-call]
        yield seen


def describe_callable(value: Any) -> dict[str, Any]:
    """``{function, file, line}`` of a function, a bound method, a functools.partial or an
    object with ``__call__`` (Inductor's CustomGraphPass: then also ``instance_of``, its
    class)."""
    import inspect

    target = getattr(value, "func", value)  # functools.partial
    instance = None
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        if callable(target) and not inspect.isclass(target):
            instance = type(target).__qualname__
        target = type(target).__call__ if callable(target) else target
    target = inspect.unwrap(target)
    code = getattr(target, "__code__", None)
    found = {
        "function": getattr(target, "__qualname__", None) or repr(value)[:80],
        "file": code.co_filename if code else None,
        "line": code.co_firstlineno if code else None,
    }
    if instance is not None:  # an object called as the hook: a repro makes one again
        found["instance_of"] = instance
    return found
