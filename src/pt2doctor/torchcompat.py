"""The only module that touches private torch APIs. Each accessor checks that what it needs is
there and degrades to "unavailable on this torch" (returns False/None) instead of crashing.

Used inside the *watched* process (``pt2doctor run``'s child, ``watch()``), never by ``report``,
which does not import torch at all. Imports of torch happen inside the functions.
"""

from __future__ import annotations

import contextlib
import functools
import types
import warnings
from collections.abc import Callable
from typing import Any

# (what it is, the oldest torch it was checked against): pt2doctor requires torch >= 2.6.
MIN_TORCH = (2, 6)

CompiledCallback = Callable[[str, Callable[..., Any]], Callable[..., Any]]
ResumeCallback = Callable[[types.CodeType, Any], Any]
ErrorCallback = Callable[[str, BaseException], None]


def _ignore_error(what: str, error: BaseException) -> None:
    return None


def torch_version() -> tuple[int, int] | None:
    """(major, minor) of the imported torch, or None when torch is not importable."""
    try:
        import torch
    except ImportError:
        return None
    parts = torch.__version__.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def supported() -> bool:
    version = torch_version()
    return version is not None and version >= MIN_TORCH


def current_compile_id() -> str | None:
    """Dynamo's compile id being compiled right now (``"0/1"``), None outside a compile."""
    try:
        from torch._guards import CompileContext
    except ImportError:
        return None
    compile_id = CompileContext.current_compile_id()
    return None if compile_id is None else str(compile_id)


def skip_code(code: types.CodeType) -> bool:
    """Tell Dynamo never to trace ``code`` (our probe wrappers must stay invisible to it)."""
    try:
        from torch._dynamo.eval_frame import skip_code as dynamo_skip_code
    except ImportError:
        return False
    dynamo_skip_code(code)
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
    on_compiled: CompiledCallback, on_error: ErrorCallback = _ignore_error
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
    on_resume: ResumeCallback, on_error: ErrorCallback = _ignore_error
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


def unwrap(callback: Any) -> None:
    """Stop passing graphs / resume functions / guard timings to ``callback`` (wrappers already
    made stay)."""
    _graph_hooks[:] = [hook for hook in _graph_hooks if hook[0] != callback]
    _resume_hooks[:] = [hook for hook in _resume_hooks if hook[0] != callback]
    _guard_hooks[:] = [hook for hook in _guard_hooks if hook[0] != callback]


def attach_trace_file(stream: Any) -> Callable[[], None] | None:
    """Write every structured trace record to ``stream`` in TORCH_TRACE format, in process
    (no TORCH_TRACE needed). Strings torch interned before now are written first so file
    names resolve. Returns ``detach``; None when unavailable on this torch."""
    import logging

    try:
        from torch._logging import structured
        from torch._logging._internal import TorchLogsFormatter, trace_log
    except ImportError:
        return None
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TorchLogsFormatter(trace=True))
    for text, index in list(getattr(structured, "INTERN_TABLE", {}).items()):
        record = logging.LogRecord(trace_log.name, logging.DEBUG, "pt2doctor", 0, "", None, None)
        record.metadata = {"str": [text, index]}
        record.payload = None
        stream.write(handler.format(record) + "\n")
    previous_level, previous_propagate = trace_log.level, trace_log.propagate
    trace_log.setLevel(logging.DEBUG)
    trace_log.propagate = False  # trace records are for our file, not the program's log handlers
    trace_log.addHandler(handler)

    def detach() -> None:
        trace_log.removeHandler(handler)
        if not trace_log.handlers:
            trace_log.setLevel(previous_level)
            trace_log.propagate = previous_propagate
        handler.flush()

    return detach


GUARD_TIMING_CHECKS = 200
GUARD_TIMING_BUDGET_S = 0.02  # at most ~20 ms per compile (at least 10 checks) for huge guard sets
GuardsCallback = Callable[[str, float], None]
_guard_hooks: list[tuple[GuardsCallback, ErrorCallback]] = []


def time_guards(on_timed: GuardsCallback, on_error: ErrorCallback = _ignore_error) -> bool:
    """Time every new variant's guards warm, right after Dynamo builds them: GUARD_TIMING_CHECKS
    checks (fewer past GUARD_TIMING_BUDGET_S) against the frame's own locals, then
    ``on_timed(compile_id, microseconds per check)``. torch's own ``guard_latency_us`` is one evaluation after a cache flush, 50-600 us
    where a warm check of the same guards takes ~1 us. Uses guards.py's
    ``guard_manager_testing_hook_fn`` (a private hook; one set before is still called), installed
    once; :func:`unwrap` removes ``on_timed``. False where unavailable."""
    try:
        from torch._dynamo import guards
    except ImportError:
        return False
    if not hasattr(guards, "guard_manager_testing_hook_fn"):
        return False
    _guard_hooks.append((on_timed, on_error))
    previous = guards.guard_manager_testing_hook_fn
    if getattr(previous, "_pt2doctor", False):
        return True

    def timed(guard_manager: Any, local_scope: Any, builder: Any) -> None:
        if previous is not None:
            previous(guard_manager, local_scope, builder)
        if _guard_hooks:
            _time_guard_check(guard_manager, local_scope)

    timed._pt2doctor = True  # type: ignore[attr-defined]
    guards.guard_manager_testing_hook_fn = timed
    return True


def _time_guard_check(guard_manager: Any, local_scope: Any) -> None:
    import time

    try:
        check, clock = guard_manager.check, time.perf_counter
        start = clock()
        deadline, done = start + GUARD_TIMING_BUDGET_S, 0
        while done < GUARD_TIMING_CHECKS and (done < 10 or clock() < deadline):
            check(local_scope)
            done += 1
        microseconds = round((clock() - start) / done * 1e6, 3)
    except Exception as error:  # never fail the user's compile because of a probe
        for _, report_error in list(_guard_hooks):
            report_error("guard_timing", error)
        return
    compile_id = current_compile_id() or "?"
    for hook, _ in list(_guard_hooks):
        hook(compile_id, microseconds)


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


def record_compile_calls(on_call: Callable[[dict[str, Any]], None]) -> bool:
    """Report each ``torch.compile(model)`` call (the first MAX_COMPILE_CALLS) to ``on_call``:
    what it compiles (:func:`compiled_target`) and the user's line that called it (for
    ``@torch.compile(backend=...)``, the line where the decorator is applied). False when torch
    is not importable."""
    from pt2doctor.capture.frames import caller_frame

    seen = [0]

    def report(model: Any) -> None:
        seen[0] += 1
        if seen[0] > MAX_COMPILE_CALLS:
            return
        # Recording must never break the program's torch.compile call.
        with contextlib.suppress(Exception):
            on_call({**compiled_target(model), **(caller_frame() or {}), "n": seen[0]})

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_and_record(model: Any = None, **kwargs: Any) -> Any:
            # @torch.compile(...) with options returns a decorator that calls torch.compile
            # again (this wrapper) with the function it decorates: that call is reported.
            if model is not None:
                report(model)
            return original(model, **kwargs)

        return compile_and_record

    return _wrap_torch_compile("_pt2doctor_records", wrap)


def override_backend(backend: str) -> bool:
    """Make every ``torch.compile`` use ``backend`` (fast triage); mode/options are dropped
    since other backends reject them."""

    def wrap(original: Any) -> Callable[..., Any]:
        def compile_with_backend(model: Any = None, **kwargs: Any) -> Any:
            kwargs["backend"] = backend
            if backend != "inductor":  # other backends reject Inductor's mode and options
                kwargs.pop("mode", None)
                kwargs.pop("options", None)
            return original(model, **kwargs)

        return compile_with_backend

    return _wrap_torch_compile("_pt2doctor", wrap)


def _config_changes(module: Any) -> dict[str, Any]:
    """Config values the program or the environment set (private ConfigModule layout):
    entries with a user override or a forcing environment variable; aliases and deprecated
    entries are left out (they mirror another entry)."""
    entries = getattr(module, "_config", None)
    try:
        from torch.utils._config_module import _UNSET_SENTINEL as unset
    except ImportError:
        return {}
    if not isinstance(entries, dict):
        return {}
    changed = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated configs warn when read
        for name, entry in entries.items():
            if getattr(entry, "alias", None) or getattr(entry, "deprecated", False):
                continue
            try:
                override = entry.user_override.get()
                forced = getattr(entry, "env_value_force", unset)
                value = getattr(module, name)
                # Mutable defaults are copied into the override on first read: compare too.
                if (override is not unset or forced is not unset) and value != entry.default:
                    changed[name] = repr(value)
            except Exception:  # a config whose getter fails is not worth crashing the program
                continue
    return changed


def environment() -> dict[str, Any]:
    """Environment fingerprint: python, torch, CUDA, Triton, GPU, changed compile config."""
    import platform

    info: dict[str, Any] = {"python_version": platform.python_version()}
    try:
        import torch
    except ImportError:
        return info
    info["torch_version"] = torch.__version__
    info["cuda_version"] = torch.version.cuda
    info["cuda_available"] = torch.cuda.is_available()
    initialized = torch.cuda.is_initialized()  # type: ignore[no-untyped-call]
    if info["cuda_available"] and initialized:  # never initialize CUDA ourselves
        info["gpu"] = torch.cuda.get_device_name(torch.cuda.current_device())
    try:
        import triton  # type: ignore[import-not-found]

        info["triton_version"] = triton.__version__
    except ImportError:
        info["triton_version"] = None
    config: dict[str, Any] = {}
    for label, module_name in (
        ("dynamo", "torch._dynamo.config"),
        ("inductor", "torch._inductor.config"),
    ):
        try:
            module = __import__(module_name, fromlist=["_config"])
        except ImportError:
            continue
        changes = _config_changes(module)
        if changes:
            config[label] = changes
    info["config_changes"] = config
    info["compiler_hooks"] = compiler_hooks()
    return info


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
    here = os.path.dirname(os.path.abspath(__file__))
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


def fallback_random() -> contextlib.AbstractContextManager[Any]:
    """Inductor's ``fallback_random`` on (random ops use eager's RNG, so dropout masks match
    eager's under the same seed); a no-op where the config does not exist."""
    try:
        from torch._inductor import config
    except ImportError:
        return contextlib.nullcontext()
    if not hasattr(config, "fallback_random"):
        return contextlib.nullcontext()
    patch: contextlib.AbstractContextManager[Any] = config.patch(fallback_random=True)
    return patch


def compile_modes() -> dict[str, dict[str, Any]] | None:
    """Inductor's compile modes and the options each sets (``list_mode_options``), or None."""
    try:
        from torch._inductor import list_mode_options
    except ImportError:
        return None
    modes: dict[str, dict[str, Any]] = {}
    for mode in ("default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"):
        modes[mode] = dict(list_mode_options(mode))
    try:
        every = list_mode_options()
    except TypeError:
        every = {}
    for mode, options in dict(every).items():
        modes.setdefault(str(mode), dict(options))
    return modes


def uses_cuda_graphs(options: dict[str, Any]) -> bool:
    return bool(options.get("triton.cudagraphs"))


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


def op_argument_names(op: Any) -> list[str] | None:
    """The argument names of an operator overload's schema (``op._schema``, a private
    attribute), or None when ``op`` has none."""
    schema = getattr(op, "_schema", None)
    arguments = getattr(schema, "arguments", None)
    if not isinstance(arguments, (list, tuple)):
        return None
    return [str(getattr(argument, "name", "")) for argument in arguments]


def bisect_compiler(passes: Callable[[], bool]) -> dict[str, Any]:
    """Run torch's ``compiler_bisector`` in process: it reruns ``passes`` (True: no failure;
    it must compile with ``backend="inductor"``, which the bisector overrides) with backends,
    then Inductor subsystems switched off, bisecting a subsystem's applications when it can.
    Returns ``{available, backend, subsystem, bisect_number, debug_info}``."""
    version = torch_version()
    try:
        from torch._inductor.compiler_bisector import CompilerBisector
    except ImportError:
        return {"available": False, "reason": "torch._inductor.compiler_bisector is missing"}
    if version is None or version < (2, 6) or not hasattr(CompilerBisector, "do_bisect"):
        return {"available": False, "reason": "unavailable on this torch"}
    result = CompilerBisector.do_bisect(passes, cli_interface=False)
    if result is None:
        return {"available": True, "backend": None, "subsystem": None, "bisect_number": None}
    return {
        "available": True,
        "backend": result.backend,
        "subsystem": result.subsystem,
        "bisect_number": result.bisect_number,
        "debug_info": result.debug_info,
    }


# Inductor's config entries that run user code during compilation (pass hooks).
COMPILER_HOOKS = (
    "pre_grad_custom_pass",
    "joint_custom_pre_pass",
    "joint_custom_post_pass",
    "post_grad_custom_pre_pass",
    "post_grad_custom_post_pass",
    "_pre_fusion_custom_pass",
    "_post_fusion_custom_pass",
    "custom_partitioner_fn",
)


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
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError:
        return {}
    seen: dict[str, tuple[Any, Any, Any]] = {}

    class CustomOpRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            from pt2doctor.analysis.user_side import TORCH_NAMESPACES

            namespace = getattr(func, "namespace", "aten")
            if namespace not in TORCH_NAMESPACES and str(func) not in seen:
                seen[str(func)] = (
                    func,
                    _clone_inputs(args, grad),
                    _clone_inputs(kwargs or {}, grad),
                )
            return func(*args, **(kwargs or {}))

    with CustomOpRecorder():  # type: ignore[no-untyped-call]
        fn()
    return seen


def describe_callable(value: Any) -> dict[str, Any]:
    """``{function, file, line}`` of a function, a bound method, a functools.partial or an
    object with ``__call__`` (Inductor's CustomGraphPass)."""
    import inspect

    target = getattr(value, "func", value)  # functools.partial
    if not (inspect.isfunction(target) or inspect.ismethod(target)):
        target = type(target).__call__ if callable(target) else target
    target = inspect.unwrap(target)
    code = getattr(target, "__code__", None)
    return {
        "function": getattr(target, "__qualname__", None) or repr(value)[:80],
        "file": code.co_filename if code else None,
        "line": code.co_firstlineno if code else None,
    }


def compiler_hooks() -> list[dict[str, Any]]:
    """Every Inductor pass hook the program set (``post_grad_custom_post_pass``...), each
    ``{hook, function, file, line}``; [] where the config is not importable."""
    try:
        from torch._inductor import config
    except ImportError:
        return []
    found = []
    for hook in COMPILER_HOOKS:
        value = getattr(config, hook, None)
        if value is not None and callable(value):
            found.append({"hook": hook, **describe_callable(value)})
    return found


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


def inductor_config_patch(**values: Any) -> contextlib.AbstractContextManager[Any]:
    """Inductor config entries set for a block (``fallback_random``, ``emulate_precision_casts``,
    a pass hook to None); entries this torch does not have are left out."""
    try:
        from torch._inductor import config
    except ImportError:
        return contextlib.nullcontext()
    known = {name: value for name, value in values.items() if hasattr(config, name)}
    if not known:
        return contextlib.nullcontext()
    patch: contextlib.AbstractContextManager[Any] = config.patch(known)
    return patch


def without_compiler_hooks() -> contextlib.AbstractContextManager[Any]:
    """Every pass hook the program set, switched off for a block."""
    return inductor_config_patch(**{hook["hook"]: None for hook in compiler_hooks()})


def warm_inductor_cpu() -> None:
    """Inductor's probe of the CPU's vector instruction sets (``valid_vec_isa_list``: a C++
    build and a fresh Python per instruction set, ~2.6 s on 2 cores, cached for the process):
    done once in the fork server, its forked workers skip it. Absent before torch 2.4."""
    try:
        from torch._inductor import cpu_vec_isa
    except ImportError:
        return
    probe = getattr(cpu_vec_isa, "valid_vec_isa_list", None)
    if probe is not None:
        try:
            probe()
        except Exception as error:  # a worker then probes for itself
            _ignore_error("probing the CPU's vector instruction sets", error)


def preload_compiler() -> None:
    """Import torch, Dynamo and Inductor's compile entry point (the fork server's preload);
    what a version lacks is skipped."""
    import torch  # noqa: F401

    for name in ("torch._dynamo", "torch._inductor.compile_fx"):
        try:
            __import__(name)
        except Exception as error:
            _ignore_error(f"preloading {name}", error)
