"""Alignment of one cell: an fp64 reference, eager twice, compiled once, compared per tensor.

Training cells run ``steps`` optimizer steps from identical weights and compare the first
step's output and loss, the first step's gradients and the parameters after the last step.
Every run starts from the same seed. When eager drew random numbers, compiled code runs under
Inductor's ``fallback_random``, so dropout draws the same masks as eager and is not reported as
a bug; otherwise it compiles under the user's own config, so the FX graph and AOTAutograd cache
entries it writes are the ones the warmup that follows looks up (a hit, not a second build).
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Callable, Iterator
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.cases.accuracy import (
    TensorComparison,
    compare_tensor,
    default_tolerance,
    flatten_tensors,
    same_run,
)
from pt2doctor.cases.case import Built, Case, Cell

Compiler = Callable[[Any], Any]


def apply_layout(value: Any, layout: str) -> Any:
    """Same values, the cell's memory layout: channels_last for 4-d tensors, the last two
    dimensions transposed in memory for ``transposed``; other tensors are cloned as they are."""
    import torch

    if isinstance(value, torch.Tensor):
        tensor = value.detach()
        if layout == "channels_last" and tensor.dim() == 4:
            tensor = tensor.contiguous(memory_format=torch.channels_last)
        elif layout == "transposed" and tensor.dim() >= 2:
            tensor = tensor.transpose(-1, -2).contiguous().transpose(-1, -2)
        else:
            tensor = tensor.clone()
        return tensor.requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(apply_layout(item, layout) for item in value)
    if isinstance(value, dict):
        return {key: apply_layout(item, layout) for key, item in value.items()}
    return value


def to_fp64(value: Any) -> Any:
    """Floating tensors (and a module's parameters) in float64, for the reference run."""
    import torch

    if isinstance(value, torch.nn.Module):
        return copy.deepcopy(value).double()
    if isinstance(value, torch.Tensor):
        cast = value.detach().double() if value.is_floating_point() else value.detach().clone()
        return cast.requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(to_fp64(item) for item in value)
    if isinstance(value, dict):
        return {key: to_fp64(item) for key, item in value.items()}
    return value


@contextlib.contextmanager
def call_context(cell: Cell, autocast: bool = True) -> Iterator[None]:
    """Grad mode and autocast of the cell, around every call of the model."""
    import torch

    with contextlib.ExitStack() as stack:
        stack.enter_context(torch.set_grad_enabled(cell.grad or cell.train))
        if autocast and cell.autocast is not None:
            device_type = cell.device.split(":")[0]
            stack.enter_context(torch.autocast(device_type, getattr(torch, cell.autocast)))
        yield


def make_optimizer(built: Built, model: Any) -> Any:
    """The case's optimizer over ``model``'s parameters (default: SGD, lr=0.01)."""
    import torch

    params = list(model.parameters())
    return built.optimizer(params) if built.optimizer else torch.optim.SGD(params, lr=0.01)


def run_cell(
    built: Built,
    model: Any,
    cell: Cell,
    case: Case,
    autocast: bool = True,
    curve: list[float] | None = None,
) -> dict[str, Any]:
    """Run ``model`` on the cell's inputs; named result tensors (train: steps of training,
    each step's loss appended to ``curve`` when given)."""
    import torch

    inputs = apply_layout(built.inputs, cell.layout)
    kwargs = apply_layout(built.kwargs, cell.layout)
    if not autocast:  # the fp64 reference
        inputs, kwargs = to_fp64(inputs), to_fp64(kwargs)
    # detach() shares storage: the model's in-place writes show in these.
    before = flatten_tensors(list(inputs), "input") + flatten_tensors(kwargs, "input")
    snapshot = [tensor.clone() for _, tensor in before]
    torch.manual_seed(case.seed)
    if not cell.train:
        with call_context(cell, autocast):
            results = dict(flatten_tensors(model(*inputs, **kwargs)))
    elif built.loss is None or not isinstance(model, torch.nn.Module):
        raise ValueError("a training cell needs an nn.Module model and Built.loss")
    else:
        results = _train_steps(built, model, cell, case.steps, (inputs, kwargs), autocast, curve)
    # An input the model changed in place: its value after the call is a result too (compiled
    # code must write the same value back), named so the notes can say the model mutates it.
    for (name, tensor), old in zip(before, snapshot, strict=True):
        if not _same_values(old, tensor):
            results[f"{MUTATED}{name}"] = tensor.clone()
    return results


MUTATED = "mutated "
"""Prefix of a result that is an input's value after the call (the model changed it)."""


def _same_values(old: Any, new: Any) -> bool:
    import torch

    if old.shape != new.shape or old.dtype != new.dtype:
        return False
    if old.is_floating_point() or old.is_complex():  # a NaN the model left alone is unchanged
        return bool(torch.allclose(old, new, rtol=0.0, atol=0.0, equal_nan=True))
    return bool(torch.equal(old, new))


def _train_steps(
    built: Built,
    model: Any,
    cell: Cell,
    steps: int,
    call: tuple[Any, dict[str, Any]],
    autocast: bool,
    curve: list[float] | None = None,
) -> dict[str, Any]:
    assert built.loss is not None
    optimizer = make_optimizer(built, model)
    named = torchcompat.original_module(model).named_parameters
    results: dict[str, Any] = {}
    for step in range(steps):
        optimizer.zero_grad(set_to_none=True)
        with call_context(cell, autocast):
            output = model(*call[0], **call[1])
            loss = built.loss(output)
        loss.backward()
        if curve is not None:
            curve.append(float(loss.detach().double()))
        if step == 0:
            results.update(flatten_tensors(output))
            results["loss"] = loss.detach()
            results.update(
                {
                    f"grad.{name}": p.grad.detach().clone()
                    for name, p in named()
                    if p.grad is not None
                }
            )
        optimizer.step()
    results.update({f"param.{name}": p.detach().clone() for name, p in named()})
    return results


BAND_FACTOR = 3.0
"""The loss band around eager: this many times eager's own distance from fp64 (or from a
second eager run), plus the cell's tolerance."""


def loss_curve(
    eager: list[float], again: list[float], fp64: list[float], compiled: list[float], tol: float
) -> dict[str, Any]:
    """The loss per step of eager, fp64 and compiled, eager's band (``BAND_FACTOR`` times the
    larger of its run-to-run and its fp64 distance, plus ``tol`` relative to the loss), and
    ``left_at``: the first step (0-based) where compiled leaves it (None: never)."""
    band = [
        BAND_FACTOR * max(abs(a - e), abs(f - e)) + tol * max(1.0, abs(e))
        for e, a, f in zip(eager, again, fp64, strict=False)
    ]
    left = next((step for step, (e, c, b) in enumerate(zip(eager, compiled, band, strict=False))
                 if not abs(c - e) <= b), None)  # fmt: skip
    return {"steps": len(eager), "eager": eager, "fp64": fp64, "compiled": compiled,
            "band": band, "left_at": left}  # fmt: skip


@contextlib.contextmanager
def drew_random_numbers(case: Case) -> Iterator[list[bool]]:
    """Did the block draw from torch's random generators (dropout, rand...)? The block
    seeds it with ``case.seed`` itself (run_cell does), so the state after the block is
    compared with the freshly seeded one."""
    import torch

    def states() -> list[Any]:
        found = [torch.random.get_rng_state()]
        if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
            found.append(torch.cuda.get_rng_state())
        return found

    torch.manual_seed(case.seed)
    seeded = states()
    found = [False]
    yield found
    after = states()
    # A generator first used inside the block (CUDA initialized there) is not compared.
    found[0] = any(not torch.equal(a, b) for a, b in zip(seeded, after, strict=False))


def align_cell(
    case: Case,
    cell: Cell,
    compile_model: Compiler,
    fallback_random: bool = True,
    compiled_run: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    inductor: bool = False,
) -> dict[str, Any]:
    """The alignment verdict of one cell: pass, fail or nondeterministic, with per-tensor
    errors and stride warnings, and whether eager drew random numbers (``random_ops``).
    ``fallback_random`` applies only then; ``False`` compiles random ops as the user's program
    does (ablate's RNG toggle compares both). ``compiled_run()`` is entered around the compiled
    run alone (compiling and running it; not the eager runs, not the searches after it):
    ablate records there what the user's code changes while compiled code runs.
    ``inductor``: ``compile_model`` compiles with Inductor, so a failing cell's search tries
    the numerics knobs at its culprit (the program's own pass hooks among them)."""
    clock = [time.perf_counter()]

    def lap() -> float:  # seconds since the previous lap: where alignment's time goes
        clock.append(time.perf_counter())
        return round(clock[-1] - clock[-2], 6)

    built = case.build(cell)
    pristine = copy.deepcopy(built.model)
    tol = case.tolerance or default_tolerance(cell.dtype, cell.train, cell.autocast)
    seconds = {"build": lap()}
    curves: dict[str, list[float]] = {"eager": [], "again": [], "fp64": [], "compiled": []}
    with drew_random_numbers(case) as drew:
        eager = run_cell(built, built.model, cell, case, curve=curves["eager"])
    again = run_cell(built, copy.deepcopy(pristine), cell, case, curve=curves["again"])
    seconds["eager"] = lap()
    fp64 = _fp64_reference(built, pristine, cell, case, curves["fp64"])
    seconds["fp64_reference"] = lap()
    # Only where it changes numbers: it is part of Inductor's cache key.
    rng = torchcompat.fallback_random() if fallback_random and drew[0] else contextlib.nullcontext()
    with rng, compiled_run():
        compiled = run_cell(built, compile_model(copy.deepcopy(pristine)), cell, case,
                            curve=curves["compiled"])  # fmt: skip
    seconds["compiled"] = lap()
    rows = [
        compare_tensor(name, tensor, compiled[name], fp64.get(name), tol, case.cosine)
        if name in compiled
        else _missing(
            name,
            tensor,
            "eager changed this input in place, compiled code did not"
            if name.startswith(MUTATED)
            else "missing from compiled result",
        )
        for name, tensor in eager.items()
    ]
    curve = None
    if cell.train and curves["eager"] and len(curves["compiled"]) == len(curves["eager"]):
        curve = loss_curve(curves["eager"], curves["again"] or curves["eager"],
                           curves["fp64"] or curves["eager"], curves["compiled"], tol)  # fmt: skip
    unstable = same_run(eager, again, tol)
    verdict = "pass" if all(row.passed for row in rows) else "fail"
    if unstable:
        verdict = "nondeterministic"
    where = (_where(built, pristine, cell, compile_model, tol, inductor)
             if verdict == "fail" else None)  # fmt: skip
    if where is not None:
        seconds["where"] = lap()
    found: dict[str, Any] = {"where": where} if where is not None else {}
    if curve is not None:
        found["loss_curve"] = curve
    return {
        **found,
        "verdict": verdict,
        "tolerance": tol,
        "tensors": [row.as_dict() for row in rows],
        "stride_mismatches": [
            row.name for row in rows if row.stride_mismatch and row.name.startswith("output")
        ],
        "eager_nondeterministic": unstable,
        "fp64_reference": bool(fp64),
        "seconds": seconds,
        "random_ops": drew[0],
        "module_training": _training_flag(built.model),
        "mutated_inputs": [name[len(MUTATED) :] for name in eager if name.startswith(MUTATED)],
    }


def _where(
    built: Built,
    pristine: Any,
    cell: Cell,
    compile_model: Compiler,
    tol: float,
    inductor: bool = False,
) -> dict[str, Any] | None:
    """For a failing cell of an nn.Module: the module where compiled numbers leave eager's
    (cases/numerics.py: each module compiled alone on eager's recorded input); for a training
    cell whose forward matches, the module where the gradients do (cases/gradients.py, the
    cell's loss). None for an autocast cell, a function, or when the search itself fails: the
    verdict stands without it."""
    import torch

    from pt2doctor.cases.gradients import compare_gradients
    from pt2doctor.cases.numerics import compare_modules

    if cell.autocast or not isinstance(pristine, torch.nn.Module):
        return None
    inputs = apply_layout(built.inputs, cell.layout)
    kwargs = apply_layout(built.kwargs, cell.layout)
    try:
        found = compare_modules(copy.deepcopy(pristine), *inputs, tolerance=tol,
                                compile_fn=compile_model, try_knobs=inductor, **kwargs)  # fmt: skip
        grads = None
        if cell.train and not found.diverges and built.loss is not None:
            grads = compare_gradients(copy.deepcopy(pristine), *inputs, loss_fn=built.loss,
                                      tolerance=tol, compile_fn=compile_model, **kwargs)  # fmt: skip
    except Exception as error:
        return {"error": f"{type(error).__name__}: {error}"[:300]}
    if grads is not None and grads.diverges:
        return {
            "culprit": grads.culprit,
            "kind": grads.culprit_kind,
            "source": grads.culprit_source,
            "fused": False,
            "own_code": grads.own_code,
            "path": [step.name for step in grads.path],
            "gradients": True,
            "first": grads.first,
            "summary": grads.summary(),
        }
    if not found.diverges:
        said = found.summary() + ("\n" + grads.summary() if grads is not None else "")
        return {"culprit": None, "summary": said}
    return {
        "culprit": found.culprit,
        "kind": found.culprit_kind,
        "source": found.culprit_source,
        "fused": found.fused,
        "own_code": found.own_code,
        "path": [step.name for step in found.path],
        "cleared_by": found.cleared_by,
        "cleared_because": found.cleared_because,
        "dynamo_only": found.dynamo_only,
        "summary": found.summary(),
    }


def custom_op_calls(case: Case, cell: Cell) -> dict[str, tuple[Any, Any, Any]]:
    """The custom ops one eager run of the cell calls, each with the inputs of its first call
    (:func:`pt2doctor.torchcompat.record_custom_op_calls`, in the cell's grad mode)."""
    built = case.build(cell)

    def run() -> None:
        # A cell that fails in eager (a backward through an op without autograd) still
        # called its ops before it failed: those calls are what opcheck needs.
        with contextlib.suppress(Exception):
            run_cell(built, built.model, cell, case)

    return torchcompat.record_custom_op_calls(run, grad=cell.grad)


def _training_flag(model: Any) -> bool | None:
    """The built model's ``.training`` (None for a function): an eval cell whose model was
    left in training mode runs dropout and batch-norm updates as in training."""
    flag = getattr(model, "training", None)
    return flag if isinstance(flag, bool) else None


def _fp64_reference(
    built: Built, pristine: Any, cell: Cell, case: Case, curve: list[float] | None = None
) -> dict[str, Any]:
    """The float64 run, or {} when the model cannot run in float64 (then allclose decides)."""
    try:
        return run_cell(built, to_fp64(pristine), cell, case, autocast=False, curve=curve)
    except Exception:  # e.g. an op without a float64 kernel
        if curve is not None:
            curve.clear()
        return {}


def _missing(name: str, tensor: Any, rule: str) -> TensorComparison:
    return TensorComparison(
        name,
        list(tensor.shape),
        str(tensor.dtype),
        float("inf"),
        float("inf"),
        None,
        None,
        False,
        rule,
    )
