"""The case API: a user declares an input matrix and a factory that builds a model for one cell.

A *case file* (``CASES.py``) defines ``CASES = [Case(...), ...]``::

    from pt2doctor.cases import Built, Case, Cell, Matrix

    def build(cell: Cell) -> Built:
        model = Block().to(cell.device, cell.torch_dtype)
        model.train(cell.train)
        x = torch.randn(8, cell.shape, 32, device=cell.device, dtype=cell.torch_dtype)
        return Built(model, (x,), loss=lambda out: out.float().pow(2).mean())

    CASES = [Case("block", build, Matrix(shapes={"short": 16, "long": 64},
                                          dtypes=("float32", "bfloat16"), train=(False, True)))]

Axes that change the *model* (dtype, train/eval, device, named Python state) split the matrix
into *groups*: one model, one compiled artifact, one worker process per group. Axes that change
only the *call* (shape bucket, layout, grad mode, autocast) vary inside a group, so warmup over
a group's cells is exactly the set of variants a deployment of that model will compile.
"""

from __future__ import annotations

import fnmatch
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LAYOUTS = ("contiguous", "channels_last", "transposed")
DTYPES = ("float32", "float64", "float16", "bfloat16")


@dataclass(frozen=True, slots=True)
class Cell:
    """One point of a case's input matrix; the factory builds the model and inputs for it."""

    case: str
    bucket: str  # the shape bucket's name
    shape: Any  # the shape bucket's value, whatever the factory understands
    dtype: str = "float32"
    layout: str = "contiguous"
    train: bool = False
    grad: bool = False  # grad mode for eval cells (train cells always run with grad)
    autocast: str | None = None  # an autocast dtype name, or None
    device: str = "cpu"
    state: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""

    @property
    def torch_dtype(self) -> Any:
        import torch

        return getattr(torch, self.dtype)

    @property
    def group(self) -> str:
        """Cells of one group share a model (and a worker process)."""
        return group_key(self)

    def axes(self) -> dict[str, Any]:
        return {
            "bucket": self.bucket,
            "dtype": self.dtype,
            "layout": self.layout,
            "train": self.train,
            "grad": self.grad or self.train,
            "autocast": self.autocast,
            "device": self.device,
            "state": dict(self.state),
        }


@dataclass(slots=True)
class Built:
    """What a case's factory returns for one cell.

    ``model`` is an ``nn.Module`` or a function; it is called as ``model(*inputs, **kwargs)``.
    Training cells need ``loss`` (output -> scalar tensor); ``optimizer`` takes the parameters
    and returns a ``torch.optim.Optimizer`` (default: SGD, lr=0.01)."""

    model: Callable[..., Any]
    inputs: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    loss: Callable[[Any], Any] | None = None
    optimizer: Callable[[Any], Any] | None = None


@dataclass(frozen=True, slots=True)
class Matrix:
    """The axes of a case's input matrix. Every combination is a cell (train cells ignore
    ``grad``: training needs it)."""

    shapes: Mapping[str, Any]
    dtypes: Sequence[str] = ("float32",)
    layouts: Sequence[str] = ("contiguous",)
    train: Sequence[bool] = (False,)
    grad: Sequence[bool] = (False,)
    autocast: Sequence[str | None] = (None,)
    devices: Sequence[str] = ("cpu",)
    state: Mapping[str, Sequence[Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Case:
    """A named model under test: its factory, its matrix and how to judge it.

    ``steps``: optimizer steps compared in training cells. ``tolerance``: overrides the
    dtype-dependent default. ``cosine``: also require cosine similarity >= 0.99 (for outputs
    whose scale makes element-wise tolerances meaningless). ``traffic``: relative weights of
    the shape buckets in steady-state traffic (default: equal). ``regional``: also measure
    compiling each repeated block instead of the whole model (None: when one is found)."""

    name: str
    build: Callable[[Cell], Built]
    matrix: Matrix
    steps: int = 2
    tolerance: float | None = None
    cosine: bool = False
    traffic: Mapping[str, float] | None = None
    regional: bool | None = None
    seed: int = 0


def group_key(cell: Cell) -> str:
    state = ",".join(f"{key}={value}" for key, value in sorted(cell.state.items()))
    parts = [cell.case, cell.dtype, "train" if cell.train else "eval", cell.device]
    return "/".join(parts + ([state] if state else []))


def _validate(case: Case) -> None:
    matrix = case.matrix
    problems = []
    if not case.name or "/" in case.name:
        problems.append(f"case name {case.name!r} must be non-empty and without '/'")
    if not matrix.shapes:
        problems.append("matrix.shapes needs at least one bucket")
    problems += [
        f"unknown dtype {d!r} (one of {', '.join(DTYPES)})"
        for d in matrix.dtypes
        if d not in DTYPES
    ]
    problems += [
        f"unknown layout {x!r} (one of {', '.join(LAYOUTS)})"
        for x in matrix.layouts
        if x not in LAYOUTS
    ]
    if case.steps < 1:
        problems.append("steps must be >= 1")
    for weight_bucket in case.traffic or {}:
        if weight_bucket not in matrix.shapes:
            problems.append(f"traffic names unknown shape bucket {weight_bucket!r}")
    if problems:
        raise ValueError(f"case {case.name!r}: " + "; ".join(problems))


def _value_label(value: Any) -> str:
    return str(value).replace("/", "_")


def cells(case: Case) -> list[Cell]:
    """Every cell of ``case``'s matrix, in a stable order, each with its id
    (``case/bucket/dtype/...``: the axes that vary, so ids stay short)."""
    _validate(case)
    m = case.matrix
    state_names = sorted(m.state)
    product = itertools.product(
        m.shapes.items(),
        m.dtypes,
        m.layouts,
        m.train,
        m.grad,
        m.autocast,
        m.devices,
        itertools.product(*(m.state[name] for name in state_names)),
    )
    found: dict[str, Cell] = {}
    varying = {
        "dtype": len(m.dtypes) > 1,
        "layout": len(m.layouts) > 1,
        "train": len(m.train) > 1,
        "grad": len(m.grad) > 1,
        "autocast": len(m.autocast) > 1,
        "device": len(m.devices) > 1,
    }
    for (bucket, shape), dtype, layout, train, grad, autocast, device, values in product:
        state = dict(zip(state_names, values, strict=True))
        grad = bool(grad) or bool(train)
        parts = [case.name, bucket]
        parts += [dtype] if varying["dtype"] else []
        parts += [layout] if varying["layout"] else []
        parts += ["train" if train else "eval"] if varying["train"] else []
        parts += ["grad" if grad else "no_grad"] if varying["grad"] else []
        parts += [f"autocast={autocast}"] if varying["autocast"] else []
        parts += [device] if varying["device"] else []
        parts += [f"{k}={_value_label(v)}" for k, v in state.items() if len(m.state[k]) > 1]
        cell_id = "/".join(parts)
        found.setdefault(
            cell_id,
            Cell(
                case.name,
                bucket,
                shape,
                dtype,
                layout,
                bool(train),
                grad,
                autocast,
                device,
                state,
                cell_id,
            ),
        )
    return list(found.values())


def matches(cell_id: str, patterns: Sequence[str]) -> bool:
    """``--cells`` filter: a glob over the id (``block/*/bfloat16``), or '/'-separated parts
    that must all be parts of the id (``bfloat16/train``)."""
    parts = set(cell_id.split("/"))
    for pattern in patterns:
        if any(char in pattern for char in "*?["):
            if fnmatch.fnmatchcase(cell_id, pattern):
                return True
        elif set(pattern.split("/")) <= parts:
            return True
    return False
