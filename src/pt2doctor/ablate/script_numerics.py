"""Where the numbers diverge, in script mode: the program's own model and input, searched at
exit.

``pt2doctor ablate --accuracy-check CMD -- python infer.py`` has no case file to build the
model from, so one more run of the program does it: ``install`` (loaded in the child through
``capture.child``'s plugin hook) wraps ``torch.compile`` and keeps, for each compiled unit the
program calls (up to ``MAX_UNITS``), a copy of the module as it was at its first call (its
weights before the call) and that call's inputs, taken outside the compiled frame:

- ``torch.compile(module)``: a forward pre-hook on the compiled wrapper;
- ``module.compile()`` (in place) and ``torch.compile(module.forward)``: the compiled method
  is wrapped, and its module kept;
- a compiled function: its first call runs eagerly (this run only feeds the search), and the
  first ``nn.Module`` it calls is kept.

A copy has every compiled part taken out (``Module.compile()``'s compiled call, a
``torch.compile`` wrapper child), so the search compiles it by its own rule. Regional
compilation (each block compiled) gives one unit per block. At exit, ``compare_modules``
searches the units in call order with the failing rung's backend (cases/numerics.py), stops at
the first that diverges, writes its repro, and records the result, with every unit searched,
as a ``numerics`` probe event; :func:`numerics_result` reads it back.
"""

from __future__ import annotations

import atexit
import copy
import functools
import os
import sys
from pathlib import Path
from typing import Any

NUMERICS_BACKEND_ENV = "PT2DOCTOR_NUMERICS_BACKEND"
NUMERICS_REPRO_ENV = "PT2DOCTOR_NUMERICS_REPRO"
PLUGIN = "pt2doctor.ablate.script_numerics:install"
MAX_UNITS = 16
"""The compiled units kept (a copy of each: with regional compilation, the model once more)."""


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _clean_copy(module: Any) -> Any:
    """A deep copy of ``module`` with every compiled part taken out: ``Module.compile()``'s
    compiled call, and each ``torch.compile`` wrapper child replaced by the module it wraps."""
    from pt2doctor import torchcompat

    kept = copy.deepcopy(torchcompat.original_module(module))
    for parent in list(kept.modules()):
        if getattr(parent, "_compiled_call_impl", None) is not None:
            parent._compiled_call_impl = None
        for name, child in list(parent.named_children()):
            inner = torchcompat.original_module(child)
            if inner is not child:
                setattr(parent, name, inner)
    for parent in kept.modules():  # the unwrapped children may hold compiled calls too
        if getattr(parent, "_compiled_call_impl", None) is not None:
            parent._compiled_call_impl = None
        # ``module.forward = torch.compile(module.forward)``: the copy's own forward again.
        forward = vars(parent).get("forward")
        if forward is not None and hasattr(forward, "_torchdynamo_orig_callable"):
            del parent.forward
    return kept


def install(recorder: Any) -> None:
    """In the child: keep each compiled unit's first call, search them at exit."""
    import torch

    from pt2doctor import torchcompat

    original = torch.compile
    units: list[dict[str, Any]] = []
    seen: set[int] = set()

    def keep(key: Any, module: Any, args: Any, kwargs: Any, how: str) -> None:
        if id(key) in seen or len(units) >= MAX_UNITS:
            return
        seen.add(id(key))
        units.append({"how": how, "kind": type(torchcompat.original_module(module)).__name__,
                      "model": _clean_copy(module), "args": copy.deepcopy(args),
                      "kwargs": copy.deepcopy(kwargs)})  # fmt: skip

    def first_call(wrapper: Any, args: Any, kwargs: Any) -> None:
        keep(wrapper, wrapper, args, kwargs, "torch.compile(module)")

    def method(compiled: Any, owner: Any, name: str) -> Any:
        how = "module.compile()" if name == "_call_impl" else f"torch.compile(module.{name})"

        @functools.wraps(compiled)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not torch.compiler.is_compiling():
                keep(owner, owner, args, kwargs, how)
            return compiled(*args, **kwargs)

        return call

    def function(compiled: Any, fn: Any) -> Any:
        tried: list[bool] = []
        name = getattr(fn, "__qualname__", None) or repr(fn)

        @functools.wraps(compiled)
        def call(*args: Any, **kwargs: Any) -> Any:
            if tried or torch.compiler.is_compiling():
                return compiled(*args, **kwargs)
            tried.append(True)
            module_call = torch.nn.Module.__call__

            def first(module: Any, *inner: Any, **named: Any) -> Any:
                torch.nn.Module.__call__ = module_call  # type: ignore[method-assign]
                keep(module, module, inner, named, f"called in the compiled function {name}")
                return module_call(module, *inner, **named)

            torch.nn.Module.__call__ = first  # type: ignore[method-assign]
            try:  # eagerly, this once: the first module it calls is kept
                return fn(*args, **kwargs)
            finally:
                torch.nn.Module.__call__ = module_call  # type: ignore[method-assign]

        return call

    def compile_(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        compiled: Any = original(model, *args, **kwargs)
        if model is None:  # torch.compile(mode=...) as a decorator: it calls this again
            return compiled
        owner = getattr(model, "__self__", None)
        if isinstance(model, torch.nn.Module) and isinstance(compiled, torch.nn.Module):
            compiled.register_forward_pre_hook(first_call, with_kwargs=True)
            return compiled
        if isinstance(owner, torch.nn.Module):
            return method(compiled, owner, getattr(model, "__name__", "forward"))
        if callable(model):
            return function(compiled, model)
        return compiled

    torch.compile = compile_

    def search() -> None:
        torch.compile = original
        if not units:
            recorder.event("numerics", completed=False, detail="no compiled nn.Module was "
                           "called, nor one inside a compiled function")  # fmt: skip
            return
        from pt2doctor.cases.numerics import compare_modules

        # At exit the interpreter has shut its thread pools: Inductor compiles in process.
        # And Python has dropped the script's __file__ (pass hooks hash it in their uuid()).
        main = sys.modules.get("__main__")
        if main is not None and not hasattr(main, "__file__") and sys.argv and sys.argv[0]:
            main.__file__ = os.path.abspath(sys.argv[0])
        with torchcompat.inductor_config_patch(compile_threads=1):
            _search(compare_modules)

    def _search(compare_modules: Any) -> None:
        searched: list[dict[str, Any]] = []
        found = None
        for index, unit in enumerate(units, 1):
            label = f"{unit['kind']} ({unit['how']}, the {_ordinal(index)} compiled unit called)"
            try:
                found = compare_modules(
                    unit["model"],
                    *unit["args"],
                    backend=os.environ.get(NUMERICS_BACKEND_ENV) or "inductor",
                    repro_dir=os.environ.get(NUMERICS_REPRO_ENV) or None,
                    **unit["kwargs"],
                )
            except Exception as error:  # the program's own result stands without it
                recorder.event("numerics", completed=False, searched=searched,
                               detail=f"the search of {label} failed: {error!r}"[:500])  # fmt: skip
                return
            searched.append({"unit": label, "diverges": found.diverges})
            unit["model"] = None  # searched: its copy is no longer needed
            if found.diverges:
                break
        assert found is not None
        recorder.event("numerics", completed=True, **found.as_dict(), summary=found.summary(),
                       unit=searched[-1]["unit"], searched=searched)  # fmt: skip

    atexit.register(search)


def numerics_result(run_dir: Path) -> dict[str, Any] | None:
    """The ``numerics`` event of a numerics run (None: the run ended before its search)."""
    from pt2doctor.rundir import PROBES_FILE
    from pt2doctor.rundir.read import read_jsonl

    events = read_jsonl(run_dir / PROBES_FILE) or []
    found = [event for event in events if event.get("kind") == "numerics"]
    if not found:
        return None
    return {k: v for k, v in found[-1].items() if k not in ("kind", "t", "rank")}
