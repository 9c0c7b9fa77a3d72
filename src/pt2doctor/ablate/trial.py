"""An ablation worker: ``python -m pt2doctor.ablate.trial SPEC.json`` runs, in a fresh
process, one rung of the ladder (``trial``), the module bisection plus the repro capture
(``modules``), or torch's compiler_bisector (``bisect``) on one cell of a case, and appends
each outcome to ``events.jsonl`` as it goes (a crash loses only the trial in flight)."""

from __future__ import annotations

import contextlib
import copy
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.ablate.classify import same_failure, smallest_failing
from pt2doctor.ablate.hook_changes import HOOK_CHANGES
from pt2doctor.capture.frames import user_frames
from pt2doctor.cases.align import align_cell, custom_op_calls, run_cell
from pt2doctor.cases.case import Case, Cell, cells
from pt2doctor.cases.loader import spec_case
from pt2doctor.forkserver import exit_now
from pt2doctor.workers import Emit, one_line, serve

# A toggle's name -> the compiler setting it changes for one trial.
TOGGLES = ("fallback_random", "emulate_precision_casts", "no_user_hooks", "hook_guards")


@dataclass(frozen=True, slots=True)
class Settings:
    """How a trial compiles: the backend, ``dynamic=``, Inductor's ``mode``, ``fullgraph=``,
    and one of :data:`TOGGLES` (None: as the user's program compiles)."""

    backend: str
    dynamic: bool | None = None
    mode: str | None = None
    fullgraph: bool = False
    toggle: str | None = None

    def context(self) -> contextlib.AbstractContextManager[Any]:
        """The toggle's config change (``fallback_random`` is applied by the alignment)."""
        if self.toggle == "emulate_precision_casts":
            return torchcompat.inductor_config_patch(emulate_precision_casts=True)
        if self.toggle == "no_user_hooks":
            return torchcompat.without_compiler_hooks()
        if self.toggle == "hook_guards":  # Dynamo guards on module hooks (ablate/hook_verdict)
            return torchcompat.hook_guards(skip=False)
        return contextlib.nullcontext()

    def kwargs(self) -> dict[str, Any]:
        found: dict[str, Any] = {"backend": self.backend}
        if self.dynamic is not None:
            found["dynamic"] = self.dynamic
        if self.mode is not None and self.backend == "inductor":
            found["mode"] = self.mode
        if self.fullgraph:
            found["fullgraph"] = True
        return found

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> Settings:
        return cls(
            str(spec["backend"]),
            spec.get("dynamic"),
            spec.get("mode"),
            bool(spec.get("fullgraph")),
            spec.get("toggle"),
        )


def _chain(error: BaseException) -> list[BaseException]:
    """The error and what caused it (Dynamo wraps a backend's error in BackendCompilerFailed)."""
    found: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in found and len(found) < 10:
        found.append(current)
        inner = getattr(current, "inner_exception", None)
        current = inner if isinstance(inner, BaseException) else current.__cause__
    return found


def error_fields(error: BaseException) -> dict[str, Any]:
    chain = _chain(error)
    names = sorted({cls.__name__ for e in chain for cls in type(e).__mro__} - {"object"})
    return {
        "error": one_line(error),
        "root_error": one_line(chain[-1]),
        "error_types": names,
        "root_type": type(chain[-1]).__name__,
        "traceback": traceback.format_exc()[-3000:],
        "user_frames": user_frames(error)[:5],
        "stopped_at": _stopped_at(str(error)),
    }


def _stopped_at(message: str) -> dict[str, Any] | None:
    """Where Dynamo stopped in the user's code (its ``from user code:`` traceback), or None."""
    from pt2doctor.trace.messages import stopped_at

    frame = stopped_at(message)
    return None if frame is None else frame.as_dict()


def is_user_module(module: Any) -> bool:
    """torch's own modules (nn.Linear...) are no candidates: Dynamo skips frames inside torch,
    so compiling one of them alone compiles nothing."""
    return not type(module).__module__.startswith("torch.")


def user_children(model: Any, path: str) -> list[str]:
    """Paths of the nearest user-defined modules below ``path`` (through torch containers such
    as nn.Sequential and nn.ModuleList)."""
    found: list[str] = []
    module = model.get_submodule(path)
    for name, child in module.named_children():
        child_path = f"{path}.{name}" if path else name
        found += [child_path] if is_user_module(child) else user_children(model, child_path)
    return found


def compile_target(model: Any, target: str, settings: Settings) -> Any:
    """Compile ``target`` (a submodule path; "" for the whole model) in place: parameter names
    stay the same, and the children of an nn.Sequential really run compiled."""
    import torch

    if not isinstance(model, torch.nn.Module):
        return torch.compile(model, **settings.kwargs())
    model.get_submodule(target).compile(**settings.kwargs())
    return model


def _worst(tensors: list[dict[str, Any]]) -> dict[str, Any] | None:
    failing = [t for t in tensors if not t["passed"]] or tensors
    return max(failing, key=lambda t: t["max_abs_error"] or float("inf"), default=None)


def trial(case: Case, cell: Cell, settings: Settings, target: str = "") -> dict[str, Any]:
    """Eager once (a model that fails eagerly is not the compiler's problem), then the cell's
    alignment with ``target`` compiled: ok, diverged, nondeterministic or crash, with the
    module hooks the user's code changed while the compiled model ran, after a compile
    (``hook_changes``: ablate/hook_changes.py)."""
    import torch

    torch.compiler.reset()
    built = case.build(cell)
    try:
        run_cell(built, copy.deepcopy(built.model), cell, case)
    except Exception as error:
        return {"status": "eager_error", **error_fields(error)}
    HOOK_CHANGES.start()
    try:
        with settings.context():
            result = align_cell(
                case,
                cell,
                lambda model: compile_target(model, target, settings),
                fallback_random=settings.toggle == "fallback_random",
                compiled_run=HOOK_CHANGES.compiled_run,
                inductor=settings.backend == "inductor",
            )
    except Exception as error:
        return {"status": "crash", **error_fields(error), "hook_changes": HOOK_CHANGES.found()}
    finally:
        torch.compiler.reset()
    status = {"pass": "ok", "fail": "diverged"}.get(result["verdict"], result["verdict"])
    return {
        "status": status,
        "tolerance": result["tolerance"],
        "worst": _worst(result["tensors"]),
        "failed_tensors": [t["name"] for t in result["tensors"] if not t["passed"]],
        "random_ops": result["random_ops"],
        "hook_changes": HOOK_CHANGES.found(),
    }


def _case_cell(spec: dict[str, Any]) -> tuple[Case, Cell]:
    case = spec_case(spec)
    return case, {c.id: c for c in cells(case)}[spec["cell"]]


def run_modules(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    """Bisect the module tree for the smallest submodule that reproduces ``spec['failure']``,
    then write the repro for it (or for the whole model)."""
    from pt2doctor.ablate.repro import write_repro

    case, cell = _case_cell(spec)
    settings = Settings.from_spec(spec)
    reference = spec["failure"]
    model = case.build(cell).model

    def reproduces(path: str) -> bool:
        emit("trial_start", target=path)
        outcome = trial(case, cell, settings, path)
        hit = same_failure(reference, outcome)
        emit("module_trial", target=path, reproduced=hit, **outcome)
        return hit

    found: str | None = None
    if spec.get("bisect_modules", True) and hasattr(model, "named_children"):
        found, _ = smallest_failing(lambda path: user_children(model, path), reproduces)
    emit("modules_done", module=found)
    if spec.get("repro_dir"):
        emit("trial_start", target="repro")
        try:
            written = write_repro(Path(spec["repro_dir"]), case, cell, found or "", spec)
        except Exception as error:  # the report says why there is no repro, never null
            written = {"written": False, "reason": f"writing the repro failed: {one_line(error)}"}
        emit("repro", **written)


def run_bisect(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    """torch's compiler_bisector, in process: it reruns the trial with layers and Inductor
    subsystems switched off until it finds the one that makes the failure go away."""
    case, cell = _case_cell(spec)
    settings = Settings.from_spec({**spec, "backend": "inductor"})
    reference = spec["failure"]

    def passes() -> bool:
        return not same_failure(reference, trial(case, cell, settings, spec.get("target", "")))

    emit("trial_start", target="bisect")
    emit("bisect", **torchcompat.bisect_compiler(passes))


def run_trial(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    case, cell = _case_cell(spec)
    emit("environment", torch_version=(torchcompat.torch_version() or (0, 0)))
    emit("trial_start", target=spec.get("target", ""))
    outcome = trial(case, cell, Settings.from_spec(spec), spec.get("target", ""))
    hooks = torchcompat.compiler_hooks()  # what the case file set, as the trial compiled
    emit("trial", **outcome, hooks=hooks, user_backend=torchcompat.user_backend(spec["backend"]))


def run_custom_ops(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    """Every custom op the cell's eager run calls, checked alone on the inputs it received:
    torch.library.opcheck and eager vs compiled with the failing rung's backend."""
    from pt2doctor.inprocess.custom_ops import check_recorded_call

    case, cell = _case_cell(spec)
    emit("trial_start", target="custom ops")
    calls = custom_op_calls(case, cell)
    for name, (op, args, kwargs) in calls.items():
        emit("trial_start", target=f"opcheck {name}")
        emit("custom_op", **check_recorded_call(name, op, args, kwargs, spec["backend"]))
    emit("custom_ops_done", ops=list(calls))


def run_numerics(spec: dict[str, Any], out: Path, emit: Emit) -> None:
    """Where the numbers diverge (cases/numerics.py ``compare_modules``) for a diverged cell
    of an nn.Module: each module compiled alone on eager's recorded input, down to the
    culprit; the knobs at it (Inductor); a repro in ``spec['repro_dir']``. For a training cell
    whose forward matches, ``gradients``: where the gradients do (cases/gradients.py, the
    cell's loss)."""
    import torch

    from pt2doctor.cases.align import apply_layout
    from pt2doctor.cases.gradients import compare_gradients
    from pt2doctor.cases.numerics import compare_modules

    case, cell = _case_cell(spec)
    settings = Settings.from_spec(spec)
    built = case.build(cell)
    why = ("an autocast cell" if cell.autocast
           else None if isinstance(built.model, torch.nn.Module)
           else "the case compiles a function, not an nn.Module")  # fmt: skip
    if why is not None:
        emit("numerics", skipped=why)
        return
    emit("trial_start", target="numerics")
    inputs, kwargs = (
        apply_layout(built.inputs, cell.layout),
        apply_layout(built.kwargs, cell.layout),
    )

    def compile_fn(module: Any) -> Any:
        return torch.compile(module, **settings.kwargs())

    compile_fn.__name__ = str(settings.backend)  # as the summary names the compile
    found = compare_modules(copy.deepcopy(built.model), *inputs, backend=settings.backend,
                            compile_fn=compile_fn, repro_dir=spec.get("repro_dir"),
                            try_knobs=settings.backend == "inductor", **kwargs)  # fmt: skip
    gradients = None
    if cell.train and not found.diverges and built.loss is not None:
        emit("trial_start", target="numerics gradients")
        grads = compare_gradients(copy.deepcopy(built.model), *inputs, loss_fn=built.loss,
                                  compile_fn=compile_fn, **kwargs)  # fmt: skip
        gradients = {**grads.as_dict(), "summary": grads.summary()}
    emit("numerics", **found.as_dict(), summary=found.summary(), gradients=gradients)


KINDS = {
    "trial": run_trial,
    "numerics": run_numerics,
    "modules": run_modules,
    "bisect": run_bisect,
    "custom_ops": run_custom_ops,
}


def main(argv: list[str] | None = None) -> int:
    return serve(argv, lambda spec: KINDS[spec["kind"]], error_fields)


if __name__ == "__main__":
    exit_now(main())
