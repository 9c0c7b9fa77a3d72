"""``pt2doctor.opcheck(op, samples)`` (module ``inprocess.custom_ops``): is a custom op ready for torch.compile?

For each sample, and for variants of it (other float dtypes, non-contiguous tensor arguments,
the GPU when one is available):
``torch.library.opcheck`` (schema, autograd registration, fake kernel, AOT dispatch), eager vs
compiled numeric alignment, and ``torch.autograd.gradcheck`` when the op has a backward. Every
check is reported pass/fail with its message; nothing raises on a failing op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pt2doctor.errors import UsageError

FLOAT_DTYPES = ("float32", "float64")


@dataclass(slots=True)
class Check:
    name: str
    sample: str
    passed: bool | None
    """None: not applicable (e.g. gradcheck for an op without a backward)."""
    message: str = ""


@dataclass(slots=True)
class OpcheckResult:
    op: str
    checks: list[Check] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(check.passed is not False for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if check.passed is False]


def _variants(sample: tuple[Any, ...]) -> list[tuple[str, tuple[Any, ...]]]:
    """The sample itself, each other float dtype, and a non-contiguous copy of its tensors."""
    import torch

    tensors = [i for i, arg in enumerate(sample) if isinstance(arg, torch.Tensor)]
    variants = [("as given", sample)]
    for name in FLOAT_DTYPES:
        dtype = getattr(torch, name)
        if any(sample[i].is_floating_point() and sample[i].dtype != dtype for i in tensors):
            variants.append(
                (
                    name,
                    tuple(
                        arg.to(dtype) if i in tensors and arg.is_floating_point() else arg
                        for i, arg in enumerate(sample)
                    ),
                )
            )
    if any(sample[i].dim() >= 1 and sample[i].numel() > 1 for i in tensors):

        def strided(arg: Any) -> Any:
            # Same values, every other element of a tensor twice as long: not contiguous.
            wide = torch.stack([arg, torch.zeros_like(arg)], dim=-1)
            return wide[..., 0]

        variants.append(
            (
                "non-contiguous",
                tuple(
                    strided(arg) if i in tensors and arg.dim() >= 1 else arg
                    for i, arg in enumerate(sample)
                ),
            )
        )
    if torch.cuda.is_available() and all(sample[i].device.type == "cpu" for i in tensors):
        # Each supported device: the same sample on the GPU (not applicable on CPU-only hosts).
        variants.append(
            ("cuda", tuple(arg.cuda() if i in tensors else arg for i, arg in enumerate(sample)))
        )
    return variants


def _opcheck(
    op: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None = None
) -> list[tuple[str, bool, str]]:
    import torch

    try:
        results = torch.library.opcheck(op, args, kwargs, raise_exception=False)
    except Exception as error:  # opcheck itself could not run the op
        return [("opcheck", False, f"{type(error).__name__}: {error}")]
    return [
        (test, outcome == "SUCCESS", "" if outcome == "SUCCESS" else str(outcome)[:500])
        for test, outcome in results.items()
    ]


def _alignment(
    op: Callable[..., Any],
    args: tuple[Any, ...],
    backend: str,
    kwargs: dict[str, Any] | None = None,
) -> tuple[bool, str]:
    import torch

    kwargs = kwargs or {}
    try:
        expected = op(*_copies(args), **_copies(kwargs))

        def call(*inputs: Any) -> Any:
            return op(*inputs, **_copies(kwargs))

        # A fresh code object per check: Dynamo caches by code object, and one shared caller
        # would hit the recompile limit after a few ops and variants.
        call.__code__ = call.__code__.replace()
        compiled = torch.compile(call, backend=backend, fullgraph=True)
        actual = compiled(*_copies(args))
        torch.testing.assert_close(actual, expected)
    except Exception as error:
        return False, f"{type(error).__name__}: {str(error)[:500]}"
    return True, ""


def _copies(value: Any) -> Any:
    """Fresh copies of the tensors in ``value``: an op that mutates its inputs must see the
    same values in the eager and the compiled call."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_copies(item) for item in value)
    if isinstance(value, dict):
        return {key: _copies(item) for key, item in value.items()}
    return value


def describe_inputs(args: Any, kwargs: dict[str, Any]) -> list[str]:
    """``Tensor[10, 24] float32`` per tensor argument, ``repr`` (cut) for the others."""
    import torch

    def one(value: Any) -> str:
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).removeprefix("torch.")
            return f"Tensor{list(value.shape)} {dtype}"
        return repr(value)[:40]

    return [one(a) for a in args] + [f"{k}={one(v)}" for k, v in kwargs.items()]


def check_recorded_call(
    name: str, op: Any, args: tuple[Any, ...], kwargs: dict[str, Any], backend: str
) -> dict[str, Any]:
    """opcheck and eager-vs-compiled alignment of ``op`` alone on the inputs it received in
    the model's eager run: ``{op, inputs, checks: [{name, passed, message}], passed}``."""
    checks = [
        {"name": test, "passed": passed, "message": message}
        for test, passed, message in _opcheck(op, _copies(args), _copies(kwargs))
    ]
    passed, message = _alignment(op, args, backend, kwargs)
    checks.append({"name": "eager_vs_compiled", "passed": passed, "message": message})
    from pt2doctor import torchcompat

    return {
        "op": name,
        "inputs": describe_inputs(args, kwargs),
        "arguments": torchcompat.op_argument_names(op),
        "backend": backend,
        "checks": checks,
        "passed": all(check["passed"] for check in checks),
    }


def _gradcheck(op: Callable[..., Any], args: tuple[Any, ...]) -> tuple[bool | None, str]:
    import torch

    inputs = tuple(
        arg.detach().to(torch.float64).requires_grad_(True)
        if isinstance(arg, torch.Tensor) and arg.is_floating_point()
        else arg
        for arg in args
    )
    if not any(isinstance(arg, torch.Tensor) and arg.requires_grad for arg in inputs):
        return None, "no floating-point tensor input"
    try:
        out = op(*inputs)
        if not (isinstance(out, torch.Tensor) and out.requires_grad):
            return None, "the op has no backward (output does not require grad)"
        torch.autograd.gradcheck(op, inputs)
    except Exception as error:
        message = str(error)
        no_backward = ("does not require grad", "no autograd formula", "not implemented")
        if any(text in message.lower() for text in no_backward):
            return None, f"no backward: {message[:300]}"
        return False, f"{type(error).__name__}: {message[:500]}"
    return True, ""


def opcheck(op: Any, samples: Sequence[Any], *, backend: str = "aot_eager") -> OpcheckResult:
    """Check a registered custom op (``torch.ops.ns.name`` or a ``custom_op`` function) on
    ``samples`` (each a tuple of positional args, or one argument) and derived variants."""
    if not samples:
        raise UsageError("opcheck needs at least one sample input")
    result = OpcheckResult(op=str(getattr(op, "_qualname", None) or op))
    for index, sample in enumerate(samples):
        args = sample if isinstance(sample, tuple) else (sample,)
        for variant, variant_args in _variants(args):
            label = f"sample {index} ({variant})"
            for name, passed, message in _opcheck(op, variant_args):
                result.checks.append(Check(name, label, passed, message))
            passed, message = _alignment(op, variant_args, backend)
            result.checks.append(Check("eager_vs_compiled", label, passed, message))
        grad_passed, grad_message = _gradcheck(op, args)
        result.checks.append(Check("gradcheck", f"sample {index}", grad_passed, grad_message))
    return result
