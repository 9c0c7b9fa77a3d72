"""Why the speedup is what it is (``check --profile``): a few steady-state calls profiled in
eager and compiled, split side by side into the same categories, and the bound they imply.

- library kernels (mm, addmm, bmm, convolution, SDPA, ...): eager calls them, and Inductor
  calls the same ones, so compiling leaves them as they are;
- the rest of the ops: eager's ATen ops (pointwise, reductions, views) against the compiled
  graph's generated (fused) kernels and fallback ops;
- overhead: the call's time outside any op (Python, dispatch, guards, wrappers).

Compiling can only shrink what is not library time: if the rest took no time at all, the
compiled call would take its library time, so the speedup is at most eager's time over the
compiled library time (Amdahl's law).
"""

from __future__ import annotations

from dataclasses import dataclass

from pt2doctor.analysis.time.profile import ProfileView, event_order, per_call_ms, trace_window
from pt2doctor.trace.built import kernel_kind
from pt2doctor.trace.chrome import ChromeTrace


@dataclass(slots=True)
class StepSplit:
    """One call's time, milliseconds."""

    total_ms: float
    library_ms: float
    ops_ms: float
    """Eager: its ATen ops other than library ones. Compiled: generated kernels and
    fallback ops."""
    overhead_ms: float


def _library(name: str) -> bool:
    return name.startswith("aten::") and (
        kernel_kind(f"torch.ops.aten.{name[6:]}.default") == "library"
    )


def eager_split(trace: ChromeTrace, calls: int) -> StepSplit:
    """An eager call: library ops (outside another library op), the other ATen ops (the
    top-level ones, less the library time inside them), the rest."""
    start, end = trace_window(trace)
    library = ops = 0.0
    order = event_order(trace, start, end)
    stack: list[tuple[float, bool, bool]] = []  # (end, is an ATen op, is a library op)
    thread = -1
    for i in order:
        ts, dur = trace.ts[i], min(trace.dur[i], end - trace.ts[i])
        if trace.thread[i] != thread:
            stack, thread = [], trace.thread[i]
        while stack and stack[-1][0] <= ts:
            stack.pop()
        name = trace.names[trace.name[i]]
        aten = name.startswith("aten::")
        is_library = aten and _library(name)
        if aten and not any(entry[1] for entry in stack):
            ops += dur
        if is_library and not any(entry[2] for entry in stack):
            library += dur
        stack.append((ts + dur, aten, is_library))
    total = per_call_ms(max(end - start, 0.0), calls)
    return StepSplit(
        total,
        per_call_ms(library, calls),
        per_call_ms(ops - library, calls),
        total - per_call_ms(ops, calls),
    )


def compiled_split(view: ProfileView) -> StepSplit:
    """A compiled call: library, generated and fallback kernels of every region, the rest."""
    per = view.per_call
    total = per(view.wall_us)
    library = per(sum(r.library_us for r in view.regions))
    ops = per(sum(r.kernels_us + r.fallback_us for r in view.regions))
    return StepSplit(total, library, ops, total - library - ops)


@dataclass(slots=True)
class SpeedupBound:
    eager: StepSplit
    compiled: StepSplit
    speedup: float
    """The measured speedup (the check's steady state), else the profiled one."""
    bound: float | None
    """The most compiling can give with library kernels as fast as now (None: no library
    time in the compiled call)."""
    statement: str


def speedup_bound(eager: StepSplit, compiled: StepSplit, measured: float | None) -> SpeedupBound:
    profiled = eager.total_ms / compiled.total_ms if compiled.total_ms > 0 else 0.0
    speedup = measured if measured else profiled
    said = f"speedup {speedup:.2f}x"
    if measured and profiled and abs(measured - profiled) > 0.1 * profiled:
        said = f"speedup {measured:.2f}x measured, {profiled:.2f}x in the profiled calls"
    bound = eager.total_ms / compiled.library_ms if compiled.library_ms > 0 else None
    share = eager.library_ms / eager.total_ms if eager.total_ms > 0 else 0.0
    rest_eager = eager.total_ms - eager.library_ms
    rest_compiled = compiled.total_ms - compiled.library_ms
    if bound is None:
        statement = (
            f"no library kernels in the compiled call: everything went {eager.total_ms:.3f} → "
            f"{compiled.total_ms:.3f} ms; {said}"
        )
    else:
        statement = (
            f"library kernels (matmuls, convolutions, attention) are {share:.0%} of eager "
            f"({eager.library_ms:.3f} ms; compiled {compiled.library_ms:.3f} ms); the rest went "
            f"{rest_eager:.3f} → {rest_compiled:.3f} ms; {said}; at most {bound:.2f}x without "
            "faster library kernels"
        )
    return SpeedupBound(eager, compiled, speedup, bound, statement)
