"""Where the numbers diverge, in script mode: the program's own model and input, searched at
exit.

``pt2doctor ablate --accuracy-check CMD -- python infer.py`` has no case file to build the
model from, so one more run of the program does it: ``install`` (loaded in the child through
``capture.child``'s plugin hook) wraps ``torch.compile`` so that the first call of the first
compiled ``nn.Module`` saves a copy of the module as it was then (its weights before the call)
and the call's inputs, from a forward pre-hook on the compiled wrapper (it runs outside the
compiled frame). At exit, ``compare_modules`` searches that copy with the failing rung's
backend (cases/numerics.py), writes its repro, and records the result as a ``numerics`` probe
event; :func:`numerics_result` reads it back. A model compiled with ``Module.compile()`` (in
place) or a compiled function is not seen: the result says so.
"""

from __future__ import annotations

import atexit
import copy
import os
from pathlib import Path
from typing import Any

NUMERICS_BACKEND_ENV = "PT2DOCTOR_NUMERICS_BACKEND"
NUMERICS_REPRO_ENV = "PT2DOCTOR_NUMERICS_REPRO"
PLUGIN = "pt2doctor.ablate.script_numerics:install"


def install(recorder: Any) -> None:
    """In the child: keep the first compiled module's first call, search it at exit."""
    import torch

    from pt2doctor import torchcompat

    original = torch.compile
    saved: dict[str, Any] = {}

    def first_call(wrapper: Any, args: Any, kwargs: Any) -> None:
        if "model" not in saved:
            module = torchcompat.original_module(wrapper)
            saved["model"] = copy.deepcopy(module)
            saved["args"], saved["kwargs"] = copy.deepcopy(args), copy.deepcopy(kwargs)
            saved["grad"] = torch.is_grad_enabled()

    def compile_(model: Any = None, *args: Any, **kwargs: Any) -> Any:
        compiled: Any = original(model, *args, **kwargs)
        wrapped = isinstance(model, torch.nn.Module) and isinstance(compiled, torch.nn.Module)
        if wrapped and "hooked" not in saved:
            saved["hooked"] = True
            compiled.register_forward_pre_hook(first_call, with_kwargs=True)
        return compiled

    torch.compile = compile_

    def search() -> None:
        torch.compile = original
        if "model" not in saved:
            recorder.event("numerics", completed=False, detail="no compiled nn.Module was "
                           "called (a compiled function, or Module.compile() in place)")  # fmt: skip
            return
        from pt2doctor.cases.numerics import compare_modules

        try:
            found = compare_modules(
                saved["model"],
                *saved["args"],
                backend=os.environ.get(NUMERICS_BACKEND_ENV) or "inductor",
                repro_dir=os.environ.get(NUMERICS_REPRO_ENV) or None,
                **saved["kwargs"],
            )
        except Exception as error:  # the program's own result stands without it
            recorder.event(
                "numerics", completed=False, detail=f"the search failed: {error!r}"[:500]
            )
            return
        recorder.event("numerics", completed=True, **found.as_dict(), summary=found.summary())

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
