"""Dynamo: the compile id being compiled, code Dynamo must skip, the hooks that wrap each
compiled graph and each resume function below the backend, and ``torch.compile`` itself
(recording each call, forcing a backend)."""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable
from typing import Any

from pt2doctor.torchcompat.dispatch import describe_callable
from pt2doctor.torchcompat.version import ErrorCallback, ignore_error, supported

CompiledCallback = Callable[[str, Callable[..., Any]], Callable[..., Any]]
ResumeCallback = Callable[[types.CodeType, Any], Any]


def current_compile_id() -> str | None:
    """Dynamo's compile id being compiled right now (``"0/1"``), None outside a compile."""
    try:
        from torch._guards import CompileContext
    except ImportError:
        return None
    compile_id = CompileContext.current_compile_id()
    return None if compile_id is None else str(compile_id)


def skip_code(code: types.CodeType, recursive: bool = False) -> bool:
    """Tell Dynamo never to compile a frame of ``code`` (our probe wrappers must stay
    invisible to it), nor, with ``recursive``, any frame it calls (a recorder's own helpers).
    Inlined into a frame Dynamo traces, the code is still traced: a wrapper that may be
    inlined calls the original alone under ``torch.compiler.is_compiling()``."""
    try:
        from torch._dynamo.eval_frame import skip_code as dynamo_skip_code
    except ImportError:
        return False
    if not recursive:
        dynamo_skip_code(code)
        return True
    import torch._dynamo.eval_frame as eval_frame
    import torch._dynamo.types as dynamo_types

    strategy = getattr(eval_frame, "set_code_exec_strategy", None)
    action = getattr(dynamo_types, "FrameAction", None)
    make = getattr(dynamo_types, "FrameExecStrategy", None)
    if strategy is None or action is None or make is None:  # an older torch: this frame only
        dynamo_skip_code(code)
        return True
    strategy(code, make(action.SKIP, action.SKIP))
    return True


def _unwrapped(compiled: Any) -> Any:
    """Do what Dynamo does to a backend's result before wrapping it, since our wrapper hides
    the result from it: a lazy GraphModule's forward is compiled now (else every call goes
    through ``_lazy_forward``, ~3 us), and the backend's own ``disable()`` layer is dropped
    (Dynamo re-wraps once; two layers cost ~0.8 us per call)."""
    try:
        from torch._dynamo.eval_frame import innermost_fn
        from torch.fx._lazy_graph_module import _LazyGraphModule
    except ImportError:
        return compiled
    owner = getattr(compiled, "__self__", None)
    if isinstance(owner, _LazyGraphModule) and getattr(compiled, "__name__", "") == "_lazy_forward":
        _LazyGraphModule.force_recompile(owner)
        compiled = owner.forward
    elif isinstance(compiled, _LazyGraphModule):
        _LazyGraphModule.force_recompile(compiled)
    return innermost_fn(compiled)


# Active hooks: the OutputGraph methods are patched once; every capture (the ``run`` child,
# each ``watch()``) adds its callbacks here and removes them when it ends.
_graph_hooks: list[tuple[CompiledCallback, ErrorCallback]] = []
_resume_hooks: list[tuple[ResumeCallback, ErrorCallback]] = []


def _output_graph() -> Any:
    if not supported():
        return None
    try:
        from torch._dynamo.output_graph import OutputGraph
    except ImportError:
        return None
    return OutputGraph


def wrap_compiled_graphs(
    on_compiled: CompiledCallback, on_error: ErrorCallback = ignore_error
) -> bool:
    """Pass every compiled graph through ``on_compiled(compile_id, fn) -> fn`` before Dynamo
    installs it. Hooks ``OutputGraph.call_user_compiler``, below the backend, so ``mode=``,
    ``options=``, ``dynamic=`` and ``fullgraph=`` given to torch.compile still apply. A probe
    that fails reports to ``on_error`` and leaves the compiled graph as it was."""
    output_graph = _output_graph()
    original = getattr(output_graph, "call_user_compiler", None)
    if original is None:
        return False
    _graph_hooks.append((on_compiled, on_error))
    if getattr(original, "_pt2doctor", False):
        return True

    @functools.wraps(original)
    def call_user_compiler(self: Any, *args: Any, **kwargs: Any) -> Any:
        compiled = original(self, *args, **kwargs)
        if not _graph_hooks:
            return compiled
        result = compiled
        try:
            result = _unwrapped(compiled)
            for hook, _ in list(_graph_hooks):
                result = hook(current_compile_id() or "?", result)
            return result
        except Exception as error:  # never fail the user's compile because of a probe
            for _, report_error in list(_graph_hooks):
                report_error("graphs", error)
            return compiled

    call_user_compiler._pt2doctor = True  # type: ignore[attr-defined]
    output_graph.call_user_compiler = call_user_compiler
    return True


def wrap_resume_functions(
    on_resume: ResumeCallback, on_error: ErrorCallback = ignore_error
) -> bool:
    """Pass every resume function Dynamo installs after a graph break through
    ``on_resume(code, installed) -> installed``; calls to it are executions of that break."""
    output_graph = _output_graph()
    original = getattr(output_graph, "install_resume_function_global", None)
    if original is None:
        return False  # older torch installs resume functions inline: no break heat
    _resume_hooks.append((on_resume, on_error))
    if getattr(original, "_pt2doctor", False):
        return True

    @functools.wraps(original)
    def install(self: Any, name: str, code: types.CodeType, *args: Any, **kwargs: Any) -> None:
        original(self, name, code, *args, **kwargs)
        for hook, report_error in list(_resume_hooks):
            try:
                scope = getattr(self, "global_scope", None)
                if isinstance(scope, dict) and name in scope:
                    scope[name] = hook(code, scope[name])
            except Exception as error:  # never fail the user's compile because of a probe
                report_error("breaks", error)

    install._pt2doctor = True  # type: ignore[attr-defined]
    output_graph.install_resume_function_global = install
    return True


# The first calls of torch.compile a run records (a program that compiles per request would
# otherwise write one event per call).
MAX_COMPILE_CALLS = 20


def compiled_target(model: Any) -> dict[str, str]:
    """What a ``torch.compile`` call compiles, as a person names it: ``{"target": "module",
    "name": "T5ForConditionalGeneration"}``; ``nn.Module.compile()`` compiles the module's
    ``_call_impl`` (target ``module.compile()``); a bound method is ``Class.method``."""
    owner = getattr(model, "__self__", None)
    function = getattr(model, "__func__", None)
    if owner is not None and function is not None:
        cls = type(owner).__qualname__
        if function.__name__ == "_call_impl":
            return {"target": "module.compile()", "name": cls}
        return {"target": "method", "name": f"{cls}.{function.__name__}"}
    try:
        import torch

        if isinstance(model, torch.nn.Module):
            return {"target": "module", "name": type(model).__qualname__}
    except ImportError:
        pass
    name = getattr(model, "__qualname__", None) or type(model).__qualname__
    return {"target": "function", "name": str(name)}


def _wrap_torch_compile(marker: str, wrap: Callable[[Any], Callable[..., Any]]) -> bool:
    """Replace ``torch.compile`` with ``wrap(torch.compile)``, once per ``marker`` (pt2doctor's
    wrappers can stack); False when torch is not importable."""
    try:
        import torch
    except ImportError:
        return False
    original = torch.compile
    if getattr(original, marker, False):
        return True
    wrapper = functools.wraps(original)(wrap(original))
    setattr(wrapper, marker, True)
    torch.compile = wrapper
    return True


Call = Callable[[Callable[..., Any], Any, Any], Any]
"""How an intercepted compiled callable is called: ``call(compiled, args, kwargs)``."""


def intercept_compiled_calls(marker: str, make: Callable[[Any, Any], Call | None]) -> bool:
    """Replace ``torch.compile`` (once per ``marker``) so that the calls of what it returns for
    ``model`` go through ``make(compiled, model)`` (None: left as it is). A compiled module's
    ``forward`` is wrapped on the module torch.compile returned; ``module.compile()`` (in place)
    and the decorator form without a model are left alone. Intercepting never breaks the
    program's torch.compile call. False when torch is not importable."""

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_and_intercept(model: Any = None, **kwargs: Any) -> Any:
            compiled = original(model, **kwargs)
            if model is None:
                return compiled
            try:
                return _intercepted(compiled, model)
            except Exception:  # the program's torch.compile call must not fail for it
                return compiled

        def _intercepted(compiled: Any, model: Any) -> Any:
            call = make(compiled, model)
            if call is None:
                return compiled
            forward = getattr(compiled, "forward", None)
            if hasattr(compiled, "_orig_mod") and callable(forward):
                compiled.forward = functools.wraps(forward)(lambda *a, **k: call(forward, a, k))
                return compiled
            if callable(compiled):
                return functools.wraps(compiled)(lambda *a, **k: call(compiled, a, k))
            return compiled

        return compile_and_intercept

    return _wrap_torch_compile(marker, wrap)


COMPILE_SETTINGS = ("dynamic", "mode", "fullgraph", "backend", "options")
"""The torch.compile arguments each compile call records (what the user asked for)."""


def _setting(value: Any) -> Any:
    """A setting as JSON: None, bools, strings and numbers as they are; a backend callable by
    its name; an options dict with its values as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, dict):
        return {str(k): v if isinstance(v, bool | int | float | str) else repr(v)[:80]
                for k, v in list(value.items())[:20]}  # fmt: skip
    return getattr(value, "__name__", None) or type(value).__name__


def record_compile_calls(
    on_call: Callable[[dict[str, Any]], None],
    where: Callable[[], dict[str, Any] | None] = lambda: None,
) -> bool:
    """Report each ``torch.compile(model)`` call (the first MAX_COMPILE_CALLS) to ``on_call``:
    what it compiles (:func:`compiled_target`), the ``settings`` it was given
    (COMPILE_SETTINGS), and, from ``where()``, the user's line that called
    it (``capture.frames.caller_frame``: for ``@torch.compile(backend=...)``, the line where the
    decorator is applied). False when torch
    is not importable."""
    seen = [0]

    def report(model: Any, kwargs: dict[str, Any]) -> None:
        seen[0] += 1
        if seen[0] > MAX_COMPILE_CALLS:
            return
        # Recording must never break the program's torch.compile call.
        with contextlib.suppress(Exception):
            settings = {key: _setting(kwargs[key]) for key in COMPILE_SETTINGS if key in kwargs}
            mine = _users_backend(kwargs.get("backend"))
            on_call({**compiled_target(model), **(where() or {}), "n": seen[0],
                     "settings": settings, **({"user_backend": mine} if mine else {})})  # fmt: skip

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_and_record(model: Any = None, **kwargs: Any) -> Any:
            # @torch.compile(...) with options returns a decorator that calls torch.compile
            # again (this wrapper) with the function it decorates: that call is reported.
            if model is not None:
                report(model, kwargs)
            return original(model, **kwargs)

        return compile_and_record

    return _wrap_torch_compile("_pt2doctor_records", wrap)


def enable_dynamo() -> bool:
    """Turn Dynamo back on in a process started with ``TORCHDYNAMO_DISABLE=1`` (script mode's
    eager opcheck run compiles each op alone at exit); False where unavailable."""
    try:
        import torch._dynamo.config as config
    except ImportError:
        return False
    config.disable = False
    return True


def override_backend(backend: str | Callable[..., Any]) -> bool:
    """Make every ``torch.compile`` use ``backend`` (a name, or a backend callable); mode and
    options are dropped for any backend but Inductor, since the others reject them."""

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_with_backend(model: Any = None, **kwargs: Any) -> Any:
            kwargs["backend"] = backend
            if backend != "inductor":  # other backends reject Inductor's mode and options
                kwargs.pop("mode", None)
                kwargs.pop("options", None)
            return original(model, **kwargs)

        return compile_with_backend

    return _wrap_torch_compile("_pt2doctor", wrap)


def known_backends() -> list[str] | None:
    """Names ``torch.compile(backend=...)`` accepts here (debug backends included), or None."""
    try:
        from torch._dynamo import list_backends
    except ImportError:
        return None
    return sorted(set(list_backends(exclude_tags=())) | {"inductor", "eager"})


def original_module(model: Any) -> Any:
    """The module a ``torch.compile(module)`` wraps (its parameter names lack the wrapper's
    ``_orig_mod.`` prefix), or ``model`` itself."""
    try:
        from torch._dynamo.eval_frame import OptimizedModule
    except ImportError:
        return model
    return getattr(model, "_orig_mod", model) if isinstance(model, OptimizedModule) else model


def _users_backend(backend: Any) -> dict[str, Any] | None:
    """``{backend, function, file, line}`` of a torch.compile backend the program wrote (a
    function, or a name it registered); None for torch's own and for no backend."""
    if isinstance(backend, str):
        return user_backend(backend)
    if backend is None or not callable(backend):
        return None
    if str(getattr(backend, "__module__", "") or "").startswith("torch"):
        return None
    name = getattr(backend, "__name__", None) or type(backend).__name__
    return {"backend": name, **describe_callable(backend)}


def user_backend(name: str) -> dict[str, Any] | None:
    """The function behind backend ``name`` when the program registered it (its code lives
    outside torch), ``{backend, function, file, line}``; None for torch's own backends."""
    try:
        from torch._dynamo.backends.registry import lookup_backend
    except ImportError:
        return None
    try:
        function = lookup_backend(name)
    except Exception:  # an unknown name: the CLI reports it
        return None
    module = getattr(function, "__module__", "") or ""
    if module.startswith("torch"):
        return None
    return {"backend": name, **describe_callable(function)}
