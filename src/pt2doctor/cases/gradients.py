"""Where compiled gradients leave eager's: ``pt2doctor.compare_gradients(model, *args)``.

The model runs forward and backward three ways, each on its own copy (the caller's model and
its ``.grad`` are untouched), from one seed: an fp64 reference, eager in the program's dtype,
and compiled. ``loss_fn(output)`` (default: the sum of every floating output) is
backpropagated. Each module's own parameters' gradients (``recurse=False``) are compared by
check's rule (cases/accuracy.py, training tolerance): compiled against eager, with fp64 as the
reference. ``first``: the first module, in backward order, whose gradients fail.

Then the search, teacher-forced as the forward one (cases/numerics.py): a module M is run
alone on the input eager recorded at its boundary, and backpropagated from the gradient eager
recorded at its output (a full backward hook), scaled by the power of two that brings its RMS
nearest 1 (exact; see ``_unit_scale``); compiled M and eager M are each measured
against fp64 M fed the fp64 input and gradient. A module fails when its parameters' or its
input's gradients do: it introduces the error; one that passes only inherits it. The descent
starts at the model and goes into the first child, in backward order (the reverse of
execution order), that introduces it, to a leaf or to a module whose own code (or whose
children together) introduce it. It applies to modules whose output is one tensor; the others
are skipped, and said so.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pt2doctor.cases.accuracy import (
    TensorComparison,
    compare_tensor,
    default_tolerance,
    flatten_tensors,
)
from pt2doctor.cases.numerics import (
    SEED,
    ModuleCheck,
    _Call,
    _map,
    _parent,
    _recording,
    _reset,
    _source,
    _Spill,
)

GradientCheck = ModuleCheck
"""One module run alone from eager's input and output gradient: does it introduce it? Its
``worst`` is its worst gradient (a parameter's, or an input's) by check's rule."""


@dataclass(slots=True)
class GradientComparison:
    backend: str
    tolerance: float
    diverges: bool
    """Some module's parameter gradients fail check's rule in the whole compiled run."""
    modules: list[dict[str, Any]] = field(default_factory=list)
    """Per module with parameters, in backward order: ``module``, ``kind``, ``passed`` and its
    worst gradient (TensorComparison.as_dict)."""
    first: str | None = None
    """The first module in backward order whose gradients fail in the whole run."""
    path: list[GradientCheck] = field(default_factory=list)
    checked: list[GradientCheck] = field(default_factory=list)
    culprit: str | None = None
    culprit_kind: str | None = None
    culprit_source: str | None = None
    """``file:line`` of the culprit's ``forward`` where the user wrote it (None in a
    library's module)."""
    own_code: bool = False
    """The culprit introduces it while none of its children alone does."""
    skipped: list[str] = field(default_factory=list)
    """Modules the teacher-forced search could not run alone (an output that is not one
    tensor), each with why."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        if not self.diverges:
            return (f"compiled ({self.backend}) gradients match eager's within check's rule "
                    f"(training tolerance {self.tolerance:g}): nothing to localize")  # fmt: skip
        bad = [row["module"] or "<model>" for row in self.modules if not row["passed"]]
        lines = [f"compiled ({self.backend}) gradients leave eager's in {len(bad)} modules; "
                 f"first in backward order: {self.first or '<model>'}"]  # fmt: skip
        for step in self.path[1:]:
            lines.append(f"  {step.name} ({step.kind}) introduces it alone: "
                         f"{step.worst.get('name')} max abs error {step.worst.get('max_abs_error')}")  # fmt: skip
        if self.culprit is not None:
            how = " (in its own code: none of its children alone does)" if self.own_code else ""
            where = f" at {self.culprit_source}" if self.culprit_source else ""
            lines.append(f"culprit: {self.culprit or '<model>'} ({self.culprit_kind}){where}{how}")
        lines += [f"note: {note}" for note in self.skipped]
        return "\n".join(lines)


def _floating(value: Any) -> list[Any]:
    """The floating tensors of a nested output, still attached to the graph."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value] if value.is_floating_point() else []
    if isinstance(value, dict):
        value = list(value.values())
    elif not isinstance(value, (list, tuple)):
        value = list(getattr(value, "__dict__", {}).values())
    return [tensor for item in value for tensor in _floating(item)]


def _default_loss(output: Any) -> Any:
    tensors = _floating(output)
    total = tensors[0].float().sum()
    for tensor in tensors[1:]:
        total = total + tensor.float().sum()
    return total


def _leaves(value: Any, double: bool = False) -> Any:
    """``value`` with every floating tensor a fresh leaf that requires grad."""

    def leaf(tensor: Any) -> Any:
        tensor = tensor.detach().clone()
        if tensor.is_floating_point():
            tensor = (tensor.double() if double else tensor).requires_grad_(True)
        return tensor

    return _map(value, leaf)


def _unit_scale(grad: Any) -> float:
    """The power of two that brings ``grad``'s RMS nearest 1. Backward is linear in the
    gradient arriving at the output, and scaling by a power of two is exact in floating point,
    so a module run alone from eager's output gradient times this computes the same numbers,
    scaled; check's rule (allclose with an absolute tolerance first) then judges gradients of
    a mean-reduced loss (1e-3 and below) as it judges values near 1, instead of passing them
    all."""
    import math

    rms = float(grad.detach().double().pow(2).mean().sqrt()) if grad.numel() else 0.0
    if not math.isfinite(rms) or rms == 0.0:
        return 1.0
    return float(2.0 ** round(-math.log2(rms)))


def _param_grads(module: Any) -> dict[str, dict[str, Any]]:
    """Per module name, its own parameters' gradients."""
    found: dict[str, dict[str, Any]] = {}
    for name, sub in module.named_modules():
        own = {p_name: p.grad for p_name, p in sub.named_parameters(recurse=False)
               if p.grad is not None}  # fmt: skip
        if own:
            found[name] = own
    return found


def _judge(
    name: str, eager: dict[str, Any], compiled: dict[str, Any], fp64: dict[str, Any], tol: float
) -> TensorComparison:
    rows = [compare_tensor(f"{name}.{key}" if name else key, tensor, compiled[key], fp64.get(key),
                           tol, cosine=False)
            for key, tensor in eager.items() if key in compiled]  # fmt: skip
    failing = [row for row in rows if not row.passed]
    if failing:
        return failing[0]
    return max(rows, key=lambda row: row.max_abs_error)


def compare_gradients(
    model: Any,
    *args: Any,
    backend: str | Callable[..., Any] = "inductor",
    loss_fn: Callable[[Any], Any] | None = None,
    tolerance: float | None = None,
    compile_fn: Callable[[Any], Callable[..., Any]] | None = None,
    **kwargs: Any,
) -> GradientComparison:
    """Where ``torch.compile(model, backend=backend)``'s gradients leave eager's (see the
    module's doc). ``model`` and its gradients are not changed. ``compile_fn``: how to compile
    a module instead (a check variant's settings). The recordings are spilled
    to files as cases/numerics.py's are, and read back one module at a time."""
    from pt2doctor.inprocess.arguments import module_argument

    module_argument("compare_gradients", model)
    with _Spill() as spill:
        return _compare(model, args, kwargs, backend, loss_fn, tolerance, compile_fn, spill)


def _compare(
    model: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    backend: str | Callable[..., Any],
    loss_fn: Callable[[Any], Any] | None,
    tolerance: float | None,
    compile_fn: Callable[[Any], Callable[..., Any]] | None,
    spill: _Spill,
) -> GradientComparison:
    import torch

    def compile_(module: Any) -> Callable[..., Any]:
        if compile_fn is not None:
            return compile_fn(module)
        compiled: Callable[..., Any] = torch.compile(module, backend=backend)
        return compiled

    loss = loss_fn or _default_loss
    dtypes = {str(t.dtype).removeprefix("torch.") for _, t in flatten_tensors((args, kwargs))
              if t.is_floating_point()}  # fmt: skip
    dtype = "bfloat16" if "bfloat16" in dtypes else "float16" if "float16" in dtypes else "float32"
    tol = tolerance if tolerance is not None else default_tolerance(dtype, True, None)
    name_of = backend if isinstance(backend, str) else getattr(backend, "__name__", "backend")
    if compile_fn is not None:
        name_of = getattr(compile_fn, "__name__", "the given compile")
    eager_model, compiled_model = copy.deepcopy(model), copy.deepcopy(model)
    reference = copy.deepcopy(model).double()
    for copy_ in (eager_model, compiled_model, reference):
        copy_.zero_grad(set_to_none=True)
    eager_calls: dict[str, _Call] = {}
    fp64_calls: dict[str, _Call] = {}
    torch.manual_seed(SEED)
    with _recording(eager_model, eager_calls, rng=False, backward=True, spill=spill):
        loss(eager_model(*args, **kwargs)).backward()
    torch.manual_seed(SEED)
    with _recording(reference, fp64_calls, rng=False, backward=True, spill=spill):
        loss(reference(*_leaves(args, True), **_leaves(kwargs, True))).backward()
    _reset()
    torch.manual_seed(SEED)
    loss(compile_(compiled_model)(*args, **kwargs)).backward()
    eager_grads, fp64_grads = _param_grads(eager_model), _param_grads(reference)
    compiled_grads = _param_grads(compiled_model)
    order = sorted(eager_grads, key=lambda name: -eager_calls[name].order
                   if name in eager_calls else 0)  # fmt: skip
    modules = dict(model.named_modules())
    result = GradientComparison(name_of, tol, False)
    for name in order:
        worst = _judge(name, eager_grads[name], compiled_grads.get(name, {}),
                       fp64_grads.get(name, {}), tol)  # fmt: skip
        result.modules.append({"module": name, "kind": type(modules[name]).__name__,
                               "passed": worst.passed, **worst.as_dict()})  # fmt: skip
        if not worst.passed and result.first is None:
            result.first = name
    result.diverges = result.first is not None
    if not result.diverges:
        return result

    def alone(name: str) -> GradientCheck | None:
        call, fp64_call = eager_calls[name].loaded(), fp64_calls[name].loaded()
        outputs = [t for t in (call.grad_output or ()) if isinstance(t, torch.Tensor)]
        if len(outputs) != 1:
            result.skipped.append(f"{name}: its output is not one tensor, so it is not run "
                                  "alone")  # fmt: skip
            return None
        scale = _unit_scale(outputs[0])
        runs = {}
        for label, source, call_, double in (("eager", eager_model, call, False),
                                             ("fp64", reference, fp64_call, True),
                                             ("compiled", eager_model, call, False)):  # fmt: skip
            module = copy.deepcopy(source.get_submodule(name))
            module.zero_grad(set_to_none=True)
            run: Callable[..., Any] = module
            if label == "compiled":
                _reset()
                run = compile_(module)
            inputs, named = _leaves(call_.args, double), _leaves(call_.kwargs, double)
            out = run(*inputs, **named)
            grad = call_.grad_output[0] * scale
            out.backward(grad.double() if double else grad)
            grads = {key: value for key, value in _param_grads(module).get("", {}).items()}
            for index, tensor in enumerate(_floating(inputs)):
                if tensor.grad is not None:
                    grads[f"input{index}"] = tensor.grad
            runs[label] = grads
        worst = _judge(name, runs["eager"], runs["compiled"], runs["fp64"], tol)
        return GradientCheck(name, type(modules[name]).__name__, not worst.passed, worst.as_dict())

    called = set(eager_calls)
    node = ""
    first = next(row for row in result.modules if row["module"] == result.first)
    result.path.append(GradientCheck("", type(model).__name__, True, first))
    while True:
        children = sorted((n for n in called if n and _parent(n, called) == node),
                          key=lambda n: -eager_calls[n].order)  # fmt: skip
        culprit = None
        for child in children:
            check = alone(child)
            if check is None:
                continue
            result.checked.append(check)
            if check.introduces:
                culprit = check
                break
        if culprit is None:
            result.own_code = bool(children)
            break
        result.path.append(culprit)
        node = culprit.name
    result.culprit, result.culprit_kind = node, type(modules[node]).__name__
    result.culprit_source = _source(type(modules[node]))
    _reset()
    return result
