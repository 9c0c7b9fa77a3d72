"""Where compiled numbers leave eager's: ``pt2doctor.compare_modules(model, *args)``.

The model runs three ways on the same weights and inputs: an fp64 reference (a float64 copy,
eager), eager in the program's dtype, and compiled. Forward hooks record every submodule's
inputs and output on the first call (nested tuples, dicts and dataclass outputs flattened).

Then the search, teacher-forced: a module M is compiled alone and fed the *eager* input
recorded at its boundary; compiled M and eager M are each measured against fp64 M fed the fp64
input, by check's own rule (cases/accuracy.py: allclose, else RMSE against fp64 within a
multiple of eager's). A module that fails introduces the error; one that passes only inherits
what arrives at its input. The descent starts at the model, goes into the first child (in
execution order) that introduces an error, and stops at a leaf, or where the parent introduces
it and no child alone does: the error appears only when its children are compiled together
(fused); then adjacent pairs of children are compiled with the others left eager, to name the
two whose fusion introduces it. Only the modules along the path are compiled.

At the culprit, the knobs that change numerics are tried on it alone, one at a time:
Inductor's ``emulate_precision_casts`` and ``fallback_random``, each Inductor pass hook the
program set switched off, ``max_autotune`` off (when on), and the float32 matmul precision
``highest`` (when lower). The first that makes it pass is ``cleared_by``: it names the
subsystem (a user pass), or says the difference is by design (random numbers, bf16 casts).
The culprit's kernels are named with the user's lines each came from (Inductor's provenance),
and where no knob clears it and Dynamo alone does not explain it, torch's compiler_bisector
runs on the culprit alone (cases/numerics_culprit.py): each of its reruns is one compile of
one module, seconds, not the program's.
With ``repro_dir``, a standalone repro of the culprit is written there
(cases/numerics_repro.py).

Every whole-model run starts from one seed, and a module compiled alone starts from the
generators' state recorded as eager called it, so a dropout draws alike where the compiled
code draws as eager does (``fallback_random``). Recording does not change what it measures:
the whole-model comparison is made without hooks first; the per-module table of the compiled
run (what each module's output inherited, for the modules the search compiled alone) is made
with them, and says whether the failure still showed. Gradients: cases/gradients.py.

Memory: each recorded value is written to a temporary file as it is recorded and read back
only while its module is compared (``_Spill``), so the search holds one module's recording at
a time beside the model; the fp64 copy of the model is dropped once it has run. Where the
recordings are large (``isolate``), each compile is made in a forked child (cases/forked.py),
so what twenty Inductor compiles leave behind in a process is not added to the peak.
``torch.compiler.reset()`` is called before each compile made here, so that compiles of many
instances of one class do not reach the recompile limit (and silently run eagerly).
"""

from __future__ import annotations

import copy
import gc
import inspect
import itertools
import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pt2doctor.cases.accuracy import (
    CHUNK,
    TensorComparison,
    _errors,
    _rmse,
    compare_tensor,
    default_tolerance,
    flatten_tensors,
)
from pt2doctor.cases.forked import can_fork, in_child, trim_heap
from pt2doctor.cases.numerics_culprit import bisect, culprit_kernels, kernel_lines

KNOBS = (("emulate_precision_casts", True), ("fallback_random", True))
"""Inductor config knobs tried at the culprit (each as ``name=value``)."""
MATMUL_PRECISION = "float32_matmul_precision='highest'"
SEED = 0
"""The seed every whole-model run starts from (eager, fp64, compiled)."""
ISOLATE_ABOVE_BYTES = 256 * 2**20
"""Recordings from which each compile of the search is made in a forked child by default
(cases/forked.py): below, the few MB each compile leaves behind do not matter and a child's
cold start (~0.2 s) would."""


@dataclass(slots=True)
class ModuleCheck:
    """One module compiled alone and fed eager's input: does it introduce the error?"""

    name: str
    kind: str
    """The module's class."""
    introduces: bool
    worst: dict[str, Any]
    """Its worst output tensor by check's rule (TensorComparison.as_dict)."""
    eager_rmse: float | None = None
    """RMSE of eager's output (every floating tensor) against fp64 M fed the fp64 input."""
    compiled_rmse: float | None = None
    """The same for M compiled alone, fed eager's input."""
    source: str | None = None
    """``file:line`` of its class's ``forward`` where the user wrote it (None: a library's)."""


@dataclass(slots=True)
class Comparison:
    """What :func:`compare_modules` found."""

    backend: str
    tolerance: float
    diverges: bool
    """The whole compiled model fails check's rule against eager (with fp64)."""
    whole: dict[str, Any]
    path: list[ModuleCheck] = field(default_factory=list)
    """The descent: each level's module that introduces the error (the culprit last)."""
    checked: list[ModuleCheck] = field(default_factory=list)
    """Every module compiled alone, in the order checked."""
    culprit: str | None = None
    culprit_kind: str | None = None
    culprit_source: str | None = None
    """``file:line`` of the culprit's ``forward``."""
    fused: bool = False
    """The culprit introduces the error while none of its children alone does, and not with
    its children left eager: only when they are compiled together."""
    fused_pair: list[str] | None = None
    """For a fused culprit: the two adjacent children (in execution order) that, compiled
    together with every other child left eager, still introduce the error."""
    own_code: bool = False
    """The culprit introduces the error with every child left eager (torch.compiler.disable):
    its own code, between its children, is where the numbers leave eager's."""
    knobs: dict[str, bool] = field(default_factory=dict)
    """A knob as set (``emulate_precision_casts=True``, ``post_grad_custom_post_pass=None``,
    ``max_autotune=False``, ``float32_matmul_precision='highest'``) -> whether the culprit
    passes with it (Inductor only)."""
    cleared_by: str | None = None
    """The first knob with which the culprit passes."""
    cleared_because: str | None = None
    """What that knob says of the cause: by design (random numbers, bf16 casts), or the
    subsystem (the program's pass, by name and file:line)."""
    dynamo_only: bool | None = None
    """When no knob clears it: whether the culprit compiled with Dynamo alone (backend
    ``eager``) still leaves eager's numbers: then what differs is the code Dynamo traces (a
    ``torch.compiler.is_compiling()`` branch, a custom op's kernel), not Inductor's."""
    custom_ops: list[str] = field(default_factory=list)
    """The custom ops (outside torch's namespaces) in the culprit's traced graph."""
    kernels: list[dict[str, Any]] = field(default_factory=list)
    """The kernels the compile made for the culprit alone, in launch order: ``name``,
    ``kind``, ``ops``, ``lines`` (the user's ``file:line: code`` each came from, by
    Inductor's provenance; cases/numerics_culprit.py). [] when not compiled by Inductor."""
    bisected: dict[str, Any] | None = None
    """When no knob clears it and Inductor compiled it: torch's compiler_bisector on the
    culprit alone (``backend``, ``subsystem``, ``bisect_number``, ``debug_info``,
    ``meaning``); None when not run."""
    repro: dict[str, Any] | None = None
    """With ``repro_dir``: the repro written (``path``, ``files``, ``lines``, ``standalone``,
    ``not_standalone_because``)."""
    inherited: list[dict[str, Any]] = field(default_factory=list)
    """Per module, the whole compiled run's output against eager's (recorded with hooks)."""
    hooks_kept_failure: bool | None = None
    """Whether the whole model still failed with the recording hooks on (None: it did not
    fail without them)."""
    notes: list[str] = field(default_factory=list)
    recorded_bytes: int = 0
    """The recorded tensors (eager's and fp64's inputs and outputs of every module), all
    written to temporary files and read back one module at a time (0 when nothing could be
    spilled)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        """The finding in a few lines, as a reader wants it."""
        if not self.diverges:
            return (f"compiled ({self.backend}) matches eager within check's rule (tolerance "
                    f"{self.tolerance:g}): nothing to localize; its largest error: "
                    f"{_said(self.whole)}")  # fmt: skip
        lines = [f"compiled ({self.backend}) leaves eager's numbers: {_said(self.whole)}"]
        for step in self.path:
            lines.append(f"  {step.name or '<model>'} ({step.kind}) introduces it alone: "
                         f"{_said(step.worst)}")  # fmt: skip
        if self.culprit is not None:
            where = f" at {self.culprit_source}" if self.culprit_source else ""
            pair = " and ".join(self.fused_pair or [])
            how = ((f": the error appears only when {pair} are compiled together (fused); "
                    "neither alone introduces it") if self.fused and self.fused_pair else
                   " only when its children are compiled together (fused); none alone does"
                   if self.fused else
                   " in its own code (its forward, between its children: each child left eager, "
                   "it still fails)" if self.own_code else "")  # fmt: skip
            lines.append(f"culprit: {self.culprit or '<model>'} ({self.culprit_kind}){where}{how}")
        for knob, passes in self.knobs.items():
            lines.append(f"  with {knob} it {'passes' if passes else 'still fails'}")
        if self.cleared_by is not None:
            lines.append(f"cleared by {self.cleared_by}: {self.cleared_because}")
        elif self.dynamo_only:
            ops = ", ".join(self.custom_ops)
            lines.append("  compiled by Dynamo alone (backend='eager') it still diverges: the "
                         "code Dynamo traces differs from what eager runs (a "
                         "torch.compiler.is_compiling() branch, a custom op's kernel), not "
                         "Inductor's kernels" + (f"; its graph calls {ops}: compare that "
                         "op's kernel with the eager path" if ops else ""))  # fmt: skip
        elif self.knobs:
            lines.append("  no knob clears it")
        if self.bisected is not None:
            lines.append(f"compiler_bisector on the culprit alone: {self.bisected['meaning']}")
        lines += [f"  kernel {line}" for line in kernel_lines(self.kernels)]
        if self.repro is not None:
            lines.append(f"repro: python {self.repro['path']}")
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


_MEANINGS = {
    "emulate_precision_casts": "by design: the compiled code keeps bf16/fp16 intermediates in "
    "float32 where eager rounds each op (use emulate_precision_casts=True to match eager)",
    "fallback_random": "by design: compiled code draws its random numbers (dropout, RNG) "
    "differently from eager; compare in eval mode or with fallback_random=True",
    "max_autotune": "an autotuned kernel choice (max_autotune) computes it differently",
    "float32_matmul_precision": "a lower float32 matmul precision (TF32) in the compiled kernels",
}


def _meaning(knob: str) -> str:
    """What the knob that cleared the culprit says about the cause."""
    name = knob.split("=", 1)[0]
    if name in _MEANINGS:
        return _MEANINGS[name]
    from pt2doctor.torchcompat.inductor import compiler_hooks

    for hook in compiler_hooks():
        if hook["hook"] == name:
            where = f" ({hook.get('file')}:{hook.get('line')})" if hook.get("file") else ""
            return (f"the program's {name} pass {hook.get('function')}{where} changes the "
                    "numbers: fix or drop that pass")  # fmt: skip
    return f"the program's {name} pass changes the numbers"


def _said(worst: dict[str, Any]) -> str:
    ratio = worst.get("rmse_ratio")
    ratio_text = f", RMSE {ratio:g}x eager's against fp64" if ratio is not None else ""
    return f"{worst.get('name')} max abs error {worst.get('max_abs_error')}{ratio_text} ({worst.get('rule')})"


def _map(value: Any, fn: Callable[[Any], Any]) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_map(v, fn) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return type(value)((k, _map(v, fn)) for k, v in value.items())
    return value


def _kept(value: Any) -> Any:
    return _map(value, lambda t: t.detach().clone())


def _fp64(value: Any) -> Any:
    return _map(value, lambda t: t.detach().double() if t.is_floating_point() else t.detach())


@dataclass(frozen=True, slots=True)
class _Spilled:
    """A recorded value written to a file (read back with :meth:`_Spill.load`)."""

    path: Path


class _Spill:
    """Where recordings go as they are made: each value (detached, cloned) is written to a
    file in a temporary folder and read back only when its module is compared, so what the
    search holds at a time is one module's recording, not the whole model's (a value that
    cannot be pickled stays in memory). ``recorded_bytes``: the tensors written, in all."""

    def __init__(self) -> None:
        import tempfile

        self.folder = Path(tempfile.mkdtemp(prefix="pt2doctor-numerics-"))
        self.count = 0
        self.recorded_bytes = 0

    def put(self, value: Any) -> Any:
        import torch

        kept = _kept(value)
        path = self.folder / f"{self.count}.pt"
        self.count += 1
        try:
            torch.save(kept, path)
        except Exception:  # an unpicklable argument: kept in memory instead
            path.unlink(missing_ok=True)
            return kept
        self.recorded_bytes += sum(t.numel() * t.element_size() for _, t in flatten_tensors(kept))
        del kept
        trim_heap()
        return _Spilled(path)

    @staticmethod
    def load(value: Any) -> Any:
        import torch

        if isinstance(value, _Spilled):
            return torch.load(value.path, weights_only=False)
        return value

    def __enter__(self) -> _Spill:
        return self

    def __exit__(self, *exc: object) -> None:
        import shutil

        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(slots=True)
class _Call:
    order: int
    args: Any
    kwargs: Any
    output: Any = None
    rng: Any = None
    """The random number generators' state as the module was called (restored to compile
    it alone: dropout draws the same numbers)."""
    grad_output: Any = None
    """With ``backward``: the gradient that arrived at the module's output."""

    def loaded(self) -> _Call:
        """This call with every spilled value read back (cases/numerics.py _Spill)."""
        load = _Spill.load
        return _Call(self.order, load(self.args), load(self.kwargs), load(self.output),
                     self.rng, load(self.grad_output))  # fmt: skip


@contextmanager
def _recording(
    model: Any,
    calls: dict[str, _Call],
    rng: bool = True,
    backward: bool = False,
    spill: _Spill | None = None,
    only: set[str] | None = None,
) -> Iterator[None]:
    """Each submodule's first call: its inputs (pre-hook, in call order), output, and with
    ``rng`` the generators' state (not in a compiled run: Dynamo cannot trace reading it);
    with ``backward``, instead of the output, the gradient arriving at it (a full backward
    hook: cases/gradients.py). With ``spill``, each value goes to its file as it is recorded
    (not in a compiled run: the hooks are traced). ``only``: the modules to record (all)."""
    handles = []
    keep: Callable[[Any], Any] = spill.put if spill is not None else _kept

    def pre(name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, kwargs: Any) -> None:
            if name not in calls:
                state = _rng_state() if rng else None
                calls[name] = _Call(len(calls), keep(args), keep(kwargs), rng=state)

        return hook

    def post(name: str) -> Callable[..., None]:
        def hook(module: Any, args: Any, kwargs: Any, output: Any) -> None:
            call = calls.get(name)
            if call is not None and call.output is None:
                call.output = keep(output)

        return hook

    def grad(name: str) -> Callable[..., None]:
        def hook(module: Any, grad_input: Any, grad_output: Any) -> None:
            call = calls.get(name)
            if call is not None and call.grad_output is None:
                call.grad_output = keep(grad_output)

        return hook

    for name, module in model.named_modules():
        if only is not None and name not in only:
            continue
        handles.append(module.register_forward_pre_hook(pre(name), with_kwargs=True))
        if backward:
            handles.append(module.register_full_backward_hook(grad(name)))
        else:
            handles.append(module.register_forward_hook(post(name), with_kwargs=True))
    try:
        with warnings.catch_warnings():
            if backward:  # a first module whose input needs no gradient: fine
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
            yield
    finally:
        for handle in handles:
            handle.remove()


def _worst(name: str, eager: Any, compiled: Any, fp64: Any, tol: float) -> TensorComparison:
    """The worst of a module's output tensors by check's rule (the first that fails, else the
    one with the largest error)."""
    rows = []
    fp64_tensors = dict(flatten_tensors(fp64, name))
    compiled_tensors = dict(flatten_tensors(compiled, name))
    for key, tensor in flatten_tensors(eager, name):
        if key in compiled_tensors:
            rows.append(compare_tensor(key, tensor, compiled_tensors[key], fp64_tensors.get(key),
                                       tol, cosine=False))  # fmt: skip
    if not rows:
        return compare_tensor(name, _empty(), _empty(), None, tol, cosine=False)
    failing = [row for row in rows if not row.passed]
    return failing[0] if failing else max(rows, key=lambda row: row.max_abs_error)


def _rmse_of(value: Any, reference: Any) -> float | None:
    """RMSE of every floating tensor of ``value`` against ``reference``'s, together (4
    significant digits; None when there is none)."""
    import torch

    ours, theirs = dict(flatten_tensors(value)), dict(flatten_tensors(reference))
    pairs = [(t, theirs[k]) for k, t in ours.items()
             if k in theirs and t.is_floating_point() and t.shape == theirs[k].shape]  # fmt: skip
    count = sum(t.numel() for t, _ in pairs)
    if not count:
        return None
    if count > CHUNK:  # large: squared errors summed tensor by tensor, slice by slice
        squares = sum(_rmse(r, t) ** 2 * t.numel() for t, r in pairs)
        return float(f"{math.sqrt(squares / count):.4g}")
    mine = torch.cat([t.flatten().double() for t, _ in pairs])
    reference_values = torch.cat([r.flatten().double() for _, r in pairs])
    return float(f"{_rmse(reference_values, mine):.4g}")


def _max_abs_error(value: Any, reference: Any) -> float | None:
    """The largest absolute difference between ``value``'s floating tensors and
    ``reference``'s, by check's own measure (cases/accuracy.py ``_errors``: slice by slice,
    the same inf in both no difference); None when they have none in common."""
    theirs = dict(flatten_tensors(reference))
    errors = [_errors(t, theirs[k], math.inf)[0] for k, t in flatten_tensors(value)
              if k in theirs and t.is_floating_point() and t.shape == theirs[k].shape]  # fmt: skip
    return float(f"{max(errors):.4g}") if errors else None


def _empty() -> Any:
    import torch

    return torch.zeros(0)


def _parent(name: str, called: set[str]) -> str | None:
    """The nearest ancestor that was called itself (a ModuleList is never called)."""
    parts = name.split(".")
    for end in range(len(parts) - 1, -1, -1):
        candidate = ".".join(parts[:end])
        if candidate in called:
            return candidate
    return None


def compare_modules(
    model: Any,
    *args: Any,
    backend: str | Callable[..., Any] = "inductor",
    tolerance: float | None = None,
    compile_fn: Callable[[Any], Callable[..., Any]] | None = None,
    repro_dir: str | Path | None = None,
    try_knobs: bool | None = None,
    isolate: bool | None = None,
    **kwargs: Any,
) -> Comparison:
    """Where ``torch.compile(model, backend=backend)`` leaves eager's numbers on
    ``model(*args, **kwargs)`` (see the module's doc). ``model`` is not changed.
    ``compile_fn``: how to compile a module instead (a check variant's settings).
    ``repro_dir``: where to write a standalone repro of the culprit. ``try_knobs``: try
    the numerics knobs at the culprit (default: when compiling with Inductor by name).
    ``isolate``: make each compile in a forked child (cases/forked.py); default: when the
    recordings reach ``ISOLATE_ABOVE_BYTES``, where memory is what limits the search."""
    from pt2doctor.inprocess.arguments import module_argument

    module_argument("compare_modules", model)
    with _Spill() as spill:
        return _compare(model, args, kwargs, backend, tolerance, compile_fn, repro_dir,
                        try_knobs, isolate, spill)  # fmt: skip


def _compare(
    model: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    backend: str | Callable[..., Any],
    tolerance: float | None,
    compile_fn: Callable[[Any], Callable[..., Any]] | None,
    repro_dir: str | Path | None,
    try_knobs: bool | None,
    isolate: bool | None,
    spill: _Spill,
) -> Comparison:
    import torch

    def compile_(module: Any) -> Callable[..., Any]:
        return compile_fn(module) if compile_fn is not None else _compile(module, backend)

    from pt2doctor.torchcompat.inductor import (
        inductor_config_patch,
        preload_compiler,
        warm_inductor_cpu,
    )

    dtypes = {str(t.dtype).removeprefix("torch.") for _, t in flatten_tensors((args, kwargs))
              if t.is_floating_point()}  # fmt: skip
    dtype = "bfloat16" if "bfloat16" in dtypes else "float16" if "float16" in dtypes else "float32"
    tol = tolerance if tolerance is not None else default_tolerance(dtype, False, None)
    name_of = backend if isinstance(backend, str) else getattr(backend, "__name__", "backend")
    if compile_fn is not None:
        name_of = getattr(compile_fn, "__name__", "the given compile")
    reference = copy.deepcopy(model).double()
    eager_calls: dict[str, _Call] = {}
    fp64_calls: dict[str, _Call] = {}
    with torch.no_grad():  # each run from the same seed: dropout draws alike where it can
        torch.manual_seed(SEED)
        with _recording(model, eager_calls, spill=spill):
            eager_out = model(*args, **kwargs)
        torch.manual_seed(SEED)
        with _recording(reference, fp64_calls, rng=False, spill=spill):
            fp64_out = reference(*_fp64(args), **_fp64(kwargs))
        del reference  # only its recordings are needed from here
    fork = isolate if isolate is not None else spill.recorded_bytes >= ISOLATE_ABOVE_BYTES
    fork = fork and can_fork()
    if fork:  # each compile in a child of its own: the compiler loaded here once
        preload_compiler()
        warm_inductor_cpu()

    def whole_compiled() -> Any:
        _reset()
        with torch.no_grad():
            torch.manual_seed(SEED)
            return compile_(model)(*args, **kwargs)

    compiled_out = in_child(whole_compiled, fork)
    whole = _worst("output", eager_out, compiled_out, fp64_out, tol)
    result = Comparison(name_of, tol, not whole.passed, whole.as_dict())
    result.recorded_bytes = spill.recorded_bytes
    if fork:
        result.notes.append(f"each compile was made in a forked child with one CPU thread "
                            f"(the recordings are {spill.recorded_bytes / 2**20:.0f} MB: "
                            f"memory, not time, limits this search)")  # fmt: skip
    if whole.passed:
        return result
    modules = dict(model.named_modules())
    called = set(eager_calls)

    def alone(name: str, patch: dict[str, Any] | None = None) -> ModuleCheck:
        def compiled_and_compared() -> ModuleCheck:
            call, module = eager_calls[name].loaded(), modules[name]
            _reset()
            knobs = dict(patch or {})
            precision = knobs.pop("float32_matmul_precision", None)
            with torch.no_grad(), inductor_config_patch(**knobs), _matmul_precision(precision):
                compiled = compile_(module)
                _set_rng_state(call.rng)
                out = compiled(*call.args, **call.kwargs)
            _let_compile_go(fork)
            reference = _Spill.load(fp64_calls[name].output)
            worst = _worst(name, call.output, out, reference, tol)
            return ModuleCheck(name, type(module).__name__, not worst.passed, worst.as_dict(),
                               _rmse_of(call.output, reference), _rmse_of(out, reference),
                               _source(type(module)))  # fmt: skip

        return in_child(compiled_and_compared, fork)

    def own_code(name: str, children: list[str]) -> bool:
        """Whether ``name`` still fails compiled with each of ``children``'s forward left
        eager (every child: its own code; all but two adjacent ones: those two together)."""
        kept = [modules[child] for child in children]
        disable: Callable[[Any], Any] = getattr(torch.compiler, "disable")  # noqa: B009
        for child in kept:
            child.forward = disable(child.forward)
        try:
            return alone(name).introduces
        finally:
            for child in kept:
                del child.forward

    node = ""
    result.path.append(ModuleCheck("", type(model).__name__, True, whole.as_dict(),
                                   _rmse_of(eager_out, fp64_out), _rmse_of(compiled_out, fp64_out),
                                   _source(type(model))))  # fmt: skip
    while True:
        children = sorted((n for n in called if n and _parent(n, called) == node),
                          key=lambda n: eager_calls[n].order)  # fmt: skip
        culprit = None
        for child in children:
            check = alone(child)
            result.checked.append(check)
            if check.introduces:
                culprit = check
                break
        if culprit is None:
            if children:
                result.own_code = own_code(node, children)
                result.fused = not result.own_code
            if result.fused and len(children) > 2:
                for first, second in itertools.pairwise(children):
                    others = [child for child in children if child not in (first, second)]
                    if own_code(node, others):
                        result.fused_pair = [first, second]
                        break
            elif result.fused:
                result.fused_pair = list(children)
            break
        result.path.append(culprit)
        node = culprit.name
    module = modules[node]
    result.culprit, result.culprit_kind = node, type(module).__name__
    result.culprit_source = _source(type(module))
    if try_knobs if try_knobs is not None else name_of == "inductor":
        for knob, patch in _knobs():
            result.knobs[knob] = passes = not alone(node, patch).introduces
            if passes and result.cleared_by is None:
                result.cleared_by, result.cleared_because = knob, _meaning(knob)
    if result.cleared_by is None:  # (with backend eager too: the graph's custom ops)
        result.dynamo_only, result.custom_ops = in_child(
            lambda: _dynamo_alone(modules[node], eager_calls[node].loaded(),
                                  fp64_calls[node].loaded(), tol),
            fork,
        )  # fmt: skip

    def kernels() -> list[dict[str, Any]]:
        call = eager_calls[node].loaded()
        _reset()
        with torch.no_grad():
            _set_rng_state(call.rng)
            found = culprit_kernels(lambda: compile_(modules[node])(*call.args, **call.kwargs))
        _reset()
        return found

    result.kernels = in_child(kernels, fork)
    if result.cleared_by is None and not result.dynamo_only and result.kernels:
        # Inductor compiled it and no knob explains it: which of its subsystems does.
        result.bisected = bisect(lambda: not alone(node).introduces)
    if repro_dir is not None:
        from pt2doctor.cases.numerics_repro import write_repro
        from pt2doctor.torchcompat.inductor import compiler_hooks

        call, fp64_call = eager_calls[node].loaded(), fp64_calls[node].loaded()
        named = backend if isinstance(backend, str) else "inductor"
        result.repro = write_repro(Path(repro_dir), module, (call.args, call.kwargs),
                                   (fp64_call.args, fp64_call.kwargs),
                                   named, tol, compiler_hooks(with_callable=True), node,
                                   result.culprit_source, result.custom_ops)  # fmt: skip
        if not isinstance(backend, str):
            result.repro["standalone"] = False
            result.repro["not_standalone_because"].append(
                f"the backend {name_of} is a function: the repro compiles with inductor"
            )
    # The path's modules only: what the table shows (ablate/render.py numerics_rows). Each
    # recorded output becomes an output of the compiled graph, held until the graph returns,
    # and changes its fusion: the fewer, the closer the hooked run is to the program's.
    shown = {""} | {step.name for step in result.path}
    result.inherited, result.hooks_kept_failure = in_child(
        lambda: _inherited(model, compile_, args, kwargs, eager_calls, fp64_calls, tol, shown,
                           (eager_out, fp64_out), fork),
        fork,
    )  # fmt: skip
    if result.hooks_kept_failure is False:
        result.notes.append("with the recording hooks on, the whole model passed: the hooks "
                            "changed what was compiled (fusion); the search above does not "
                            "use them")  # fmt: skip
    _reset()
    return result


def _inherited(
    model: Any,
    compile_: Callable[[Any], Callable[..., Any]],
    args: Any,
    kwargs: Any,
    eager_calls: dict[str, _Call],
    fp64_calls: dict[str, _Call],
    tol: float,
    only: set[str],
    outputs: tuple[Any, Any],
    forked: bool,
) -> tuple[list[dict[str, Any]], bool]:
    """The whole model compiled with the recording hooks on the modules ``only`` (the descent
    path's): each one's input against eager's (``input_max_abs_error``: the error it
    inherited) and its output (what it inherited and introduced), and
    whether the model's output still fails against ``outputs`` (eager's and fp64's). The
    recorded outputs are the compiled graph's outputs, so they are held together; eager's and
    fp64's are read back one module at a time (``forked``: in a child that lets its compile
    go first)."""
    import torch

    compiled_calls: dict[str, _Call] = {}
    _reset()
    with torch.no_grad(), _recording(model, compiled_calls, rng=False, only=only):
        torch.manual_seed(SEED)
        out = compile_(model)(*args, **kwargs)
    _let_compile_go(forked)
    rows = []
    for name, call in sorted(eager_calls.items(), key=lambda item: item[1].order):
        seen = compiled_calls.get(name)
        if seen is None or seen.output is None or not name:
            continue
        worst = _worst(name, _Spill.load(call.output), seen.output,
                       _Spill.load(fp64_calls[name].output), tol)  # fmt: skip
        inherited = _max_abs_error((_Spill.load(call.args), _Spill.load(call.kwargs)),
                                   (seen.args, seen.kwargs))  # fmt: skip
        rows.append({"module": name, "passed": worst.passed, **worst.as_dict(),
                     "input_max_abs_error": inherited})  # fmt: skip
        trim_heap()  # the module's eager and fp64 outputs, read back, are let go
    kept = not _worst("output", outputs[0], out, outputs[1], tol).passed
    return rows, kept


_TORCH_NAMESPACES = frozenset({"aten", "prims", "prim", "quantized", "_c10d_functional",
                               "c10d_functional", "_dtensor", "inductor", "higher_order"})  # fmt: skip


def _dynamo_alone(module: Any, call: _Call, fp64: _Call, tol: float) -> tuple[bool, list[str]]:
    """The culprit compiled with Dynamo alone (backend eager, which runs the traced graph as
    is) on eager's input: whether it still fails, and the custom ops its graph calls."""
    import torch

    ops: set[str] = set()

    def recording(gm: Any, example_inputs: Any) -> Any:
        for node in gm.graph.nodes:
            name = getattr(node.target, "_qualified_op_name", None)  # torch.ops.ns.op
            if name is None and callable(getattr(node.target, "name", None)):
                name = node.target.name()  # torch.ops.ns.op.default
            namespace = str(name).split("::", 1)[0] if name and "::" in str(name) else None
            if namespace is not None and namespace not in _TORCH_NAMESPACES:
                ops.add(str(name).split(".", 1)[0])
        return gm.forward

    _reset()
    with torch.no_grad():
        compiled: Callable[..., Any] = torch.compile(module, backend=recording)
        _set_rng_state(call.rng)
        out = compiled(*call.args, **call.kwargs)
    _reset()
    return not _worst("output", call.output, out, fp64.output, tol).passed, sorted(ops)


def _knobs() -> list[tuple[str, dict[str, Any]]]:
    """The knobs to try at the culprit, each as it reads and as the patch that sets it."""
    import torch

    from pt2doctor.torchcompat.inductor import compiler_hooks, max_autotune_on

    knobs: list[tuple[str, dict[str, Any]]] = [
        (f"{name}={value!r}", {name: value}) for name, value in KNOBS
    ]
    knobs += [(f"{hook['hook']}=None", {hook["hook"]: None}) for hook in compiler_hooks()]
    if max_autotune_on():
        knobs.append(("max_autotune=False", {"max_autotune": False, "max_autotune_gemm": False}))
    if torch.get_float32_matmul_precision() != "highest":
        knobs.append((MATMUL_PRECISION, {"float32_matmul_precision": "highest"}))
    return knobs


@contextmanager
def _matmul_precision(precision: str | None) -> Iterator[None]:
    """``torch.set_float32_matmul_precision`` for a block (public API)."""
    import torch

    if precision is None:
        yield
        return
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def _rng_state() -> Any:
    """The CPU generator's state, and each CUDA device's where CUDA is initialized."""
    import torch

    initialized: Callable[[], bool] = getattr(torch.cuda, "is_initialized")  # noqa: B009
    cuda = torch.cuda.get_rng_state_all() if initialized() else None
    return torch.random.get_rng_state(), cuda


def _set_rng_state(state: Any) -> None:
    import torch

    if state is None:
        return
    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


def _compile(module: Any, backend: Any) -> Callable[..., Any]:
    import torch

    compiled: Callable[..., Any] = torch.compile(module, backend=backend)
    return compiled


def _let_compile_go(forked: bool) -> None:
    """In a forked child, once the compiled code has run: its compile (Dynamo's caches, the
    graphs, Inductor's lowering) let go and the heap given back before the outputs are read
    back and compared, so the child's peak is the larger of the two, not their sum."""
    if forked:
        _reset()
        gc.collect()
        trim_heap()


def _reset() -> None:
    """``torch.compiler.reset()``: every compile cache dropped (public API, untyped)."""
    import torch

    reset: Callable[[], None] = getattr(torch.compiler, "reset")  # noqa: B009
    reset()


def _source(cls: type) -> str | None:
    """``file:line`` of the class's ``forward`` where the user wrote it (None for a library's
    module, torch.nn's Dropout: the report never points into library code)."""
    from pt2doctor.cases.numerics_repro import users_file

    try:
        forward = cls.forward  # type: ignore[attr-defined]
        file = users_file(forward)
        line = inspect.getsourcelines(forward)[1]
    except (AttributeError, OSError, TypeError):
        return None
    return f"{file}:{line}" if file else None
