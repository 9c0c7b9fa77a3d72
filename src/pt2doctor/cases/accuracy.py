"""Eager vs compiled, tensor by tensor, the way PyTorch's own benchmark harness judges it.

``benchmarks/dynamo/common.py`` (``check_accuracy``) and ``torch._dynamo.utils.same``: compare
with ``allclose(atol=rtol=tol)``; when that fails and an fp64 reference exists, accept the
compiled result if its RMSE against fp64 is at most ``multiplier`` times eager's own RMSE
against fp64 plus ``tol / 10`` (multiplier 2, or 3 for fp16/bf16 and for tensors under 1000
elements where noise dominates). Optionally cosine similarity >= 0.99 instead. Integer and bool
tensors must be equal.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# Default tolerances by dtype (the harness's: 1e-4 for fp32 inference, looser for half
# precision); training, which compares gradients and parameters after optimizer steps, and
# autocast multiply them by TRAINING_FACTOR.
TOLERANCE = {"float64": 1e-7, "float32": 1e-4, "float16": 1e-3, "bfloat16": 1e-2}
TRAINING_FACTOR = 10.0
COSINE_THRESHOLD = 0.99


def default_tolerance(dtype: str, train: bool, autocast: str | None) -> float:
    tol = TOLERANCE.get(dtype, 1e-4)
    if autocast is not None:
        tol = max(tol, TOLERANCE.get(autocast, tol))
    return tol * TRAINING_FACTOR if train else tol


@dataclass(frozen=True, slots=True)
class TensorComparison:
    """One tensor's verdict; errors are compiled vs eager, ``rmse_ratio`` is compiled's RMSE
    against fp64 over eager's (None without an fp64 reference)."""

    name: str
    shape: list[int]
    dtype: str
    max_abs_error: float
    max_rel_error: float
    rmse_ratio: float | None
    cosine: float | None
    passed: bool
    rule: str  # exact, allclose, rmse, cosine, or why it failed
    stride_mismatch: bool = False
    nonfinite: int = 0
    """Elements that are inf or NaN in eager's output (compiled's alike where it passed)."""
    nonfinite_fp64_finite: bool | None = None
    """Whether the fp64 reference is finite at all of them (eager overflowed in its dtype);
    None without a reference."""

    def as_dict(self) -> dict[str, Any]:
        row = dataclasses.asdict(self)
        for key in ("max_abs_error", "max_rel_error", "rmse_ratio", "cosine"):
            value = row[key]
            row[key] = None if value is None or not math.isfinite(value) else float(f"{value:.4g}")
        if not self.nonfinite:  # the usual case: absent, as before 2026-12-07
            del row["nonfinite"], row["nonfinite_fp64_finite"]
        return row


def flatten_tensors(value: Any, prefix: str = "output") -> list[tuple[str, Any]]:
    """Named tensors in a nested output (tensors, lists, tuples, dicts, dataclasses, floats)."""
    import torch

    if isinstance(value, torch.Tensor):
        return [(prefix, value.detach())]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [(prefix, torch.tensor(value))]
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)):
        items = list(enumerate(value))
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    else:
        return []
    found = []
    for key, item in items:
        found += flatten_tensors(item, f"{prefix}.{key}")
    return found


CHUNK = 1 << 20
"""Elements compared at a time: a large output is compared in slices, so the float64
temporaries of a comparison stay a few MB whatever the tensor's size (a tensor up to this
size is compared in one piece, as before)."""


def _slices(*tensors: Any) -> Iterator[tuple[Any, ...]]:
    """The tensors flattened and cut into ``CHUNK``-element slices, side by side."""
    return zip(*(t.reshape(-1).split(CHUNK) for t in tensors), strict=True)


def _rmse(reference: Any, result: Any) -> float:
    import torch

    if reference.numel() <= CHUNK:
        diff = reference.double() - result.double()
        return float(torch.sqrt(torch.mean(diff * diff)).item()) if diff.numel() else 0.0
    total = 0.0
    for ours, theirs in _slices(reference, result):
        diff = ours.double() - theirs.double()
        total += float((diff * diff).sum().item())
    return math.sqrt(total / reference.numel())


def _multiplier(result: Any, fp64: Any, tol: float) -> float:
    import torch

    if result.dtype in (torch.float16, torch.bfloat16) or fp64.numel() < 1000 or tol >= 2e-2:
        return 3.0
    return 2.0


def _errors(eager: Any, compiled: Any, tol: float) -> tuple[float, float]:
    """The largest absolute and relative differences (a NaN counts as infinite), slice by
    slice (``CHUNK``): a maximum does not depend on the order it is taken in."""
    worst_abs = worst_rel = 0.0
    if eager.numel() == 0:
        return worst_abs, worst_rel
    for ours, theirs in _slices(eager, compiled):
        diff = (ours.double() - theirs.double()).abs().nan_to_num(nan=math.inf)
        # The same inf (or NaN) in both is no difference: compiled computed what eager did.
        diff[(ours == theirs) | (ours.isnan() & theirs.isnan())] = 0.0
        scale = ours.double().abs()
        significant = scale > tol  # relative error is meaningless next to zero
        if significant.any():
            worst_rel = max(worst_rel, float((diff[significant] / scale[significant]).max()))
        worst_abs = max(worst_abs, float(diff.max().item()))
    return worst_abs, worst_rel


def compare_tensor(
    name: str, eager: Any, compiled: Any, fp64: Any | None, tol: float, cosine: bool
) -> TensorComparison:
    """Judge one compiled tensor against eager (and the fp64 reference when there is one)."""
    import torch

    shape, dtype = list(eager.shape), str(eager.dtype).removeprefix("torch.")

    nonfinite, fp64_finite = 0, None

    def verdict(
        passed: bool,
        rule: str,
        errors: tuple[float, float] = (0.0, 0.0),
        ratio: float | None = None,
        score: float | None = None,
    ) -> TensorComparison:
        return TensorComparison(
            name,
            shape,
            dtype,
            errors[0],
            errors[1],
            ratio,
            score,
            passed,
            rule,
            list(eager.stride()) != list(compiled.stride()),
            nonfinite,
            fp64_finite,
        )

    if eager.shape != compiled.shape or eager.dtype != compiled.dtype:
        why = f"shape/dtype mismatch: {shape} {dtype} vs {list(compiled.shape)} {compiled.dtype}"
        return verdict(False, why, (math.inf, math.inf))
    eager, compiled = eager.cpu(), compiled.cpu()
    if not eager.is_floating_point():
        return verdict(bool(torch.equal(eager, compiled)), "exact")
    errors = _errors(eager, compiled, tol)
    ratio = None
    bad = ~torch.isfinite(eager)
    nonfinite = int(bad.sum())
    if fp64 is not None and fp64.shape == eager.shape:
        fp64 = fp64.cpu()
        if nonfinite:
            fp64_finite = bool(torch.isfinite(fp64[bad]).all())
        eager_error = _rmse(fp64, eager)
        ratio = _rmse(fp64, compiled) / eager_error if eager_error > 0 else None
    score = None
    if cosine:
        score = float(
            torch.nn.functional.cosine_similarity(
                eager.flatten().double(), compiled.flatten().double(), dim=0, eps=1e-6
            ).item()
        )
    if torch.allclose(eager, compiled, atol=tol, rtol=tol, equal_nan=True):
        return verdict(True, "allclose", errors, ratio, score)
    if cosine:
        return verdict(
            score is not None and score >= COSINE_THRESHOLD, "cosine", errors, ratio, score
        )
    if fp64 is None or fp64.shape != eager.shape:
        return verdict(False, "allclose failed, no fp64 reference", errors, ratio, score)
    passed = (
        _rmse(fp64, compiled) <= _multiplier(compiled, fp64, tol) * _rmse(fp64, eager) + tol / 10
    )
    return verdict(passed, "rmse" if passed else "allclose and rmse failed", errors, ratio, score)


def same_run(first: dict[str, Any], second: dict[str, Any], tol: float) -> list[str]:
    """Names of tensors where two eager runs of the same cell disagree beyond ``tol``
    (nondeterminism in eager makes a comparison with compiled meaningless)."""
    import torch

    differ = []
    for name, tensor in first.items():
        other = second.get(name)
        if other is None or other.shape != tensor.shape:
            differ.append(name)
        elif tensor.is_floating_point():
            if not torch.allclose(tensor, other, atol=tol, rtol=tol, equal_nan=True):
                differ.append(name)
        elif not torch.equal(tensor, other):
            differ.append(name)
    return differ
