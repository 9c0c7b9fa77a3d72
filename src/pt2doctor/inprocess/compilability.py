"""``pt2doctor.should_compile(fn, samples)``: is ``fn`` a good torch.compile candidate?"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pt2doctor import torchcompat
from pt2doctor.analysis.op_sequences import Compilability, compare_op_sequences
from pt2doctor.errors import UsageError


def should_compile(fn: Callable[..., Any], samples: Sequence[Any]) -> Compilability:
    """Run ``fn`` eagerly on each sample (a tuple of positional args, or one argument) under an
    aten-op recorder and compare the op sequences (needs at least two samples)."""
    from pt2doctor.inprocess.arguments import compiled_argument, samples_argument

    compiled_argument("should_compile", "fn", fn)
    samples_argument("should_compile", samples)
    if len(samples) < 2:
        raise UsageError("should_compile needs at least two representative inputs")
    sequences = [
        torchcompat.record_aten_ops(fn, sample if isinstance(sample, tuple) else (sample,), {})
        for sample in samples
    ]
    return compare_op_sequences(sequences)
